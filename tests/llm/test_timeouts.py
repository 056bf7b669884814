"""The three limits of a model call (llm/budget.py) against the fake server through the real SDK:
first token, idle between chunks, and the overall cap. A steady stream outlives the first-token
limit; a hang or a stall is cut at its own limit and retried; nothing runs past the cap.

Limits are ~1 s and the slow parts of the fake are far longer (30 s stalls, endless hangs), so a
loaded machine cannot blur which limit decided."""

from __future__ import annotations

import time

import pytest

from llm.budget import CallBudget
from llm.errors import LLMError
from llm.openai_compatible import OpenAICompatibleClient
from llm.types import ChatMessage, StreamDone, StreamRestart, TextDelta
from tests.fake_openai import FakeOpenAI, Reply

MESSAGES = [ChatMessage(role="user", content="Tell me a long story")]
STORY = " ".join(f"word{i}" for i in range(15))


def make_client(fake: FakeOpenAI, **budget) -> OpenAICompatibleClient:
    defaults = dict(first_token_seconds=1.0, idle_seconds=2.0, total_seconds=60, max_retries=2, backoff_base=0.01, backoff_max=0.05)
    return OpenAICompatibleClient(base_url=fake.base_url, api_key="sk-test", model="m", budget=CallBudget(**{**defaults, **budget}))


async def collect(client: OpenAICompatibleClient, **kwargs) -> list:
    return [event async for event in client.stream(MESSAGES, **kwargs)]


async def test_a_steady_stream_longer_than_the_first_token_limit_finishes(fake_openai: FakeOpenAI) -> None:
    # 15 words 0.15 s apart: over 2 s of streaming against a 1 s first-token limit.
    fake_openai.script(Reply.text(STORY, chunk_delay=0.15))
    started = time.monotonic()

    events = await collect(make_client(fake_openai))

    assert time.monotonic() - started > 2.0  # it really streamed past the first-token limit
    assert not any(isinstance(e, StreamRestart) for e in events)
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.completion.content == STORY and done.completion.attempts == 1
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == STORY
    assert len(fake_openai.requests) == 1


async def test_a_model_that_never_answers_hits_the_first_token_limit_on_each_attempt(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.hang()
    started = time.monotonic()

    with pytest.raises(LLMError) as info:
        await collect(make_client(fake_openai, max_retries=1))

    assert info.value.kind == "timeout" and info.value.attempts == 2
    assert info.value.user_message == "The model did not answer within 1 s."
    assert len(fake_openai.requests) == 2
    assert 2.0 <= time.monotonic() - started < 6


async def test_headers_without_a_first_chunk_hit_the_first_token_limit(fake_openai: FakeOpenAI) -> None:
    # llama.cpp and Ollama send the response headers at once, then think: still "no answer".
    fake_openai.script(Reply.text(STORY, stall_after=0, stall_seconds=30))
    fake_openai.default = Reply.text("quick")
    started = time.monotonic()

    events = await collect(make_client(fake_openai, idle_seconds=10))

    assert events[-1].completion.content == "quick" and events[-1].completion.attempts >= 2
    assert not any(isinstance(e, StreamRestart) for e in events)  # nothing was shown, nothing to discard
    assert time.monotonic() - started < 8  # the 1 s first-token limit decided, not the 10 s idle one


async def test_a_stall_mid_stream_restarts_the_answer_visibly(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text(STORY, stall_after=4, stall_seconds=30))
    fake_openai.default = Reply.text("all of it")
    started = time.monotonic()

    events = await collect(make_client(fake_openai, first_token_seconds=15, idle_seconds=1.0))

    restarts = [e for e in events if isinstance(e, StreamRestart)]
    assert restarts[0].attempt == 2 and restarts[0].reason == "The model stopped sending its answer for 1 s."
    assert events[-1].completion.content == "all of it"
    assert time.monotonic() - started < 10  # the idle limit, not the 15 s first-token limit, decided


async def test_the_overall_cap_ends_an_endless_stream_without_retrying(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.text(" ".join(["and"] * 400), chunk_delay=0.05)  # 20 s of steady text
    started = time.monotonic()

    with pytest.raises(LLMError) as info:
        await collect(make_client(fake_openai, first_token_seconds=2.0, total_seconds=3.0, max_retries=2))

    assert info.value.kind == "timeout"
    assert info.value.user_message == "The model's answer took longer than 3 s."
    assert len(fake_openai.requests) == 1  # no time is left for another attempt
    assert 3.0 <= time.monotonic() - started < 8


async def test_the_overall_cap_bounds_retries_of_a_non_streamed_call(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.hang()
    started = time.monotonic()

    with pytest.raises(LLMError) as info:
        await make_client(fake_openai, first_token_seconds=1.0, total_seconds=2.5, max_retries=10).complete(MESSAGES)

    assert info.value.kind == "timeout"
    assert time.monotonic() - started < 6
    assert 2 <= len(fake_openai.requests) <= 3  # not 11


async def test_a_per_call_budget_replaces_the_clients_default(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply.hang()
    client = make_client(fake_openai, first_token_seconds=30, total_seconds=60)
    started = time.monotonic()

    with pytest.raises(LLMError) as info:
        await client.complete(MESSAGES, budget=CallBudget(first_token_seconds=1.0, total_seconds=1.0, max_retries=1))

    assert info.value.kind == "timeout" and info.value.user_message == "The model did not answer within 1 s."
    assert info.value.attempts == 1  # the retry would not fit in the 1 s budget
    assert time.monotonic() - started < 5  # not the client's 30 s


def test_a_budget_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="idle_seconds"):
        CallBudget(idle_seconds=0)
    with pytest.raises(ValueError, match="negative"):
        CallBudget(max_retries=-1)
