"""Requests that arrive together, handled together: one database hop for many.

A burst of answers (a hundred people answering at once) would otherwise queue a hundred thread
hops, each waiting for the ones before it. A `Batcher` lets the first request go at once; the
ones that arrive while its hop runs wait and go together in the next hop, and so on. A request
alone is never held back to wait for company.

What follows a hop (publishing, starting turns) runs in a task of its own, not in the caller's:
a caller that goes away (a closed socket) cannot cancel the effects of what was committed for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from typing import Any, Awaitable, Callable, Generic, TypeVar

from chat import background

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """`hop(items)` handles one batch and returns a result or an exception per item, in order;
    then `finish(results)` turns them into what each `submit` returns (or raises), in order. At
    most one hop runs at a time per event loop, with at most `limit` items (futures belong to one
    loop: a test's, the server's)."""

    def __init__(
        self,
        hop: Callable[[list[T]], Awaitable[list[R | Exception]]],
        finish: Callable[[list[R | Exception]], Awaitable[list[Any]]],
        *,
        limit: int,
        least: int | None = None,
    ):
        self._hop, self._finish, self._limit = hop, finish, limit
        self._least = limit if least is None else least
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = weakref.WeakKeyDictionary()

    async def submit(self, item: T) -> Any:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future = loop.create_future()
        queue.waiting.append((item, future))
        queue.in_flight += 1
        queue.settled.clear()
        if not queue.running:
            queue.running = True
            background.spawn(self._run(queue))
        return await future

    async def _run(self, queue: _Queue) -> None:
        try:
            while queue.waiting:
                size = self.hop_size(len(queue.waiting))
                batch, queue.waiting = queue.waiting[:size], queue.waiting[size:]
                try:
                    results = await self._hop([item for item, _ in batch])
                except Exception as exc:
                    results = [exc] * len(batch)
                # The next hop starts now; this batch's effects run beside it.
                background.spawn(self._deliver(queue, batch, results))
        finally:
            queue.running = False

    def hop_size(self, waiting: int) -> int:
        """How many of `waiting` requests the next hop takes: half of them, between `least` and
        `limit`. Splitting a modest queue in two lets the first half's callers have their results
        after half the work, for one more hop; a long queue still goes `limit` at a time."""
        return min(waiting, self._limit, max(self._least, -(-waiting // 2)))

    async def settled(self, *, timeout: float) -> None:
        """Returns once everything submitted so far on this loop has been handled and finished —
        and whatever was submitted meanwhile too — or after `timeout` seconds."""
        queue = self._queues.get(asyncio.get_running_loop())
        if queue is None or queue.in_flight == 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await queue.settled.wait()

    async def _deliver(self, queue: _Queue, batch: list[tuple[Any, asyncio.Future]], results: list[R | Exception]) -> None:
        try:
            try:
                outcomes = await self._finish(results)
            except Exception as exc:
                outcomes = [exc] * len(batch)
            for (_, future), outcome in zip(batch, outcomes, strict=True):
                if future.done():  # its caller went away; what `finish` did for it still happened
                    continue
                if isinstance(outcome, Exception):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
        finally:
            queue.in_flight -= len(batch)
            if queue.in_flight == 0:
                queue.settled.set()


class _Queue:
    def __init__(self) -> None:
        self.waiting: list[tuple[Any, asyncio.Future]] = []
        self.running = False
        # Submitted and not yet finished (waiting, in a hop, or being finished).
        self.in_flight = 0
        self.settled = asyncio.Event()
