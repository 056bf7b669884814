"""The Content-Security-Policy header (Django 5.2 has no built-in one), and the websocket origin check.

The policy allows only the app's own files: no inline <script>, no inline event handlers
(`onclick=`), no `javascript:` URLs, no eval, no style attributes, no plugins, no framing. htmx
is configured for it in templates/_htmx_head.html (no eval, no swapped-in scripts, no injected
indicator <style>). Django's admin works under it unchanged: its scripts are files too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.http.request import split_domain_port, validate_host
from django.utils.deprecation import MiddlewareMixin
from django.utils.http import is_same_domain

# An ASGI application's arguments, typed as django-stubs types those of Django's ASGI handler.
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def policy_header(directives: dict[str, list[str]]) -> str:
    return "; ".join(f"{name} {' '.join(values)}".strip() for name, values in directives.items())


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds `Content-Security-Policy` (or `...-Report-Only`) to every response that has none."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        super().__init__(get_response)
        self.header_name = (
            "Content-Security-Policy-Report-Only" if settings.CONTENT_SECURITY_POLICY_REPORT_ONLY else "Content-Security-Policy"
        )
        self.header_value = policy_header(settings.CONTENT_SECURITY_POLICY)

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if self.header_value and self.header_name not in response:
            response[self.header_name] = self.header_value
        return response


def request_origin_of(scope: Scope) -> str | None:
    """The origin a websocket handshake was addressed to (`http://host:port` or `https://...`),
    computed as Django computes a request's for its CSRF check: the Host header, and the scheme
    of the connection (ws → http, wss → https) or of SECURE_PROXY_SSL_HEADER when configured.
    None when the Host header is missing or not in ALLOWED_HOSTS."""
    headers = {name.decode("latin1").lower(): value.decode("latin1") for name, value in scope.get("headers", [])}
    host = headers.get("host", "")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # what Django's get_host() allows then
    if not domain or not validate_host(domain, allowed):
        return None
    secure = scope.get("scheme", "ws") in ("wss", "https")
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        header, secure_value = proxy_header
        # "HTTP_X_FORWARDED_PROTO" is how Django names the "x-forwarded-proto" header.
        forwarded = headers.get(header.removeprefix("HTTP_").replace("_", "-").lower())
        if forwarded is not None:
            secure = forwarded.split(",", 1)[0].strip() == secure_value
    return f"{'https' if secure else 'http'}://{host}"


def origin_is_trusted(origin: str, scope: Scope) -> bool:
    """Django's CSRF rule for an Origin header: Clarion's own origin (scheme, host and port), or
    one of CSRF_TRUSTED_ORIGINS (exactly, or `https://*.example.org` for its subdomains)."""
    if origin and origin == request_origin_of(scope):
        return True
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    try:
        parsed = urlsplit(origin)
        wildcards = [urlsplit(trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS if "*" in trusted]
    except ValueError:  # not a URL at all
        return False
    return any(parsed.scheme == trusted.scheme and is_same_domain(parsed.netloc, trusted.netloc.partition("*")[2]) for trusted in wildcards)


class OwnOriginValidator:
    """Accepts a websocket handshake only from Clarion's own pages: a page served on another port
    or scheme of the same host is another origin and must not open a user's socket with their
    cookie. Anything else is refused before the handshake completes (HTTP 403)."""

    def __init__(self, application: ASGIApp) -> None:
        self.application = application

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origins = [value.decode("latin1") for name, value in scope.get("headers", []) if name.lower() == b"origin"]
        if len(origins) == 1 and origin_is_trusted(origins[0], scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
