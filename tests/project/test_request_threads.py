"""A request's sync work runs on one thread of its own, borrowed from the idle ones
(`project.asgi.RequestThreads`) rather than started and stopped for every request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.signals import request_started

from project.asgi import application
from tests.communicators import HttpCommunicator

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def receiving(signal, receiver) -> Iterator[None]:
    signal.connect(receiver, weak=False)
    try:
        yield
    finally:
        signal.disconnect(receiver)


async def get(path: str = "/login/") -> int:
    response = await HttpCommunicator(application, "GET", path, headers=[(b"host", b"127.0.0.1")]).get_response(timeout=20)
    return response["status"]


async def test_requests_one_after_another_reuse_one_thread():
    threads: list[threading.Thread] = []
    with receiving(request_started, lambda **kwargs: threads.append(threading.current_thread())):
        for _ in range(3):
            assert await get() == 200
    assert len(threads) == 3 and threads[0] is not threading.main_thread()
    assert threads[1] is threads[0] and threads[2] is threads[0]  # not a new thread per request


async def test_requests_at_the_same_time_each_get_a_thread_of_their_own():
    """The first request's sync work waits until the second's has started: on a shared thread
    the second could not start, and the wait would run out."""
    second_started = threading.Event()
    threads: list[threading.Thread] = []

    def on_started(**kwargs) -> None:
        threads.append(threading.current_thread())
        if len(threads) == 1:
            assert second_started.wait(10), "the second request never started beside the first"
        else:
            second_started.set()

    with receiving(request_started, on_started):
        statuses = await asyncio.gather(get(), get())
    assert statuses == [200, 200]
    assert second_started.is_set() and threads[0] is not threads[1]


def test_a_request_thread_left_waiting_does_not_keep_the_process_from_exiting():
    """When Daphne stops with a request in flight (Ctrl+C during a login), that request's thread
    can be left waiting for the stopped event loop for good: the process still exits."""
    import os
    import subprocess
    import sys

    code = (
        "import threading\n"
        "from project.asgi import RequestThread\n"
        "RequestThread().submit(threading.Event().wait)  # never returns\n"
        "print('exiting', flush=True)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", "SECRET_KEY": os.environ.get("SECRET_KEY", "x")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "exiting\n", done.stderr
