"""How the knowledge pipeline calls a model: the LLM boundary's one retry policy
(`llm.budget.call_with_retries`) with the environment's per-call limits (LLM_TIMEOUT_SECONDS,
LLM_MAX_RETRIES — shared with the chat), plus a metric and a trace entry per attempt.

The pipeline's client comes from the one client factory with the provider client's own retries
switched off (`client_from_settings(max_retries=0)`), so LLM_MAX_RETRIES is counted once: attempts
are not multiplied, and every attempt stays inside the per-call timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, TypeVar

from django.conf import settings

from knowledge.metrics import LLM_CALL_SECONDS
from llm import CallBudget, LLMClient, client_from_settings
from llm.budget import call_with_retries

T = TypeVar("T")


def knowledge_client() -> LLMClient:
    """The offline engine, or the configured endpoint without provider-level retries (the
    pipeline retries)."""
    return client_from_settings(max_retries=0)


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
    budget = CallBudget(
        first_token_seconds=timeout_seconds,
        idle_seconds=timeout_seconds,
        # Each attempt has the whole per-call timeout; the pipeline's request timeout is the cap.
        total_seconds=timeout_seconds * (max(0, max_retries) + 1) + 60,
        max_retries=max(0, max_retries),
        backoff_base=settings.KNOWLEDGE_RETRY_BACKOFF_SECONDS,
    )

    def record(attempt: int, seconds: float, outcome: str) -> None:
        LLM_CALL_SECONDS.labels(purpose=purpose, outcome=outcome).observe(seconds)
        if trace is not None:
            trace.calls.append(CallRecord(purpose, attempt, seconds, outcome))

    return await call_with_retries(make_call, budget=budget, on_attempt=record)
