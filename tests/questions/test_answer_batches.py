"""Answers that arrive together are resolved together: one hop, one transaction, a few
statements whatever their number — and each still gets exactly its own outcome."""

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from chat import agent, answering
from chat.models import Message
from questions import services
from questions.models import PendingQuestion, QuestionGroup
from questions.schemas import AnswerInput
from tests.fake_openai import Reply
from tests.questions.test_answer_endpoints import make_group

pytestmark = pytest.mark.django_db(transaction=True)


def request(user, question, **answer) -> services.AnswerRequest:
    return services.AnswerRequest(user=user, question_id=getattr(question, "pk", question), answer=AnswerInput(**answer), via="option")


def first_question(group: QuestionGroup) -> PendingQuestion:
    return group.questions.order_by("position").first()


def tool_results() -> dict:
    """{conversation id: the tool results saved for it}"""
    found: dict = {}
    for m in Message.objects.filter(role=Message.Role.TOOL).order_by("id"):
        found.setdefault(m.conversation_id, []).append(json.loads(m.content))
    return found


def test_answers_received_together_are_resolved_in_one_transaction_of_a_few_statements(make_user, django_assert_num_queries):
    users = [make_user(f"person{i}") for i in range(6)]
    singles = [make_group(u) for u in users]
    pair = make_group(users[0], n=2)
    strict = make_group(users[1], allow_custom=False)
    first, second = pair.questions.order_by("position")
    requests = [
        *(request(u, first_question(g), selected_indexes=[i % 3]) for i, (u, g) in enumerate(zip(users, singles, strict=True))),
        request(users[0], first, selected_indexes=[0]),
        request(users[0], second, selected_indexes=[2]),  # the pair's second question, in the same batch
        request(users[2], first_question(singles[2]), selected_indexes=[1]),  # a double click
        request(users[1], first_question(strict), custom="typed"),  # refused: options only
        request(users[3], first_question(strict), selected_indexes=[0]),  # someone else's question
        request(users[3], "not-a-question", selected_indexes=[0]),
    ]
    # Lock the groups, read their questions, write the resolutions, start the pair's second
    # clock, complete the groups, save the tool results: 6 statements with BEGIN and COMMIT, for
    # 12 answers (one answer alone takes 7).
    with django_assert_num_queries(8):
        outcomes = answering._resolve_answers(requests)

    resolved = outcomes[:8]
    assert all(isinstance(o, answering.Receipt) for o in resolved)
    assert [o.resolution.completed_group for o in resolved] == [True] * 6 + [False, True]
    assert isinstance(outcomes[8], services.AlreadyResolved) and outcomes[8].question.answer == "Home"
    assert isinstance(outcomes[9], services.AnswerRejected) and "needs one of its options" in outcomes[9].message
    assert isinstance(outcomes[10], services.QuestionNotFound) and isinstance(outcomes[11], services.QuestionNotFound)

    saved = tool_results()
    for i, group in enumerate(singles):
        (result,) = saved[group.conversation_id]
        assert result["answers"][0]["answers"] == [["Atlas", "Harbor", "Home"][i % 3]]
    (pair_result,) = saved[pair.conversation_id]
    assert [a["answers"] for a in pair_result["answers"]] == [["Atlas"], ["Home"]]
    # Nothing of the refused answer was written, and nobody else answered that question.
    assert strict.conversation_id not in saved and first_question(strict).status == "pending"
    assert [q.status for q in PendingQuestion.objects.filter(group__in=singles)] == ["answered"] * 6
    # Each card is rendered as its answer left it, from what the batch read: no query.
    with django_assert_num_queries(0):
        html = resolved[7].html()
    assert "Home" in html and 'data-revision="1"' in html


def test_when_a_batch_cannot_commit_each_answer_is_resolved_alone_and_only_the_faulty_one_fails(make_user):
    users = [make_user(f"person{i}") for i in range(3)]
    groups = [make_group(u) for u in users]
    # A group whose outcome cannot be recorded (its turn's message is missing from the payload).
    QuestionGroup.objects.filter(pk=groups[1].pk).update(payload={})

    outcomes = answering._resolve_answers([request(u, first_question(g), selected_indexes=[0]) for u, g in zip(users, groups, strict=True)])

    assert isinstance(outcomes[0], answering.Receipt) and isinstance(outcomes[2], answering.Receipt)
    assert isinstance(outcomes[1], KeyError)
    assert [first_question(g).status for g in groups] == ["answered", "pending", "answered"]
    assert set(tool_results()) == {groups[0].conversation_id, groups[2].conversation_id}


@pytest.fixture
def continues(model_endpoint):
    model_endpoint.default = Reply.text("Noted.")
    return model_endpoint


async def test_answers_sent_at_once_share_one_hop_and_each_continues(make_user, continues, monkeypatch):
    users = [await database_sync_to_async(make_user)(f"person{i}") for i in range(12)]
    groups = [await database_sync_to_async(make_group)(u) for u in users]
    questions = [await database_sync_to_async(first_question)(g) for g in groups]
    hops: list[int] = []
    resolve_answers = answering._resolve_answers

    def counted(requests):
        hops.append(len(requests))
        return resolve_answers(requests)

    monkeypatch.setattr(answering, "_resolve_answers", counted)

    receipts = await asyncio.gather(
        *(
            answering.submit_answer(user=u, question_id=q.pk, answer=AnswerInput(selected_indexes=[1]), via="option")
            for u, q in zip(users, questions, strict=True)
        )
    )
    await agent.wait_for_running_turns()

    assert hops == [12]
    resolutions = [r.resolution for r in receipts]
    assert [r.question.pk for r in resolutions] == [q.pk for q in questions]
    assert all(r.completed_group and r.question.answer == "Harbor" for r in resolutions)
    replies = await database_sync_to_async(
        lambda: sorted(Message.objects.filter(role="assistant").values_list("conversation_id", flat=True))
    )()
    assert replies == sorted(g.conversation_id for g in groups)


async def test_errors_reach_their_own_caller_only(make_user, continues):
    alice, bob = [await database_sync_to_async(make_user)(name) for name in ("alice", "bob")]
    group = await database_sync_to_async(make_group)(alice, allow_custom=False)
    question = await database_sync_to_async(first_question)(group)

    refused, taken, answered = await asyncio.gather(
        answering.submit_answer(user=alice, question_id=question.pk, answer=AnswerInput(custom="typed"), via="custom"),
        answering.submit_answer(user=bob, question_id=question.pk, answer=AnswerInput(selected_indexes=[0]), via="option"),
        answering.submit_answer(user=alice, question_id=question.pk, answer=AnswerInput(selected_indexes=[2]), via="option"),
        return_exceptions=True,
    )
    await agent.wait_for_running_turns()

    assert isinstance(refused, services.AnswerRejected) and isinstance(taken, services.QuestionNotFound)
    assert answered.resolution.question.answer == "Home"


async def test_an_answer_whose_caller_went_away_still_continues(alice, continues):
    """A socket that closes while its answer is being resolved: what was committed for it still
    shows in the other tabs and starts the next turn."""
    group = await database_sync_to_async(make_group)(alice)
    question = await database_sync_to_async(first_question)(group)

    caller = asyncio.ensure_future(
        answering.submit_answer(user=alice, question_id=question.pk, answer=AnswerInput(selected_indexes=[0]), via="option")
    )
    await asyncio.sleep(0)  # the answer is submitted and its hop has started
    caller.cancel()
    await agent.wait_for_running_turns()

    assert caller.cancelled()
    roles = await database_sync_to_async(
        lambda: list(Message.objects.filter(conversation_id=group.conversation_id).values_list("role", flat=True))
    )()
    assert roles == ["user", "tool", "assistant"]


async def test_when_the_receipt_cannot_be_sent_the_committed_answer_still_continues(alice, continues, monkeypatch):
    """The channel layer refusing a send (Redis's pool full, Redis down) must not strand a
    committed answer: its caller gets the receipt (the card's POST shows it in the tab that
    answered), and the next turn runs all the same."""
    from chat import publishing

    group = await database_sync_to_async(make_group)(alice)
    question = await database_sync_to_async(first_question)(group)
    send = publishing.send

    async def refused(group_name, html):
        if "question-" in html:
            raise ConnectionError("Too many connections")
        await send(group_name, html)

    monkeypatch.setattr(publishing, "send", refused)

    receipt = await answering.submit_answer(user=alice, question_id=question.pk, answer=AnswerInput(selected_indexes=[0]), via="option")
    assert "state-resolved" in receipt.card and "Atlas" in receipt.card
    await agent.wait_for_running_turns()

    roles = await database_sync_to_async(
        lambda: list(Message.objects.filter(conversation_id=group.conversation_id).values_list("role", flat=True))
    )()
    assert roles == ["user", "tool", "assistant"]


async def test_a_batch_shows_every_receipt_before_it_starts_any_turn(make_user, continues, monkeypatch):
    """A burst's receipts must not queue behind the turns the same burst starts."""
    from chat import publishing

    users = [await database_sync_to_async(make_user)(f"person{i}") for i in range(5)]
    groups = [await database_sync_to_async(make_group)(u) for u in users]
    questions = [await database_sync_to_async(first_question)(g) for g in groups]
    events: list[str] = []
    send, start_turn = publishing.send, agent.start_turn

    async def recorded_send(group_name, html):
        events.append("receipt")
        await send(group_name, html)

    def recorded_start(conversation_id):
        events.append("turn")
        return start_turn(conversation_id)

    monkeypatch.setattr(publishing, "send", recorded_send)
    monkeypatch.setattr(agent, "start_turn", recorded_start)

    await asyncio.gather(
        *(
            answering.submit_answer(user=u, question_id=q.pk, answer=AnswerInput(selected_indexes=[0]), via="option")
            for u, q in zip(users, questions, strict=True)
        )
    )
    await agent.wait_for_running_turns()

    assert events[:10] == ["receipt"] * 5 + ["turn"] * 5
