"""The theme a person picked is read from its cookie into <html data-theme>, so the first paint is
already in it (no flash of the other theme); anything unknown is the system's."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "cookie, theme, scheme",
    [(None, "system", "light dark"), ("dark", "dark", "dark"), ("light", "light", "light"), ('x"><script>', "system", "light dark")],
)
def test_the_page_is_drawn_in_the_chosen_theme(client, alice, cookie, theme, scheme):
    client.force_login(alice)
    if cookie is not None:
        client.cookies["theme"] = cookie
    for url in (reverse("chat:home"), reverse("login")):
        html = client.get(url, follow=True).content.decode()
        assert f'<html lang="en" data-theme="{theme}">' in html
        assert f'<meta name="color-scheme" content="{scheme}">' in html
        assert f'<option value="{theme}" selected>' in html
