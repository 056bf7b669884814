"""A hung model, garbled tool calls: the person sees the turn working at once and a plain error
within one call budget — against the fake OpenAI-compatible server, through the real SDK."""

import json
import time

import pytest
from channels.db import database_sync_to_async

from chat import agent, services
from chat.models import Message
from tests.conftest import build_workspace
from tests.fake_openai import Reply
from tests.websocket import form_frame, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

HUNG = 30.0  # far longer than any budget below: the fake model simply never answers in time


@database_sync_to_async
def new_conversation(user):
    return services.start_conversation(user=user)


@database_sync_to_async
def rows_of(conversation):
    return list(conversation.messages.order_by("id").values("role", "content", "tool_calls", "metadata"))


async def receive_until(socket, needle: str, *, timeout: float) -> tuple[str, float]:
    """Frames until one contains `needle`; returns them and the seconds it took."""
    started, frames = time.monotonic(), []
    while True:
        remaining = timeout - (time.monotonic() - started)
        if remaining <= 0:
            raise AssertionError(f"{needle!r} did not arrive within {timeout} s; got {''.join(frames)[-600:]!r}")
        frame = await socket.receive_from(timeout=remaining)
        frames.append(frame)
        if needle in frame:
            return "".join(frames), time.monotonic() - started


@pytest.fixture
def hung_model(model_endpoint, settings):
    """Every call hangs. Clarification, the detector and the guesser are all on, as by default;
    the auxiliary budget is half of one attempt's timeout."""
    settings.CLARIFICATION_ENABLED = settings.QUESTION_DETECTOR_ENABLED = settings.QUESTION_GUESSER_ENABLED = True
    settings.LLM_TIMEOUT_SECONDS = 2.0
    settings.LLM_MAX_RETRIES = 1
    settings.LLM_AUX_TIMEOUT_SECONDS = 1.0
    model_endpoint.default = Reply.text("too late", delay=HUNG)
    return model_endpoint


async def test_a_hung_model_shows_the_typing_indicator_at_once_and_the_error_within_one_call_budget(hung_model, alice, settings):
    conversation = await new_conversation(alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="tidy up the launch"))

    await receive_until(socket, 'aria-label="typing"', timeout=10)
    # On screen while both first calls still wait on the hung model, before any retry.
    assert len(hung_model.requests) <= 2
    frames, error_after = await receive_until(socket, "message-error", timeout=30)
    # Clarification ran beside the chat call and gave up after its own short budget; the error
    # came when the chat call's one budget ran out — not after the two budgets end to end.
    main_budget = settings.LLM_TIMEOUT_SECONDS * (settings.LLM_MAX_RETRIES + 1) + 1.0  # + back-off between attempts
    assert error_after < main_budget + 0.5, error_after
    await agent.wait_for_running_turns()
    await socket.disconnect()

    rows = await rows_of(conversation)
    assert [r["role"] for r in rows] == ["user", "error"]
    assert rows[1]["metadata"]["kind"] != "internal"  # the model's failure, worded as such
    # One clarification attempt (abandoned) beside the chat call's attempts.
    assert sum("response_format" in r for r in hung_model.requests) == 1
    assert len(hung_model.requests) == 1 + settings.LLM_MAX_RETRIES + 1


async def test_the_typing_indicator_is_shown_while_clarification_runs_and_replaced_by_its_card(model_endpoint, alice, settings):
    settings.CLARIFICATION_ENABLED = True
    analysis = {
        "confidence": 0.2, "ambiguity_type": "scope", "understood": "tidy up", "complexity": "low",
        "questions": [{"id": "which", "question": "Which tasks?", "header": "Tasks", "allow_freeform": True, "multi_select": False,
                       "options": [{"key": "a", "label": "Completed ones", "description": "", "maps_to": "completed tasks"},
                                   {"key": "b", "label": "All of them", "description": "", "maps_to": "all tasks"}]}],
    }  # fmt: skip
    model_endpoint.script_structured(Reply.json(analysis, delay=0.6))  # within one attempt's timeout
    conversation = await new_conversation(alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="tidy up"))
    before_card, _ = await receive_until(socket, 'aria-label="typing"', timeout=10)
    assert "question-card" not in before_card
    frames, _ = await receive_until(socket, "Which tasks?", timeout=15)
    stream_id = before_card.split('id="stream-')[1].split('"')[0]
    assert f'id="stream-{stream_id}" hx-swap-oob="delete"' in frames  # the indicator gives way to the card
    await agent.wait_for_running_turns()
    await socket.disconnect()
    # The turn ended with the card: the chat call that ran beside clarification saved nothing.
    assert await database_sync_to_async(lambda: list(Message.objects.filter(conversation=conversation, role="assistant")))() == []


async def test_the_guesser_ranks_every_question_of_a_group_at_once(model_endpoint, alice, settings):
    """Two questions whose rankings take 2 s each: both requests go out together."""
    settings.QUESTION_GUESSER_ENABLED = True
    ask = {"questions": [
        {"question": "Which project?", "options": [{"label": "Atlas"}, {"label": "Harbor"}]},
        {"question": "Which priority?", "options": [{"label": "High"}, {"label": "Low"}]},
    ]}  # fmt: skip
    ranking = {
        "ranking": [{"index": 1, "confidence": 0.9, "reasoning": "named recently"}, {"index": 0, "confidence": 0.1, "reasoning": "x"}]
    }
    arrived = []

    def rank(body):
        arrived.append(time.monotonic())
        return Reply.json(ranking, delay=2.0)

    model_endpoint.script(Reply.tool_call("ask_user", ask), rank, rank)
    conversation = await new_conversation(alice)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="file a task")
    await agent.run_pending_turns(conversation.pk)
    await agent.wait_for_running_turns()
    assert len(arrived) == 2
    assert arrived[1] - arrived[0] < 1.0, "the second ranking waited for the first"
    from questions.models import PendingQuestion

    guessed = await database_sync_to_async(
        lambda: list(PendingQuestion.objects.filter(conversation=conversation).values_list("guessed_at", flat=True))
    )()
    assert len(guessed) == 2 and all(guessed)


async def test_garbled_tool_arguments_end_the_turn_saying_what_happened_and_a_retry_does_not_replay_them(model_endpoint, alice):
    build = await database_sync_to_async(build_workspace)(alice, tag="alice")
    model_endpoint.script(*(Reply.tool_call("query_tasks", '{"status": "todo",,') for _ in range(agent.MAX_MALFORMED_ROUNDS)))
    conversation = await new_conversation(alice)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="what is left to do?")
    await agent.run_pending_turns(conversation.pk)

    rows = await rows_of(conversation)
    error = rows[-1]
    assert error["role"] == "error" and error["metadata"]["kind"] == "malformed_tool_calls"
    assert "could not be read" in error["content"] and "query_tasks" in error["content"]
    assert "narrower question" not in error["content"] and "8 model calls" not in error["content"]
    # The model got one chance to correct itself, not eight.
    assert len(model_endpoint.requests) == agent.MAX_MALFORMED_ROUNDS
    assert json.loads(model_endpoint.requests[1]["messages"][-1]["content"])["error"].startswith(
        "The arguments for query_tasks are not valid JSON"
    )

    # Retry: the model sees the request again, without the failed call/result pairs.
    model_endpoint.script(Reply.text("Two tasks are left."))
    await database_sync_to_async(services.prepare_retry)(user=alice, conversation_id=conversation.pk)
    await agent.run_pending_turns(conversation.pk)
    retried = model_endpoint.requests[-1]["messages"]
    assert [m["role"] for m in retried] == ["system", "user"] and retried[-1]["content"] == "what is left to do?"
    assert (await rows_of(conversation))[-1]["content"] == "Two tasks are left."
    assert build["tasks"]  # the workspace was there to query all along


async def test_a_corrected_tool_call_after_a_garbled_one_goes_on_normally(model_endpoint, alice):
    await database_sync_to_async(build_workspace)(alice, tag="alice")
    model_endpoint.script(
        Reply.tool_call("query_tasks", "{status: todo"), Reply.tool_call("query_tasks", {"status": "todo"}), Reply.text("Two to do.")
    )
    conversation = await new_conversation(alice)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="what is left?")
    await agent.run_pending_turns(conversation.pk)
    rows = await rows_of(conversation)
    assert rows[-1]["role"] == "assistant" and rows[-1]["content"] == "Two to do."
    assert sum(1 for r in rows if r["role"] == Message.Role.TOOL and r["metadata"].get("malformed")) == 1
