"""OpenAICompatibleClient through the real openai SDK against the fake HTTP server."""

from __future__ import annotations

import json
import logging
import socket
import time

import openai
import pytest
from pydantic import BaseModel

from llm.errors import LLMError
from llm.openai_compatible import OpenAICompatibleClient, _sse_reads
from llm.types import ChatMessage, Completion, LLMClient, StreamDone, StreamRestart, TextDelta, ToolSpec
from tests.fake_openai import FakeOpenAI, Reply

API_KEY = "sk-test-SECRET-0123456789"
MESSAGES = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Say hello please")]


def make_client(fake: FakeOpenAI, **overrides) -> OpenAICompatibleClient:
    options = dict(
        base_url=fake.base_url,
        api_key=API_KEY,
        model="test-model",
        timeout_seconds=2,
        max_retries=2,
        backoff_base=0.01,
        backoff_max=0.05,
    )
    options.update(overrides)
    return OpenAICompatibleClient(**options)


async def collect(client: OpenAICompatibleClient, **kwargs) -> list:
    return [event async for event in client.stream(MESSAGES, **kwargs)]


def assert_no_key(err: LLMError) -> None:
    for text in (str(err), repr(err), err.user_message, str(err.args)):
        assert API_KEY not in text


# ---------------------------------------------------------------- complete


async def test_complete_plain_text(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("Hello there, friend."))
    client = make_client(fake_openai)

    result = await client.complete(MESSAGES)

    assert isinstance(result, Completion)
    assert result.content == "Hello there, friend."
    assert result.tool_calls == []
    assert result.finish_reason == "stop"
    assert result.attempts == 1
    assert result.model == "test-model"
    assert result.usage.prompt_tokens == 5 and result.usage.completion_tokens == 3
    assert result.usage.total_tokens == 8
    sent = fake_openai.requests[0]
    assert sent["model"] == "test-model"
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello please"},
    ]
    assert "tools" not in sent
    assert fake_openai.request_headers[0]["authorization"] == f"Bearer {API_KEY}"
    assert fake_openai.request_headers[0]["content-type"] == "application/json"


def test_client_satisfies_protocol_and_has_safe_name(fake_openai: FakeOpenAI) -> None:
    client = make_client(fake_openai, base_url="https://user:pw@api.example.com/v1", model="gpt-4o-mini")
    assert isinstance(client, LLMClient)
    assert client.is_offline is False
    assert client.name == "OpenAI-compatible · gpt-4o-mini @ api.example.com"


async def test_complete_sends_tools_and_history_and_returns_tool_calls(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.tool_call("create_task", {"title": "Buy milk"}, id="call_a"))
    client = make_client(fake_openai)
    tool = ToolSpec(
        name="create_task",
        description="Create a task",
        parameters={"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
    )
    history = MESSAGES + [
        ChatMessage(role="assistant", tool_calls=[{"id": "call_0", "name": "list_tasks", "arguments": "{}"}]),
        ChatMessage(role="tool", tool_call_id="call_0", name="list_tasks", content="[]"),
    ]

    result = await client.complete(history, tools=[tool])
    await client.complete(history, tools=[tool, tool.model_copy(update={"name": "list_tasks"})])  # the first's encoding is reused

    assert result.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in result.tool_calls] == [("call_a", "create_task", {"title": "Buy milk"})]
    sent = fake_openai.requests[0]
    assert sent["tools"] == [{"type": "function", "function": tool.model_dump()}]
    assert fake_openai.requests[1]["tools"] == [{"type": "function", "function": tool.model_dump()}] + [
        {"type": "function", "function": {**tool.model_dump(), "name": "list_tasks"}}
    ]
    assert sent["messages"][2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "list_tasks", "arguments": "{}"}}],
    }
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "call_0", "content": "[]"}


# ---------------------------------------------------------------- stream


async def test_stream_yields_deltas_then_done(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("The quick brown fox jumps"))
    events = await collect(make_client(fake_openai))

    deltas = [e for e in events if isinstance(e, TextDelta)]
    # One delta per read from the network: how many depends on how the words arrived.
    assert 1 <= len(deltas) <= 5
    assert "".join(d.text for d in deltas) == "The quick brown fox jumps"
    assert isinstance(events[-1], StreamDone)
    assert not any(isinstance(e, StreamRestart) for e in events)
    done = events[-1].completion
    assert done.content == "The quick brown fox jumps"
    assert done.finish_reason == "stop"
    assert done.usage.completion_tokens == 5 and done.usage.total_tokens == done.usage.prompt_tokens + 5
    sent = fake_openai.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


async def test_stream_assembles_two_fragmented_tool_calls(fake_openai: FakeOpenAI) -> None:
    args_a = {"title": "Write the quarterly report", "due": "2025-01-31", "tags": ["work", "q4"]}
    args_b = '{"query": "budget notes"}'
    fake_openai.script(Reply.tool_call("create_task", args_a, id="call_a").and_tool_call("search_notes", args_b, id="call_b"))
    events = await collect(make_client(fake_openai))

    assert not any(isinstance(e, TextDelta) for e in events)
    done = events[-1]
    assert isinstance(done, StreamDone)
    calls = done.completion.tool_calls
    assert [(c.id, c.name) for c in calls] == [("call_a", "create_task"), ("call_b", "search_notes")]
    assert json.loads(calls[0].arguments) == args_a
    assert calls[1].arguments == args_b  # raw text preserved byte for byte
    assert done.completion.finish_reason == "tool_calls"


async def test_stream_cut_halfway_restarts_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        Reply.text("one two three four five six").with_(cut_after=3),  # role chunk + 2 words, then drop
        Reply.text("one two three four five six"),
    )
    events = await collect(make_client(fake_openai))

    restarts = [i for i, e in enumerate(events) if isinstance(e, StreamRestart)]
    assert len(restarts) == 1
    restart = events[restarts[0]]
    assert restart.attempt == 2 and restart.reason
    before = "".join(e.text for e in events[: restarts[0]] if isinstance(e, TextDelta))
    after = "".join(e.text for e in events[restarts[0] :] if isinstance(e, TextDelta))
    assert before == "one two"
    assert after == "one two three four five six"
    assert events[-1].completion.content == after
    assert events[-1].completion.attempts == 2
    assert len(fake_openai.requests) == 2


async def test_stream_cut_before_any_text_retries_silently(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("hi there").with_(cut_after=1), Reply.text("hi there"))
    events = await collect(make_client(fake_openai))
    assert not any(isinstance(e, StreamRestart) for e in events)
    assert events[-1].completion.content == "hi there"


async def test_stream_cut_on_every_attempt_raises_interrupted(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.text("never finishes this sentence").with_(cut_after=2)
    events: list = []
    with pytest.raises(LLMError) as info:
        async for event in make_client(fake_openai).stream(MESSAGES):
            events.append(event)

    assert info.value.kind == "stream_interrupted"
    assert info.value.retryable is True
    assert info.value.attempts == 3
    assert len(fake_openai.requests) == 3
    assert sum(isinstance(e, StreamRestart) for e in events) == 2
    assert_no_key(info.value)


async def test_stream_retries_server_error_before_first_byte(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(503, "overloaded"), Reply.text("fine now"))
    events = await collect(make_client(fake_openai))
    assert not any(isinstance(e, StreamRestart) for e in events)
    assert events[-1].completion.content == "fine now"
    assert events[-1].completion.attempts == 2


async def test_stream_bad_request_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(400, "context too long"))
    with pytest.raises(LLMError) as info:
        await collect(make_client(fake_openai))
    assert info.value.kind == "bad_request"
    assert "context too long" in info.value.user_message
    assert len(fake_openai.requests) == 1


async def test_stream_stalled_between_chunks_times_out(fake_openai: FakeOpenAI) -> None:
    # Chunks 0.1 s apart are fine; a long silence after the third is not (idle limit 0.75 s).
    fake_openai.default = Reply.text("a b c d e f g h", chunk_delay=0.1, stall_after=3, stall_seconds=30)
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        await collect(make_client(fake_openai, timeout_seconds=5, idle_timeout_seconds=0.75, max_retries=1))
    assert info.value.kind == "timeout"
    assert info.value.user_message == "The model stopped sending its answer for 0.75 s."
    assert len(fake_openai.requests) == 2
    assert time.monotonic() - started < 8  # two idle limits, not the stall nor the 5 s first-token limit


async def test_stream_garbage_is_invalid_response(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.garbage()
    with pytest.raises(LLMError) as info:
        await collect(make_client(fake_openai, max_retries=1))
    assert info.value.kind == "invalid_response"
    assert len(fake_openai.requests) == 2


def sse(*payloads: str) -> str:
    return "".join(f"data: {p}\n\n" for p in payloads)


async def test_stream_error_object_mid_answer_is_a_server_error(fake_openai: FakeOpenAI) -> None:
    first = json.dumps({"model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]})
    fake_openai.default = Reply.garbage(sse(first, json.dumps({"error": {"message": "overloaded mid-answer"}})))
    with pytest.raises(LLMError) as info:
        await collect(make_client(fake_openai, max_retries=0))
    assert info.value.kind == "server" and "overloaded mid-answer" in info.value.user_message


@pytest.mark.parametrize(
    "body",
    [
        sse("[1, 2]"),
        sse('{"choices": "not a list"}'),
        sse('{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": 3}]}}]}'),
        sse('{"choices": [{"index": 0, "delta": {"content": "ok"}}]', "[DONE]"),  # not JSON
        sse("[DONE]"),  # nothing at all
    ],
)
async def test_stream_chunks_of_the_wrong_shape_are_invalid_responses(fake_openai: FakeOpenAI, body: str) -> None:
    fake_openai.default = Reply.garbage(body)
    with pytest.raises(LLMError) as info:
        await collect(make_client(fake_openai, max_retries=0))
    assert info.value.kind == "invalid_response"


class _Body:
    """A response whose body arrives in the given pieces, as reads from the network would."""

    def __init__(self, *pieces: bytes, fail: bool = False):
        self.pieces, self.fail, self.request = pieces, fail, None

    async def aiter_bytes(self):
        for piece in self.pieces:
            yield piece
        if self.fail:
            raise ConnectionResetError("peer went away")


async def reads_of(body: _Body) -> list[list[object]]:
    return [chunks async for chunks in _sse_reads(body)]


async def test_stream_reader_gives_the_chunks_of_each_read_whatever_the_line_endings() -> None:
    body = _Body(
        b'data: {"a"',  # no line ends yet: nothing to give
        b":\r",  # a CR that may be half of a CRLF (it is: the event goes on)
        b'\ndata: 1}\r\n\r\ndata: {"b": 2}\r\rdata: [1,',  # two events complete (CRLF, then bare CRs); a third begun
        b" 2]\n\n",
        b': a comment\n\nevent: x\nid: 7\ndata: {"c":\ndata: 3}',  # two data lines; the body ends mid-event
    )
    assert await reads_of(body) == [[{"a": 1}, {"b": 2}], [[1, 2]], [{"c": 3}]]


async def test_stream_reader_stops_at_done_and_reports_a_cut_body() -> None:
    assert await reads_of(_Body(b'data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"b": 2}\n\n')) == [[{"a": 1}]]
    with pytest.raises(openai.APIConnectionError, match="cut off"):
        await reads_of(_Body(b'data: {"a": 1}\n\n', fail=True))


# ---------------------------------------------------------------- retries


async def test_retry_on_500_then_success(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(500, "boom"), Reply.text("recovered"))
    result = await make_client(fake_openai).complete(MESSAGES)
    assert result.content == "recovered"
    assert result.attempts == 2
    assert len(fake_openai.requests) == 2


async def test_retry_on_429_honours_retry_after(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(429, "slow down", headers={"Retry-After": "0.3"}), Reply.text("ok then"))
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    client = make_client(fake_openai, backoff_max=5, sleep=fake_sleep)
    result = await client.complete(MESSAGES)
    assert result.content == "ok then" and result.attempts == 2
    assert slept == [0.3]


async def test_retry_after_is_capped_by_backoff_max(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(429, "slow down", headers={"Retry-After": "120"}), Reply.text("ok"))
    started = time.monotonic()
    result = await make_client(fake_openai, backoff_max=0.05).complete(MESSAGES)
    assert result.attempts == 2
    assert time.monotonic() - started < 1


async def test_rate_limited_until_retries_exhausted(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.error(429, "slow down")
    with pytest.raises(LLMError) as info:
        await make_client(fake_openai).complete(MESSAGES)
    assert info.value.kind == "rate_limited" and info.value.status == 429
    assert len(fake_openai.requests) == 3


async def test_jittered_backoff_stays_within_bounds(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.error(502, "a"), Reply.error(502, "b"), Reply.text("ok"))
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    client = make_client(fake_openai, backoff_base=1.0, backoff_max=1.5, sleep=fake_sleep)
    assert (await client.complete(MESSAGES)).attempts == 3
    assert len(slept) == 2
    assert 0 <= slept[0] <= 1.0 and 0 <= slept[1] <= 1.5


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_no_retry_on_bad_request(fake_openai: FakeOpenAI, status: int) -> None:
    fake_openai.script(Reply.error(status, "Invalid 'messages': " + "x" * 300))
    with pytest.raises(LLMError) as info:
        await make_client(fake_openai).complete(MESSAGES)
    err = info.value
    assert err.kind == "bad_request" and err.status == status and err.retryable is False
    assert len(fake_openai.requests) == 1
    assert err.user_message.startswith(f"The model endpoint rejected the request ({status}): Invalid 'messages': ")
    assert len(err.user_message) < 300


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_error_not_retried_and_key_redacted(fake_openai: FakeOpenAI, status: int) -> None:
    # Some servers echo the offending key back in the error text.
    fake_openai.script(Reply.error(status, f"Incorrect API key provided: {API_KEY}"))
    with pytest.raises(LLMError) as info:
        await make_client(fake_openai).complete(MESSAGES)
    assert info.value.kind == "auth" and info.value.status == status
    assert len(fake_openai.requests) == 1
    assert "Incorrect API key provided: ***" in info.value.user_message
    assert_no_key(info.value)


async def test_timeout_is_retried_then_reported(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.hang()
    client = make_client(fake_openai, timeout_seconds=1.0, max_retries=2)
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        await client.complete(MESSAGES)
    elapsed = time.monotonic() - started

    assert info.value.kind == "timeout" and info.value.retryable
    assert info.value.attempts == 3
    assert info.value.user_message == "The model did not answer within 1 s."
    assert len(fake_openai.requests) == 3
    assert 3.0 <= elapsed < 8


async def test_per_call_timeout_overrides_default(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("slow", delay=0.5))
    with pytest.raises(LLMError) as info:
        await make_client(fake_openai, timeout_seconds=5, max_retries=0).complete(MESSAGES, timeout=0.1)
    assert info.value.user_message == "The model did not answer within 0.1 s."


async def test_garbage_body_is_invalid_response_and_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.garbage(), Reply.text("clean"))
    result = await make_client(fake_openai).complete(MESSAGES)
    assert result.content == "clean" and result.attempts == 2


async def test_garbage_every_time_raises_invalid_response(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.garbage()
    with pytest.raises(LLMError) as info:
        await make_client(fake_openai, max_retries=1).complete(MESSAGES)
    assert info.value.kind == "invalid_response"
    assert info.value.user_message == "The model returned a response Clarion could not read."
    assert len(fake_openai.requests) == 2


async def test_endpoint_down_is_connection_error() -> None:
    with socket.socket() as s:  # grab a free port, then leave nothing listening on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    client = OpenAICompatibleClient(base_url=base_url, api_key=API_KEY, model="m", timeout_seconds=1, max_retries=1, backoff_base=0.01)
    for call in (client.complete(MESSAGES), collect(client)):
        with pytest.raises(LLMError) as info:
            await call
        assert info.value.kind == "connection" and info.value.retryable
        assert info.value.attempts == 2
        assert info.value.user_message == f"The model endpoint at {base_url} could not be reached."
        assert_no_key(info.value)


# ---------------------------------------------------------------- structured


class TaskDraft(BaseModel):
    title: str
    priority: int
    tags: list[str] = []


async def test_structured_output_parsed(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.json({"title": "Ship it", "priority": 2, "tags": ["release"]}))
    draft = await make_client(fake_openai).structured(MESSAGES, schema=TaskDraft)

    assert draft == TaskDraft(title="Ship it", priority=2, tags=["release"])
    fmt = fake_openai.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "TaskDraft"
    assert fmt["json_schema"]["schema"] == TaskDraft.model_json_schema()
    assert fmt["json_schema"]["strict"] is False


async def test_structured_output_strips_json_fence(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text('```json\n{"title": "Fenced", "priority": 1}\n```'))
    draft = await make_client(fake_openai).structured(MESSAGES, schema=TaskDraft)
    assert draft.title == "Fenced"


async def test_structured_schema_violation_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.json({"title": "No priority", "priority": "urgent"}))
    with pytest.raises(LLMError) as info:
        await make_client(fake_openai).structured(MESSAGES, schema=TaskDraft)
    assert info.value.kind == "invalid_response" and info.value.retryable is False
    assert "priority" in info.value.user_message
    assert len(fake_openai.requests) == 1


async def test_structured_non_json_answer(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("Sure! Here is your task."))
    with pytest.raises(LLMError) as info:
        await make_client(fake_openai).structured(MESSAGES, schema=TaskDraft)
    assert info.value.kind == "invalid_response" and info.value.retryable is False
    assert "not valid JSON" in info.value.user_message


# ---------------------------------------------------------------- logging


async def test_one_structured_log_line_per_call(fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    fake_openai.script(Reply.error(500, "x"), Reply.text("fine"), Reply.error(400, "nope"))
    client = make_client(fake_openai)
    with caplog.at_level(logging.INFO, logger="clarion.llm"):
        await client.complete(MESSAGES)
        with pytest.raises(LLMError):
            await client.complete(MESSAGES)

    records = [r for r in caplog.records if r.name == "clarion.llm"]
    assert len(records) == 2
    ok, failed = records
    assert (ok.outcome, ok.attempts, ok.model, ok.op) == ("ok", 2, "test-model", "complete")
    assert ok.tokens > 0 and ok.seconds >= 0
    assert (failed.outcome, failed.attempts, failed.levelno) == ("bad_request", 1, logging.WARNING)
    assert all(API_KEY not in r.getMessage() for r in records)


async def test_consumer_can_stop_reading_early(fake_openai: FakeOpenAI) -> None:
    # A UI cancel: the generator is closed mid-stream; the connection must be released
    # and the client must stay usable.
    fake_openai.script(Reply.text("one two three four five", chunk_delay=0.01), Reply.text("again"))
    client = make_client(fake_openai)
    stream = client.stream(MESSAGES)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    assert (await client.complete(MESSAGES)).content == "again"
