"""The acting user's type, and the request type of views that require one.

Clarion uses Django's own user model (no AUTH_USER_MODEL), so `User` is
`django.contrib.auth.models.User`; every service, selector, tool and view names it through this
module, the one place to change if the model ever does. Nothing here imports an app, so every app
may import it.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest

__all__ = ["AuthenticatedHttpRequest", "User"]


class AuthenticatedHttpRequest(HttpRequest):
    """A request that passed `login_required`: its `user` is a `User`, never `AnonymousUser`.

    For annotations only — Django passes its own request object, as django-stubs documents.
    """

    user: User
