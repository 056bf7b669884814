"""Deadlines: stored, extended by pauses (capped), enforced by the server exactly once."""

import datetime as dt
import json

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from chat import answering, deadlines
from chat.models import Message
from questions import services
from questions.models import PendingQuestion
from tests.fake_openai import Reply
from tests.questions.test_answer_endpoints import make_group

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def question(alice):
    return make_group(alice).questions.get()


@database_sync_to_async
def fresh(question):
    return PendingQuestion.objects.get(pk=question.pk)


@database_sync_to_async
def set_deadline(question, seconds_from_now):
    PendingQuestion.objects.filter(pk=question.pk).update(deadline=timezone.now() + dt.timedelta(seconds=seconds_from_now))


@database_sync_to_async
def tool_result():
    return json.loads(Message.objects.get(role="tool").content)


async def test_expiry_applies_the_guessed_default_and_tells_the_model(question):
    await database_sync_to_async(services.record_guess)(
        question_id=question.pk,
        ranking=[{"index": 2, "confidence": 0.7, "reasoning": "Mentioned twice"}, {"index": 0, "confidence": 0.2, "reasoning": ""}],
    )
    await set_deadline(question, -1)
    receipt = await answering.expire(question.pk)
    assert receipt is not None and receipt.resolution.completed_group
    q = await fresh(question)
    assert (q.status, q.answer, q.selected_indexes, q.resolved_via) == ("timed_out", "Home", [2], "timeout_default")
    (row,) = (await tool_result())["answers"]
    assert row["status"] == "timed_out" and row["default_applied"] is True and row["answers"] == ["Home"]
    assert row["note"].startswith("No answer — default applied: Home.") and "not their choice" in row["note"]
    # Exactly once: a second expiry (timer + sweep + browser) does nothing.
    assert await answering.expire(question.pk) is None
    assert await database_sync_to_async(Message.objects.filter(role="tool").count)() == 1


async def test_expiry_without_a_default_says_so(question):
    await set_deadline(question, -1)
    await answering.expire(question.pk)
    (row,) = (await tool_result())["answers"]
    assert row["default_applied"] is False and row["answers"] == [] and "no default" in row["note"]


async def test_not_due_is_left_alone(question):
    assert await answering.expire(question.pk) is None
    assert (await fresh(question)).status == "pending"


async def test_the_sweep_expires_questions_whose_process_died(question, settings):
    await set_deadline(question, -5)  # nobody armed a timer for it in this process
    assert await deadlines.sweep_once() == 1
    assert (await fresh(question)).status == "timed_out"


async def test_the_timer_fires_at_the_deadline(question):
    await set_deadline(question, 0.3)
    q = await fresh(question)
    deadlines.schedule(q.pk, q.deadline)
    import asyncio

    for _ in range(40):
        if (await fresh(question)).status == "timed_out":
            break
        await asyncio.sleep(0.05)
    assert (await fresh(question)).status == "timed_out"
    deadlines.stop_sweepers()


async def test_pause_stops_the_clock_and_resume_continues_from_where_it_stopped(question, alice, settings):
    settings.QUESTION_PAUSE_CAP_SECONDS = 120
    await set_deadline(question, 10)
    paused = await database_sync_to_async(services.pause)(user=alice, question_id=question.pk)
    assert paused.paused_at is not None and 9 < paused.remaining_at_pause <= 10
    # While paused the server will not expire it before the pause budget runs out.
    assert (paused.deadline - timezone.now()).total_seconds() > 125
    assert await answering.expire(question.pk) is None
    # Pausing twice changes nothing.
    again = await database_sync_to_async(services.pause)(user=alice, question_id=question.pk)
    assert again.deadline == paused.deadline
    resumed = await database_sync_to_async(services.resume)(user=alice, question_id=question.pk)
    assert resumed.paused_at is None and 9 < (resumed.deadline - timezone.now()).total_seconds() <= 10


async def test_pauses_are_capped(question, alice, settings):
    settings.QUESTION_PAUSE_CAP_SECONDS = 2
    await set_deadline(question, 10)
    await database_sync_to_async(services.pause)(user=alice, question_id=question.pk)
    # Pretend the tab vanished mid-pause 5 s ago: 3 s past the cap come off what was left.
    await database_sync_to_async(PendingQuestion.objects.filter(pk=question.pk).update)(paused_at=timezone.now() - dt.timedelta(seconds=5))
    resumed = await database_sync_to_async(services.resume)(user=alice, question_id=question.pk)
    left = (resumed.deadline - timezone.now()).total_seconds()
    assert 6 < left < 7.1 and resumed.pause_seconds_used == 2
    # The budget is spent: a new pause no longer moves the deadline out.
    paused = await database_sync_to_async(services.pause)(user=alice, question_id=question.pk)
    assert abs((paused.deadline - resumed.deadline).total_seconds()) < 0.5


async def test_pausing_a_resolved_question_is_a_conflict(question, alice):
    await set_deadline(question, -1)
    await answering.expire(question.pk)
    with pytest.raises(services.AlreadyResolved):
        await database_sync_to_async(services.pause)(user=alice, question_id=question.pk)


async def test_a_destructive_confirmation_never_defaults_to_yes(alice):
    from questions.models import QuestionGroup

    group = await database_sync_to_async(make_group)(alice, kind=QuestionGroup.Kind.CONFIRM)
    question = await database_sync_to_async(group.questions.get)()
    await database_sync_to_async(PendingQuestion.objects.filter(pk=question.pk).update)(destructive=True, default_indexes=[0])
    # Even a guess of "yes" is not kept as the default…
    await database_sync_to_async(services.record_guess)(
        question_id=question.pk, ranking=[{"index": 0, "confidence": 0.99, "reasoning": "sure"}]
    )
    assert (await fresh(question)).default_indexes == [0]  # unchanged by the guess (destructive)
    # …and expiry applies nothing at all.
    await set_deadline(question, -1)
    await database_sync_to_async(services.expire_if_due)(question_id=question.pk)
    q = await fresh(question)
    assert (q.status, q.selected_indexes, q.resolved_via) == ("timed_out", [], "timeout_none")


async def test_resolutions_are_counted_by_outcome(question):
    from questions.metrics import QUESTION_ANSWER_SECONDS, QUESTION_RESOLUTIONS

    before = QUESTION_RESOLUTIONS.labels(outcome="timeout_none")._value.get()
    answered_before = QUESTION_ANSWER_SECONDS._sum.get()
    await set_deadline(question, -1)
    await answering.expire(question.pk)
    assert QUESTION_RESOLUTIONS.labels(outcome="timeout_none")._value.get() == before + 1
    assert QUESTION_ANSWER_SECONDS._sum.get() >= answered_before


def test_the_sweep_command_expires_overdue_questions_once(question, model_endpoint):
    """`manage.py sweep_questions --once`: the deployment's single-process sweep."""
    from io import StringIO

    from django.core.management import call_command

    model_endpoint.script(Reply.text("Noted: no answer."))
    PendingQuestion.objects.filter(pk=question.pk).update(deadline=timezone.now() - dt.timedelta(seconds=1))
    out = StringIO()
    call_command("sweep_questions", "--once", stdout=out)
    assert "expired 1 question(s)" in out.getvalue()
    assert PendingQuestion.objects.get(pk=question.pk).status == "timed_out"
    assert Message.objects.filter(role="tool").count() == 1
    # The continuation ran: the model got the timed-out answer and replied.
    assert Message.objects.filter(role="assistant", content="Noted: no answer.").exists()
    call_command("sweep_questions", "--once", stdout=(again := StringIO()))
    assert again.getvalue() == "" and Message.objects.filter(role="tool").count() == 1
