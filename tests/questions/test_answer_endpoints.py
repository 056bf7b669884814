"""Answering over HTTP (works without the websocket): validation, 404, 409, nothing written on error."""

import datetime as dt
import json

import pytest
from asgiref.sync import SyncToAsync
from channels.db import database_sync_to_async
from django.utils import timezone

from chat import agent, answering, rendering
from chat import services as chat_services
from chat.models import Message
from questions import services
from questions.models import PendingQuestion, QuestionGroup
from questions.schemas import AnswerInput, AskUserArgs
from tests.fake_openai import Reply
from tests.websocket import open_socket, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


def make_group(user, *, allow_custom=True, multi_select=False, kind=QuestionGroup.Kind.ASK, n=1):
    conversation = chat_services.start_conversation(user=user)
    message = chat_services.post_user_message(user=user, conversation_id=conversation.pk, content="?")
    spec = {"question": "Which project?", "options": [{"label": "Atlas"}, {"label": "Harbor"}, {"label": "Home"}],
            "allow_custom": allow_custom, "multi_select": multi_select}  # fmt: skip
    args = AskUserArgs.model_validate({"questions": [spec] * n})
    return services.ask(
        user=user, conversation_id=conversation.pk, kind=kind, specs=args.questions, tool_call_id="call_1",
        tool_name="ask_user", payload={"in_reply_to_id": message.pk},
    )  # fmt: skip


@pytest.fixture
def question(alice):
    group = make_group(alice)
    return group.questions.get()


def url(question, action="answer"):
    return f"/chat/questions/{question.pk}/{action}/"


@database_sync_to_async
def fresh(question):
    return PendingQuestion.objects.get(pk=question.pk)


@database_sync_to_async
def tool_messages():
    return list(Message.objects.filter(role="tool").values_list("content", flat=True))


async def test_answering_an_option(async_client, alice, question):
    await async_client.aforce_login(alice)
    response = await async_client.post(url(question), {"option": "1"})
    assert response.status_code == 200 and "receipt-answer" in response.content.decode()
    q = await fresh(question)
    assert (q.status, q.answer, q.selected_indexes, q.is_custom, q.resolved_via) == ("answered", "Harbor", [1], False, "option")
    (tool_result,) = await tool_messages()
    assert '"answers": ["Harbor"]' in tool_result and '"status": "answered"' in tool_result


async def test_another_users_question_is_404_and_untouched(async_client, bob, question):
    await async_client.aforce_login(bob)
    assert (await async_client.post(url(question), {"option": "0"})).status_code == 404
    for action in ("pause", "resume", "expire"):
        assert (await async_client.post(url(question, action))).status_code == 404
    assert (await fresh(question)).status == "pending"


async def test_already_resolved_returns_the_resolved_card_with_409(async_client, alice, question):
    await async_client.aforce_login(alice)
    assert (await async_client.post(url(question), {"option": "0"})).status_code == 200
    second = await async_client.post(url(question), {"option": "2"})
    assert second.status_code == 409
    assert "receipt-answer" in second.content.decode() and "Atlas" in second.content.decode()
    assert (await fresh(question)).answer == "Atlas"
    assert len(await tool_messages()) == 1


@pytest.mark.parametrize(
    "data, message",
    [
        ({"custom": "x" * 1001}, "That answer is 1,001 characters; the limit is 1,000."),
        ({"custom": "   "}, "Type an answer first."),
        ({"option": "3"}, "Option 4 is not one of the 3 options."),
        ({"option": "-1"}, "Option 0 is not one of the 3 options."),
        ({"option": "abc"}, "Pick an option from the list."),
        ({}, "Pick an option or type an answer."),
        ({"option": "0", "label": "Harbor"}, "The option you picked no longer matches the question"),
        ({"options": ["0", "1"]}, "Pick just one option for this question."),
    ],
)
async def test_bad_answers_are_refused_with_a_clear_message_and_nothing_written(async_client, alice, question, data, message):
    await async_client.aforce_login(alice)
    response = await async_client.post(url(question), data)
    assert response.status_code == 422
    assert message in response.content.decode().replace("&#x27;", "'")
    assert (await fresh(question)).status == "pending"
    assert await tool_messages() == []


async def test_custom_answer_only_where_allowed(async_client, alice):
    group = await database_sync_to_async(make_group)(alice, allow_custom=False)
    question = await database_sync_to_async(group.questions.get)()
    await async_client.aforce_login(alice)
    response = await async_client.post(url(question), {"custom": "Somewhere else"})
    assert response.status_code == 422 and "a typed answer is not allowed" in response.content.decode()
    assert (await fresh(question)).status == "pending"


async def test_multi_select_and_custom_answers(async_client, alice):
    group = await database_sync_to_async(make_group)(alice, multi_select=True, n=2)
    first, second = await database_sync_to_async(lambda: list(group.questions.order_by("position")))()
    await async_client.aforce_login(alice)
    assert (await async_client.post(url(first), {"options": ["2", "0"]})).status_code == 200
    assert (await async_client.post(url(second), {"custom": "  The garden shed  "})).status_code == 200
    first, second = await fresh(first), await fresh(second)
    assert (first.answer, first.selected_indexes, first.resolved_via) == ("Atlas, Home", [0, 2], "options")
    assert (second.answer, second.is_custom, second.resolved_via) == ("The garden shed", True, "custom")
    (tool_result,) = await tool_messages()
    assert '"answers": ["Atlas", "Home"]' in tool_result and '"is_custom": true' in tool_result


async def test_the_next_question_starts_its_clock_when_shown(async_client, alice):
    group = await database_sync_to_async(make_group)(alice, n=2)
    first, second = await database_sync_to_async(lambda: list(group.questions.order_by("position")))()
    assert second.deadline is None
    await async_client.aforce_login(alice)
    before = timezone.now()
    await async_client.post(url(first), {"option": "0"})
    second = await fresh(second)
    assert before + dt.timedelta(seconds=299) < second.deadline < timezone.now() + dt.timedelta(seconds=301)


async def test_the_cards_post_runs_djangos_middleware_in_one_thread_not_a_hop_per_hook(async_client, alice, question, monkeypatch):
    """Each hop between the event loop and a thread costs CPU on every request: Django's own
    middleware run inside one (no `process_request`/`process_response` of their own crosses)."""
    await async_client.aforce_login(alice)
    hops: list[str] = []
    crossing = SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        hops.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await crossing(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    response = await async_client.post(url(question), {"option": "1"})
    monkeypatch.undo()
    assert response.status_code == 200 and "receipt-answer" in response.content.decode()
    assert not [hop for hop in hops if hop.endswith(("process_request", "process_response"))], hops


async def test_the_cards_post_returns_the_card_every_tab_was_sent(async_client, alice, question, model_endpoint):
    """The receipt is rendered once, from the rows its resolution wrote: the answering tab's POST
    gets the very card the websocket brings every tab (no second read, no second render)."""
    model_endpoint.script(Reply.text("Filed under Harbor."))
    socket = await open_socket(f"/ws/conversations/{question.group.conversation_id}/", user=alice)
    assert (await socket.connect())[0]
    await async_client.aforce_login(alice)
    response = await async_client.post(url(question), {"option": "1"})
    frame = await receive_until(socket, "receipt-answer")
    await agent.wait_for_running_turns()
    await socket.disconnect()

    card = response.content.decode()
    assert response.status_code == 200 and card.lstrip().startswith('<section class="question-card') and "Harbor" in card
    assert card in frame and 'id="qgroup-' in card and "hx-swap-oob" not in card


def test_an_answer_is_resolved_recorded_and_rendered_in_few_statements(alice, django_assert_num_queries):
    """Lock the group and read its questions, update the question, complete the group, save the
    tool result: the card is rendered from what was read under the lock, not read again."""
    question = make_group(alice, n=2).questions.order_by("position").first()

    def answer(question, index):
        request = services.AnswerRequest(user=alice, question_id=question.pk, answer=AnswerInput(selected_indexes=[index]), via="option")
        (resolved,) = answering._resolve_answers([request])
        return resolved

    answer(question, 0)
    second = PendingQuestion.objects.get(group=question.group, position=1)
    # 5 statements, plus BEGIN and COMMIT (it was 15 in all).
    with django_assert_num_queries(7):
        resolved = answer(second, 2)
    with django_assert_num_queries(0):  # rendered on the event loop, as the receipt goes out: no query allowed
        html = resolved.html()
    assert resolved.resolution.completed_group and "Home" in html
    (tool_result,) = Message.objects.filter(role="tool").values_list("content", flat=True)
    assert json.loads(tool_result)["answers"][1]["answers"] == ["Home"]
    assert 'data-revision="2"' in html


def test_every_change_to_a_group_raises_the_revision_its_card_carries(alice):
    """Renders of a card can reach a tab out of order; the tab keeps the highest revision. Each
    write raises it under the group's lock, and a refused one leaves it as it was."""
    group = make_group(alice, n=2, allow_custom=False)
    first, second = group.questions.order_by("position")

    def revision() -> int:
        return QuestionGroup.objects.get(pk=group.pk).revision

    assert revision() == 0
    with pytest.raises(services.AnswerRejected):
        services.answer(user=alice, question_id=first.pk, answer=AnswerInput(custom="typed"), via="custom")
    assert revision() == 0
    services.pause(user=alice, question_id=first.pk)
    services.resume(user=alice, question_id=first.pk)
    assert revision() == 2
    services.answer(user=alice, question_id=first.pk, answer=AnswerInput(selected_indexes=[0]), via="option")
    services.record_guess(question_id=second.pk, ranking=[{"index": 1, "confidence": 0.9}])
    assert revision() == 4
    with pytest.raises(services.QuestionNotFound):
        services.skip_group(user=alice, group_id="not-a-group")
    services.skip_group(user=alice, group_id=group.pk)
    assert revision() == 5
    assert 'data-revision="5"' in rendering.question_group(QuestionGroup.objects.get(pk=group.pk), oob=True)


async def test_resume_returns_the_card_with_its_clock_running(async_client, alice, question):
    """A page that resumes a stale pause on load swaps this in: its socket may not be open yet."""
    await async_client.aforce_login(alice)
    assert (await async_client.post(url(question, "pause"))).status_code == 204
    assert (await fresh(question)).paused_at is not None
    response = await async_client.post(url(question, "resume"))
    html = response.content.decode()
    assert response.status_code == 200 and f'id="question-{question.pk}"' in html and 'data-paused="0"' in html
    assert (await fresh(question)).paused_at is None


def test_a_finished_cards_header_says_what_became_of_its_questions(alice):
    def header(group) -> str:
        html = rendering.question_group(QuestionGroup.objects.get(pk=group.pk))
        return html.split('class="question-progress">', 1)[1].split("</span>", 1)[0]

    answered = make_group(alice, n=2)
    for q in answered.questions.order_by("position"):
        services.answer(user=alice, question_id=q.pk, answer=AnswerInput(selected_indexes=[0]), via="option")
    assert header(answered) == "2 questions answered"

    mixed = make_group(alice, n=3)
    services.answer(user=alice, question_id=mixed.questions.get(position=0).pk, answer=AnswerInput(selected_indexes=[1]), via="option")
    services.skip_group(user=alice, group_id=mixed.pk)
    assert header(mixed) == "3 questions · 1 answered, 2 skipped"

    set_aside = make_group(alice, n=2)
    services.skip_group(user=alice, group_id=set_aside.pk, set_aside=True)  # the person sent a new message instead
    assert header(set_aside) == "2 questions cancelled"
