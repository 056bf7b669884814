"""How the knowledge pipeline calls a model: one retry policy (AIConfig.max_retries, transient
errors only, full jitter), a hard per-call timeout (AIConfig.llm_timeout_seconds), a metric and a
trace entry per attempt.

The pipeline's client is the settings' client (`llm.client_from_settings`) with the provider
client's own retries switched off, so `ai.max_retries` is the only retry budget: attempts are
not multiplied by LLM_MAX_RETRIES, and every attempt stays inside the per-call timeout.
"""
from __future__ import annotations

import asyncio
import random
import time
import weakref
from dataclasses import dataclass, field
from typing import Awaitable, Callable, TypeVar

from django.conf import settings

from knowledge.metrics import LLM_CALL_SECONDS
from llm import LLMClient, LLMError, build_client, client_from_settings

T = TypeVar("T")

BACKOFF_MAX_SECONDS = 8.0

# An AsyncOpenAI client's connection pool belongs to the event loop that opened it, and a
# management command, a test and the server each run their own loop: one client per loop.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[tuple, LLMClient]] = weakref.WeakKeyDictionary()


def knowledge_client() -> LLMClient:
    """The client for this event loop: the offline engine, or the configured endpoint without
    provider-level retries (the pipeline retries)."""
    base = client_from_settings()
    if base.is_offline:
        return base
    key = (settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL, settings.LLM_TIMEOUT_SECONDS)
    loop = asyncio.get_running_loop()
    cached = _clients.get(loop)
    if cached is None or cached[0] != key:
        client = build_client(base_url=key[0], api_key=key[1], model=key[2], timeout_seconds=key[3], max_retries=0)
        _clients[loop] = cached = (key, client)
    return cached[1]


@dataclass
class CallRecord:
    purpose: str
    attempt: int
    seconds: float
    outcome: str  # "ok" or an LLMError kind

    def as_dict(self) -> dict:
        return {"purpose": self.purpose, "attempt": self.attempt, "seconds": round(self.seconds, 4), "outcome": self.outcome}


@dataclass
class CallTrace:
    calls: list[CallRecord] = field(default_factory=list)

    @property
    def model_seconds(self) -> float:
        return sum(c.seconds for c in self.calls)


async def call_model(
    *,
    purpose: str,
    make_call: Callable[[], Awaitable[T]],
    timeout_seconds: float,
    max_retries: int,
    trace: CallTrace | None = None,
) -> T:
    """Run make_call with a hard timeout per attempt; retry transient failures only."""
    attempts = max(0, max_retries) + 1
    for attempt in range(1, attempts + 1):
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_seconds):
                result = await make_call()
        except TimeoutError:
            err = LLMError("timeout", f"The model did not answer within {timeout_seconds:g} s.")
        except LLMError as exc:
            err = exc
        else:
            _record(trace, purpose, attempt, time.perf_counter() - started, "ok")
            return result
        err.attempts = attempt
        _record(trace, purpose, attempt, time.perf_counter() - started, err.kind)
        if not err.retryable or attempt == attempts:
            raise err
        await asyncio.sleep(backoff_seconds(attempt, err))
    raise AssertionError("unreachable")


def backoff_seconds(failed_attempt: int, err: LLMError) -> float:
    if err.retry_after is not None:
        return min(BACKOFF_MAX_SECONDS, max(0.0, err.retry_after))
    base = settings.KNOWLEDGE_RETRY_BACKOFF_SECONDS
    return random.uniform(0, min(BACKOFF_MAX_SECONDS, base * 2 ** (failed_attempt - 1)))


def _record(trace: CallTrace | None, purpose: str, attempt: int, seconds: float, outcome: str) -> None:
    LLM_CALL_SECONDS.labels(purpose=purpose, outcome=outcome).observe(seconds)
    if trace is not None:
        trace.calls.append(CallRecord(purpose, attempt, seconds, outcome))
