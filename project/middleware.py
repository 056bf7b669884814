"""A database out of reach is a moment, not a server error: a clear 503 the person can retry."""

from __future__ import annotations

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.deprecation import MiddlewareMixin

from project.errors import unavailable_error


class DatabaseUnavailableMiddleware(MiddlewareMixin):
    """Answers 503 (with Retry-After) when a request could not get a database connection in
    time — a burst that found every pooled connection busy, or Postgres restarting — instead of
    Django's 500. Nothing was written: the same request succeeds once the database is back.

    Placed after the authentication middleware: it reads the session and the user first (the
    first database work of almost every request, which would otherwise fail inside another
    middleware, where no hook sees the error), then catches what the view raises. Sync and async
    (MiddlewareMixin): a sync-only middleware would run the async views through async_to_sync,
    and work they start in the background would outlive the request's thread."""

    def process_view(self, request: HttpRequest, view_func: object, view_args: object, view_kwargs: object) -> HttpResponse | None:
        try:
            request.user.is_authenticated  # noqa: B018  (loads the session and the user)
        except DatabaseError as exc:
            return self.process_exception(request, exc)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        error = unavailable_error(exception)
        if error is None:
            return None  # any other failure is Django's to report
        headers = {"Retry-After": str(error.retry_after_seconds)}
        if request.headers.get("HX-Request"):
            # htmx shows the message where the request came from (static/js/clarion.js).
            return HttpResponse(error.message, status=error.status, content_type="text/plain; charset=utf-8", headers=headers)
        # Rendered without the request: the database cannot be asked who is logged in.
        return HttpResponse(render_to_string("503.html", {"message": error.message}), status=error.status, headers=headers)
