"""Deadlines are enforced by the server, not the browser (whose countdown is only a display).

Two mechanisms, one outcome: a timer in the process that showed the question fires at its
deadline, and a sweep in every process picks up questions whose process died. Both call the
expiry handler (`chat.answering.expire`, set once in `ChatConfig.ready`), whose conditional
UPDATE makes the expiry happen exactly once. The handler is passed in rather than imported:
the answer path arms timers here, so importing it back would close an import cycle.

Where the sweep starts: `ensure_sweeper()`, called by `project/asgi.py` on a process's first
request or websocket (Daphne has no startup hook) and again whenever a timer is armed. A
deployment that wants it in one dedicated process runs `manage.py sweep_questions` instead (or
beside the web workers: the conditional UPDATE keeps every expiry single).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from typing import Awaitable, Callable

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from chat import background
from questions import selectors as question_selectors
from questions import services as questions

log = logging.getLogger("clarion.questions")

# A timer fires this much after the deadline, so the server's check finds it passed.
TIMER_SLACK_SECONDS = 0.05

_timers: dict[uuid.UUID, asyncio.TimerHandle] = {}
# The answer path's expiry: `(question_id) -> resolution or None` (None: not due after all).
_expire: Callable[[uuid.UUID], Awaitable[object | None]] | None = None


def set_expiry_handler(expire: Callable[[uuid.UUID], Awaitable[object | None]]) -> None:
    global _expire
    _expire = expire


_sweepers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}


def schedule(question_id: uuid.UUID, deadline: dt.datetime | None) -> None:
    """(Re)arm this process's timer for a question. Safe to call repeatedly."""
    if deadline is None:
        return
    loop = asyncio.get_running_loop()
    ensure_sweeper()
    if (old := _timers.pop(question_id, None)) is not None:
        old.cancel()
    delay = max(0.0, (deadline - timezone.now()).total_seconds()) + TIMER_SLACK_SECONDS
    _timers[question_id] = loop.call_later(delay, lambda: background.spawn(_fire(question_id)))


def _expiry_handler() -> Callable[[uuid.UUID], Awaitable[object | None]]:
    if _expire is None:  # wired in ChatConfig.ready; a process without it cannot expire anything
        raise RuntimeError("deadlines.set_expiry_handler was not called")
    return _expire


async def _fire(question_id: uuid.UUID) -> None:
    _timers.pop(question_id, None)
    try:
        if await _expiry_handler()(question_id) is None:
            # Not due: paused or extended meanwhile. Re-arm for the deadline it has now.
            deadline = await database_sync_to_async(question_selectors.pending_deadline)(question_id=question_id)
            schedule(question_id, deadline)
    except Exception:
        log.exception("expiring question %s failed; the sweep will retry", question_id)


def ensure_sweeper() -> None:
    """Start this process's sweep (once per event loop)."""
    loop = asyncio.get_running_loop()
    task = _sweepers.get(loop)
    if task is None or task.done():
        _sweepers[loop] = loop.create_task(_sweep_forever())


async def _sweep_forever() -> None:
    while True:
        await asyncio.sleep(settings.QUESTION_SWEEP_SECONDS)
        try:
            await sweep_once()
        except Exception:
            log.exception("question sweep failed; trying again next round")


async def sweep_once() -> int:
    """Expire every overdue question (whatever process showed it). Returns how many expired."""
    expired = 0
    for question_id in await database_sync_to_async(questions.due_question_ids)():
        if await _expiry_handler()(question_id) is not None:
            expired += 1
    return expired


def stop_sweepers() -> None:
    """For tests: cancel timers and sweeps bound to event loops that are going away."""
    for handle in _timers.values():
        handle.cancel()
    _timers.clear()
    for task in _sweepers.values():
        task.cancel()
    _sweepers.clear()
