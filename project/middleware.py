"""Project-wide middleware: the database or Redis out of reach answered as a moment (a clear 503
the person can retry), not a server error; and the chain run in one thread hop per request."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.loader import render_to_string
from django.utils.deprecation import MiddlewareMixin

from project.errors import OUTAGE_ERRORS, unavailable_error


class UnavailableMiddleware(MiddlewareMixin):
    """Answers 503 (with Retry-After) when a request could not get a database connection in
    time — a burst that found every pooled connection busy, or Postgres restarting — or could
    not reach Redis (which holds the sessions when several workers share them), instead of
    Django's 500. The same request succeeds once the service is back.

    Placed after the authentication middleware: it reads the session and the user first (the
    first database work of almost every request, which would otherwise fail inside another
    middleware, where no hook sees the error), then catches what the view raises."""

    def process_view(self, request: HttpRequest, view_func: object, view_args: object, view_kwargs: object) -> HttpResponse | None:
        try:
            request.user.is_authenticated  # noqa: B018  (loads the session and the user)
        except OUTAGE_ERRORS as exc:
            if (response := self.process_exception(request, exc)) is None:
                raise
            return response
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        error = unavailable_error(exception)
        if error is None:
            return None  # any other failure is Django's to report
        headers = {"Retry-After": str(error.retry_after_seconds)}
        if request.headers.get("HX-Request"):
            # htmx shows the message where the request came from (static/js/clarion.js).
            return HttpResponse(error.message, status=error.status, content_type="text/plain; charset=utf-8", headers=headers)
        # Rendered without the request: neither the session nor the database can be asked who is logged in.
        return HttpResponse(render_to_string("503.html", {"message": error.message}), status=error.status, headers=headers)


class MiddlewareInOneThread:
    """The innermost middleware: passes the request on and changes nothing. It is sync only, and
    that is its job. Under ASGI, Django runs a middleware that can be sync or async (all of
    Django's own) in the mode of the handler inside it; with the async handler innermost, each
    of their `process_request`/`process_response` hooks is a thread hop of its own — a dozen per
    request. With a sync-only middleware innermost, every middleware outside it runs sync, so
    Django enters a thread once for the whole chain and leaves it once for the view (it still
    runs each `process_view` hook in a hop of its own): async views still run on the event loop,
    and work they start in the background runs on the background's threads (`chat.background`),
    never on the request's."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)
