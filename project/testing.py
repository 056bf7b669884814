"""Test-settings-only helpers for the test servers (never in production URLs or middleware).

The e2e tests drive Daphne subprocesses on the test database, and empty that database after
every test. Work a test started — an answer being processed, the turn it starts, a guess —
must be finished first, or the TRUNCATE deadlocks with it. `GET /__test__/idle/` answers once
the server has no request in flight and no background task left.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from chat import background

IDLE_PATH = "/__test__/idle/"
_in_flight = 0
_counting = threading.Lock()


class InFlightRequestsMiddleware:
    """Counts the HTTP requests being handled (the idle check itself excluded). Sync, as the
    whole chain is (`project.middleware.MiddlewareInOneThread`): it counts in the requests'
    threads, hence the lock."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        global _in_flight
        if request.path == IDLE_PATH:
            return self.get_response(request)
        with _counting:
            _in_flight += 1
        try:
            return self.get_response(request)
        finally:
            with _counting:
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
