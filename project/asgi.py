from __future__ import annotations

import gc
import itertools
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import ParamSpec, TypeVar

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_http = get_asgi_application()

from asgiref.sync import ThreadSensitiveContext  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.exceptions import SuspiciousFileOperation  # noqa: E402
from django.http import FileResponse, Http404, HttpRequest, HttpResponse  # noqa: E402

from chat.deadlines import ensure_sweeper  # noqa: E402
from chat.routing import websocket_urlpatterns  # noqa: E402
from project.security import ASGIApp, OwnOriginValidator, Receive, Scope, Send  # noqa: E402


class StartsBackgroundWork:
    """Daphne has no startup hook: the first request of any kind starts this process's deadline
    sweep, so questions whose process died expire even if no tab ever opens a websocket here."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ensure_sweeper()
        return await self.app(scope, receive, send)


P = ParamSpec("P")
T = TypeVar("T")


class RequestThread(Executor):
    """One thread that runs a request's sync work, one call at a time, as asgiref's
    `ThreadSensitiveContext` expects. A daemon thread, unlike a ThreadPoolExecutor's: when Daphne
    stops while a request is in flight (Ctrl+C during a login), that request's thread can be left
    waiting for the event loop that stopped, and a process waits for such a thread at exit
    forever, deaf to a second Ctrl+C. What such a request was doing is abandoned either way: its
    response can no longer be sent, and its open transaction rolls back with its connection."""

    _numbers = itertools.count()

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"request-{next(self._numbers)}", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def call() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # the caller's to see, as with any executor
                future.set_exception(exc)

        self._work.put(call)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._work.put(None)  # the thread ends after the calls already submitted
        if wait:
            self._thread.join()

    def _run(self) -> None:
        while (call := self._work.get()) is not None:
            call()


class RequestThreads:
    """Django runs each request's sync work (its middleware chain, sync views, closing the
    response) on a thread started for that request and stopped after it. Here a request borrows
    an idle one-thread executor instead (a new one when none is idle) through asgiref's
    `ThreadSensitiveContext`, and gives it back when it is done: the same one thread per request
    that Django's handler expects, without starting and stopping one each time (`RequestThread`:
    one that never keeps the process from exiting). At most
    `keep_idle` wait between requests; the rest are shut down. Work a request starts in the
    background runs on the background's threads (`chat.background`), never on these."""

    def __init__(self, app: ASGIApp, *, keep_idle: int) -> None:
        self.app = app
        self.keep_idle = keep_idle
        self._idle: list[RequestThread] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        executor = self._idle.pop() if self._idle else RequestThread()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.app(scope, receive, send)
        finally:
            if len(self._idle) < self.keep_idle:
                self._idle.append(executor)
            else:
                executor.shutdown(wait=False)


class StaticFiles(ASGIStaticFilesHandler):
    """Daphne serves the vendored static files itself: a one-command install needs no proxy. A
    path that climbs out of the static folders (`/static/../manage.py`) is simply not a static
    file: a 404, not a 500 with a traceback."""

    def serve(self, request: HttpRequest) -> HttpResponse | FileResponse:
        try:
            return super().serve(request)
        except SuspiciousFileOperation as exc:
            raise Http404("No such static file.") from exc


application = ProtocolTypeRouter(
    {
        # As many idle request threads as the pool has connections: more requests than that
        # at once wait for a connection anyway.
        "http": StartsBackgroundWork(RequestThreads(StaticFiles(django_http), keep_idle=settings.DATABASE_POOL_MAX_SIZE)),
        "websocket": StartsBackgroundWork(OwnOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
    }
)

# Everything imported so far lives as long as the process. Freezing it keeps the garbage
# collector's full passes off that heap: they were the p99 of the query tools.
gc.collect()
gc.freeze()
# What a request or a turn allocates is almost all freed by reference counting as it ends; at
# Python's default of a young collection every 700 allocations, the collector ran hundreds of
# times a minute under load, and its full passes (over a heap of open sockets and pending
# turns) came every ten seconds or so and were the slowest replies. Young collections come after
# 10 000 allocations instead, and full ones correspondingly more rarely.
gc.set_threshold(10_000, 20, 20)
