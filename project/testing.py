"""Test-settings-only helpers for the test servers (never in production URLs or middleware).

The e2e tests drive Daphne subprocesses on the test database, and empty that database after
every test. Work a test started — an answer being processed, the turn it starts, a guess —
must be finished first, or the TRUNCATE deadlocks with it. `GET /__test__/idle/` answers once
the server has no request in flight and no background task left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from chat import background
from project.middleware import GetResponse

IDLE_PATH = "/__test__/idle/"
_in_flight = 0


class InFlightRequestsMiddleware:
    """Counts the HTTP requests being handled (the idle check itself excluded)."""

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
        global _in_flight
        if request.path == IDLE_PATH:
            return self.get_response(request)
        _in_flight += 1
        try:
            return self.get_response(request)
        finally:
            _in_flight -= 1

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        # An async chain: the next step returns an awaitable.
        get_response = cast(Callable[[HttpRequest], Awaitable[HttpResponseBase]], self.get_response)
        global _in_flight
        if request.path == IDLE_PATH:
            return await get_response(request)
        _in_flight += 1
        try:
            return await get_response(request)
        finally:
            _in_flight -= 1


@login_not_required
async def idle(request: HttpRequest) -> HttpResponse:
    """204 once nothing runs for a short quiet spell in a row; 503 (listing what runs) after
    `timeout` seconds (default 60)."""
    timeout = float(request.GET.get("timeout", 60))
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        if _in_flight or background.running():
            quiet_since = None
            if pending := background.running():
                # Until they finish, but not past the deadline.
                await asyncio.wait(pending, timeout=max(0.0, deadline - time.monotonic()))
            else:
                await asyncio.sleep(0.02)
            continue
        # Quiet now; stay quiet a moment, so work that finishing work schedules is seen too.
        quiet_since = quiet_since or time.monotonic()
        if time.monotonic() - quiet_since >= 0.1:
            return HttpResponse(status=204)
        await asyncio.sleep(0.02)
    busy = [repr(task.get_coro()) for task in background.running()]
    return JsonResponse({"in_flight_requests": _in_flight, "background_tasks": busy}, status=503)
