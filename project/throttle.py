"""Login throttling with django-axes: repeated failures lock out the account and the client
address for a while, on the login page, the admin login and the adapter API's token check.

Axes counts failures through Django's `user_login_failed` signal and refuses a locked-out client
in its authentication backend; the functions here are the hooks its settings name (AXES_*).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

if TYPE_CHECKING:
    from axes.models import AccessBase

# What an adapter's failed token check is recorded as. No account is involved (and the token
# itself is never recorded): only the client address counts.
ADAPTER_CREDENTIALS: dict[str, str | None] = {"username": None}


def lockout_parameters(request: HttpRequest | AccessBase, credentials: Mapping[str, object] | None = None) -> list[str]:
    """Failures count per account and, separately, per client address; an adapter's token check
    has no account."""
    username = (credentials or {}).get("username")
    return ["username", "ip_address"] if username else ["ip_address"]


def client_address(request: HttpRequest) -> str:
    """The client's address: the connection's peer, or — behind TRUSTED_PROXY_COUNT proxies — the
    address the outermost of them saw, taken from the right end of X-Forwarded-For, where those
    proxies appended it (anything further left is whatever the client claimed)."""
    peer = request.META.get("REMOTE_ADDR", "")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return peer
    forwarded = [part.strip() for part in request.headers.get("X-Forwarded-For", "").split(",") if part.strip()]
    return forwarded[-hops] if len(forwarded) >= hops else peer


def retry_at(request: HttpRequest) -> datetime:
    # Every attempt while locked out counts as another failure and restarts the cool-off.
    return timezone.now() + (get_cool_off(request) or timedelta(0))


def retry_after_seconds(request: HttpRequest) -> int:
    return int((get_cool_off(request) or timedelta(0)).total_seconds())


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Mapping[str, object] | None = None
) -> HttpResponse:
    """The page a locked-out person sees instead of the login form (AXES_LOCKOUT_CALLABLE)."""
    response = render(
        request,
        "registration/locked_out.html",
        {"retry_at": timezone.localtime(retry_at(request)), "retry_minutes": max(1, -(-retry_after_seconds(request) // 60))},
        status=429,
    )
    response["Retry-After"] = str(retry_after_seconds(request))
    return response


def adapter_client_locked_out(request: HttpRequest) -> bool:
    return not AxesProxyHandler.is_allowed(request, ADAPTER_CREDENTIALS)


def record_failed_adapter_attempt(request: HttpRequest) -> None:
    """A wrong or missing adapter token counts like a wrong password, against the address."""
    user_login_failed.send(sender=__name__, credentials=ADAPTER_CREDENTIALS, request=request)
