"""The Content-Security-Policy header (Django 5.2 has no built-in one).

The policy allows only the app's own files: no inline <script>, no inline event handlers
(`onclick=`), no `javascript:` URLs, no eval, no style attributes, no plugins, no framing. htmx
is configured for it in templates/_htmx_head.html (no eval, no swapped-in scripts, no injected
indicator <style>). Django's admin works under it unchanged: its scripts are files too.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse


def policy_header(directives: dict[str, list[str]]) -> str:
    return "; ".join(f"{name} {' '.join(values)}".strip() for name, values in directives.items())


class ContentSecurityPolicyMiddleware:
    """Adds `Content-Security-Policy` (or `...-Report-Only`) to every response that has none."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        self.header_name = (
            "Content-Security-Policy-Report-Only" if settings.CONTENT_SECURITY_POLICY_REPORT_ONLY else "Content-Security-Policy"
        )
        self.header_value = policy_header(settings.CONTENT_SECURITY_POLICY)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if self.is_async:
            return self.__acall__(request)
        return self._add_header(self.get_response(request))

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        return self._add_header(await self.get_response(request))

    def _add_header(self, response: HttpResponse) -> HttpResponse:
        if self.header_value and self.header_name not in response:
            response[self.header_name] = self.header_value
        return response
