import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chat import services as chat_services


@pytest.fixture
def alices_conversation(alice):
    return chat_services.start_conversation(user=alice)


def protected_urls(conversation):
    return [
        ("get", reverse("root")),
        ("get", reverse("chat:home")),
        ("get", reverse("chat:conversation", args=[conversation.pk])),
        ("post", reverse("chat:new")),
        ("get", reverse("admin:index")),
        ("get", reverse("password_change")),
        ("post", reverse("password_change")),
    ]


def test_every_page_requires_login(client, alices_conversation):
    for method, url in protected_urls(alices_conversation):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert "/login/" in response["Location"], url


def test_login_page_and_demo_login_flow(client, alice):
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert b"Log in to Clarion" in page.content
    bad = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert bad.status_code == 200 and b"correct username and password" in bad.content
    good = client.post(reverse("login"), {"username": "alice", "password": "pw-xxxxxxxx"})
    assert good.status_code == 302 and good["Location"] == reverse("chat:home")


def test_another_users_conversation_is_404(client, alices_conversation, bob):
    client.force_login(bob)
    assert client.get(reverse("chat:conversation", args=[alices_conversation.pk])).status_code == 404


def test_new_user_lands_in_a_usable_conversation(client, alice):
    client.force_login(alice)
    home = client.get(reverse("chat:home"))
    assert home.status_code == 302
    page = client.get(home["Location"])
    assert page.status_code == 200 and b"What shall we work on?" in page.content and b'id="composer-input"' in page.content
    # "New conversation" on an empty conversation reuses it rather than piling up empty entries.
    assert client.post(reverse("chat:new"))["Location"] == home["Location"]


def test_logout_is_post_only_and_ends_session(client, alice):
    client.force_login(alice)
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("chat:home")).status_code == 302


def test_a_signed_in_request_reads_the_session_from_the_cache_not_the_database(client, alice, alices_conversation):
    client.force_login(alice)
    url = reverse("chat:conversation", args=[alices_conversation.pk])
    assert client.get(url).status_code == 200  # the session is read once, then cached
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    assert not [q["sql"] for q in queries if "django_session" in q["sql"]]


def test_after_a_logout_the_old_session_cookie_opens_nothing(client, alice, alices_conversation):
    client.force_login(alice)
    url = reverse("chat:conversation", args=[alices_conversation.pk])
    assert client.get(url).status_code == 200  # cached now
    old_cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.post(reverse("logout")).status_code == 302
    replay = Client()
    replay.cookies[settings.SESSION_COOKIE_NAME] = old_cookie
    response = replay.get(url)
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_logout_leaves_the_persons_other_browsers_logged_in(alice, alices_conversation):
    here, elsewhere = Client(), Client()
    here.force_login(alice)
    elsewhere.force_login(alice)
    url = reverse("chat:conversation", args=[alices_conversation.pk])
    assert here.post(reverse("logout")).status_code == 302
    assert here.get(url).status_code == 302
    assert elsewhere.get(url).status_code == 200


OLD = "pw-xxxxxxxx"  # the fixtures' password
NEW = "a-longer-new-passphrase"


def signed_in_client(username: str, password: str) -> Client:
    client = Client()
    assert client.post(reverse("login"), {"username": username, "password": password}).status_code == 302
    return client


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({"old_password": "wrong", "new_password1": NEW, "new_password2": NEW}, "Your old password was entered incorrectly"),
        ({"old_password": OLD, "new_password1": NEW, "new_password2": NEW + "x"}, "didn’t match"),
        ({"old_password": OLD, "new_password1": "short", "new_password2": "short"}, "This password is too short"),
        ({"old_password": OLD, "new_password1": "alice", "new_password2": "alice"}, "too similar to the username"),
        ({"old_password": OLD, "new_password1": "", "new_password2": ""}, "This field is required"),
    ],
)
def test_a_rejected_password_change_says_why_and_changes_nothing(alice, form, error):
    client = signed_in_client("alice", OLD)
    response = client.post(reverse("password_change"), form)
    assert response.status_code == 200
    page = response.content.decode()
    assert error in page and 'aria-invalid="true"' in page
    alice.refresh_from_db()
    assert alice.check_password(OLD)


def test_a_password_change_keeps_this_browser_signed_in_and_signs_the_others_out(alice, alices_conversation):
    here, elsewhere = signed_in_client("alice", OLD), signed_in_client("alice", OLD)
    url = reverse("chat:conversation", args=[alices_conversation.pk])
    assert elsewhere.get(url).status_code == 200  # its session is cached now
    form = here.get(reverse("password_change"))
    assert form.status_code == 200 and b"Change your password" in form.content
    response = here.post(reverse("password_change"), {"old_password": OLD, "new_password1": NEW, "new_password2": NEW})
    assert response.status_code == 302 and response["Location"] == reverse("password_change_done")
    assert b"Password changed" in here.get(response["Location"]).content
    assert here.get(url).status_code == 200
    signed_out = elsewhere.get(url)
    assert signed_out.status_code == 302 and "/login/" in signed_out["Location"]
    assert Client().post(reverse("login"), {"username": "alice", "password": OLD}).status_code == 200  # refused
    signed_in_client("alice", NEW)
