"""Deadlines are enforced by the server, not the browser (whose countdown is only a display).

Two mechanisms, one outcome: a timer in the process that showed the question fires at its
deadline, and a sweep in every process picks up questions whose process died. Both call
`answering.expire`, whose conditional UPDATE makes the expiry happen exactly once.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import logging

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from chat import background
from questions import services as questions

log = logging.getLogger("clarion.questions")

# A timer fires this much after the deadline, so the server's check finds it passed.
TIMER_SLACK_SECONDS = 0.05

_timers: dict = {}
_sweepers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}


def schedule(question_id, deadline: dt.datetime | None) -> None:
    """(Re)arm this process's timer for a question. Safe to call repeatedly."""
    if deadline is None:
        return
    loop = asyncio.get_running_loop()
    ensure_sweeper()
    if (old := _timers.pop(question_id, None)) is not None:
        old.cancel()
    delay = max(0.0, (deadline - timezone.now()).total_seconds()) + TIMER_SLACK_SECONDS
    _timers[question_id] = loop.call_later(delay, lambda: background.spawn(_fire(question_id)))


async def _fire(question_id) -> None:
    from chat import answering

    _timers.pop(question_id, None)
    try:
        if await answering.expire(question_id) is None:
            # Not due: paused or extended meanwhile. Re-arm for the deadline it has now.
            deadline = await database_sync_to_async(_pending_deadline)(question_id)
            schedule(question_id, deadline)
    except Exception:
        log.exception("expiring question %s failed; the sweep will retry", question_id)


def _pending_deadline(question_id):
    from questions.models import PendingQuestion

    return PendingQuestion.objects.filter(pk=question_id, status=PendingQuestion.Status.PENDING).values_list("deadline", flat=True).first()


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
    from chat import answering

    expired = 0
    for question_id in await database_sync_to_async(questions.due_question_ids)():
        if await answering.expire(question_id) is not None:
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
