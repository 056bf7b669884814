"""The colour theme a person picked (light, dark, or the system's), remembered in a cookie.

Read on the server into `<html data-theme=…>`, so the page is drawn in the right theme from its
first paint; `static/js/theme.js` writes the cookie when the choice changes.
"""

from django.http import HttpRequest

THEMES = ("system", "light", "dark")
COOKIE_NAME = "theme"


def theme(request: HttpRequest) -> dict[str, str]:
    """Template context processor: `theme`, one of THEMES (anything else counts as "system")."""
    chosen = request.COOKIES.get(COOKIE_NAME, "")
    return {"theme": chosen if chosen in THEMES else "system"}
