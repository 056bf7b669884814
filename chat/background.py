"""Work a process runs beside its requests: turns, guesses, deadline expiries.

Tasks are kept referenced until done (the event loop holds only weak references), and tests and
shutdown can wait for all of them.
"""

from __future__ import annotations

import asyncio
from typing import Coroutine

from llm.logs import background_context

_tasks: set[asyncio.Task] = set()


def spawn(coro: Coroutine) -> asyncio.Task:
    """The task runs in a context of its own that keeps only the turn's log fields. A copy of the
    caller's would carry a sync view's thread executor (an admin action resolving a question
    through async_to_sync): the task's database hops would be sent to that view's thread after
    the view had returned, and fail."""
    task = asyncio.get_running_loop().create_task(coro, context=background_context())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


def running() -> list[asyncio.Task]:
    """The tasks not finished yet (the test servers' idle check reads them)."""
    return list(_tasks)


async def wait_for_all() -> None:
    """Until nothing is left running — including work that finishing work started."""
    while _tasks:
        await asyncio.gather(*list(_tasks), return_exceptions=True)
