"""Project-wide middleware: what changes every response, and a database out of reach answered as
a moment (a clear 503 the person can retry), not a server error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.loader import render_to_string
from django.utils.deprecation import MiddlewareMixin

from project.errors import unavailable_error

# A middleware's next step: a response, or (when the chain is async) an awaitable of one.
GetResponse = Callable[[HttpRequest], HttpResponseBase | Awaitable[HttpResponseBase]]


class ResponseMiddleware:
    """A middleware that only changes the response (`process_response`), in a sync or an async
    chain alike. Django's MiddlewareMixin would run `process_response` in a thread hop of its own
    under ASGI, on every request; this runs it where the response arrives."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self.__acall__(request)
        return self.process_response(request, cast(HttpResponseBase, self.get_response(request)))  # a sync chain

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        return self.process_response(request, await cast(Awaitable[HttpResponseBase], self.get_response(request)))  # an async chain

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        raise NotImplementedError


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
