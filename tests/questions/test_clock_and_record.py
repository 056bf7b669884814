"""A card whose default would answer for the person: its clock waits until a tab shows it (still
bounded by the pause budget), a default applied is recorded as no answer — for the person and the
model — and a pause or resume that arrives after the answer is not an error."""

import datetime as dt
import json

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from chat import answering, rendering
from chat import services as chat_services
from chat.models import Message
from questions import services
from questions.models import PendingQuestion, QuestionGroup
from questions.schemas import AnswerInput, QuestionSpec
from tests.questions.test_answer_endpoints import make_group, url
from tests.websocket import open_socket, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


def detected(user, *, starts_when_shown=True):
    conversation = chat_services.start_conversation(user=user)
    message = chat_services.post_user_message(user=user, conversation_id=conversation.pk, content="anything stale?")
    spec = QuestionSpec.model_validate({"question": "Shall I archive it?", "options": [{"label": "Yes"}, {"label": "No"}]})
    group = services.ask(
        user=user, conversation_id=conversation.pk, kind=QuestionGroup.Kind.DETECTED, specs=[spec], complexity="low",
        payload={"in_reply_to_id": message.pk}, default_indexes=[[0]], starts_when_shown=starts_when_shown,
    )  # fmt: skip
    return group.questions.get()


@database_sync_to_async
def fresh(question):
    return PendingQuestion.objects.get(pk=question.pk)


async def test_a_card_that_starts_when_shown_waits_paused_and_runs_its_full_time_once_shown(alice, settings):
    settings.QUESTION_PAUSE_CAP_SECONDS = 120
    question = await database_sync_to_async(detected)(alice)
    assert question.paused_at is not None and question.remaining_at_pause == question.timeout_seconds == 8
    # Nobody has seen it: not due before its time plus the pause budget.
    assert 127 < (question.deadline - timezone.now()).total_seconds() <= 128
    assert await answering.expire(question.pk) is None
    shown = await database_sync_to_async(services.resume)(user=alice, question_id=question.pk)
    assert shown.paused_at is None and 7 < (shown.deadline - timezone.now()).total_seconds() <= 8


async def test_a_card_no_tab_ever_shows_still_times_out_after_the_pause_budget(alice, settings):
    settings.QUESTION_PAUSE_CAP_SECONDS = 120
    question = await database_sync_to_async(detected)(alice)
    later = timezone.now() + dt.timedelta(seconds=129)
    resolution = await database_sync_to_async(services.expire_if_due)(question_id=question.pk, now=later)
    assert resolution is not None and resolution.question.status == "timed_out"


async def test_a_default_applied_is_recorded_as_no_answer_for_the_person_and_the_model(alice):
    question = await database_sync_to_async(detected)(alice, starts_when_shown=False)
    await database_sync_to_async(PendingQuestion.objects.filter(pk=question.pk).update)(deadline=timezone.now())
    await answering.expire(question.pk)
    message = await database_sync_to_async(Message.objects.get)(metadata__answer_to=str(question.group_id))
    assert message.role == "user" and message.content == "No answer — default applied: Yes"
    assert message.metadata["timed_out"] is True
    html = await database_sync_to_async(rendering.message_appended)(message)
    assert "Your answer" not in html and "Timed out" in html


async def test_an_answer_is_still_recorded_as_the_answer(alice):
    question = await database_sync_to_async(detected)(alice)
    await answering.submit_answer(user=alice, question_id=question.pk, answer=AnswerInput(selected_indexes=[1]), via="option")
    message = await database_sync_to_async(Message.objects.get)(metadata__answer_to=str(question.group_id))
    assert message.content == "No" and message.metadata["timed_out"] is False


async def test_pause_and_resume_after_the_answer_are_not_errors(async_client, alice):
    question = await database_sync_to_async(lambda: make_group(alice).questions.get())()
    await async_client.aforce_login(alice)
    assert (await async_client.post(url(question), {"option": "0"})).status_code == 200
    late_pause = await async_client.post(url(question, "pause"))
    assert late_pause.status_code == 204
    late_resume = await async_client.post(url(question, "resume"))
    assert late_resume.status_code == 200 and "receipt-answer" in late_resume.content.decode()
    q = await fresh(question)
    assert (q.status, q.answer, q.paused_at) == ("answered", "Atlas", None)


async def send_expire_frame(user, question, conversation_id=None) -> str:
    """A page's `expire` frame for the question, then a `pause` (handled after it, in order) to
    know it has been dealt with: every frame until the question's card, or an error under the
    composer, came back."""
    socket = await open_socket(f"/ws/conversations/{conversation_id or question.conversation_id}/", user=user)
    assert (await socket.connect())[0]
    for action in ("expire", "pause"):
        await socket.send_to(text_data=json.dumps({"action": action, "question_id": str(question.pk)}))
    frames = await receive_until(socket, f'id="qgroup-{question.group_id}"' if user.pk == question.user_id else "composer-error")
    await socket.disconnect()
    return frames


@pytest.mark.parametrize(
    "seconds_left, expires",
    [
        pytest.param(-1.0, True, id="past-its-deadline"),
        pytest.param(0.5, True, id="within-the-difference-between-clocks"),
        pytest.param(30.0, False, id="not-due"),
    ],
)
async def test_a_pages_expire_frame_expires_a_due_question_only(alice, seconds_left, expires):
    question = await database_sync_to_async(detected)(alice, starts_when_shown=False)
    deadline = timezone.now() + dt.timedelta(seconds=seconds_left)
    await database_sync_to_async(PendingQuestion.objects.filter(pk=question.pk).update)(deadline=deadline)
    frames = await send_expire_frame(alice, question)
    after = await fresh(question)
    if expires:
        assert after.status == "timed_out" and "Timed out" in frames
        assert await database_sync_to_async(Message.objects.filter(metadata__answer_to=str(question.group_id)).count)() == 1
    else:
        assert after.status == "pending" and "Timed out" not in frames
        assert not await database_sync_to_async(Message.objects.filter(metadata__answer_to=str(question.group_id)).exists)()


async def test_an_expire_frame_for_another_users_question_is_not_found_and_changes_nothing(alice, bob):
    question = await database_sync_to_async(detected)(alice, starts_when_shown=False)
    await database_sync_to_async(PendingQuestion.objects.filter(pk=question.pk).update)(deadline=timezone.now())
    own = await database_sync_to_async(chat_services.start_conversation)(user=bob)
    frames = await send_expire_frame(bob, question, conversation_id=own.pk)
    assert "That question was not found." in frames
    assert (await fresh(question)).status == "pending"
