"""Work a process runs beside its requests: turns, guesses, deadline expiries.

Tasks are kept referenced until done (the event loop holds only weak references), and tests and
shutdown can wait for all of them.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Coroutine, TypeVar

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings

T = TypeVar("T")

_tasks: set[asyncio.Task] = set()


def spawn(coro: Coroutine) -> asyncio.Task:
    """The task's database hops run on the background's threads. Otherwise they would go where the
    caller's run: a request's thread, gone with the request, or a sync view's (an admin action
    resolving a question through async_to_sync), where they fail once the view has returned."""
    task = asyncio.get_running_loop().create_task(_on_background_threads(coro))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


# The threads the background's database hops run on: half the connection pool at most, so that
# requests keep connections of their own however much runs in the background.
_hops = ThreadPoolExecutor(max_workers=max(1, settings.DATABASE_POOL_MAX_SIZE // 2), thread_name_prefix="background-db")


async def _on_background_threads(coro: Coroutine[Any, Any, T]) -> T:
    async with ThreadSensitiveContext(executor=_hops):
        return await coro


def running() -> list[asyncio.Task]:
    """The tasks not finished yet (the test servers' idle check reads them)."""
    return list(_tasks)


async def wait_for_all() -> None:
    """Until nothing is left running — including work that finishing work started."""
    while _tasks:
        await asyncio.gather(*list(_tasks), return_exceptions=True)
