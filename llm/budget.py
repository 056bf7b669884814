"""How long a model call may take and how it is retried: the one policy of the LLM boundary.

Every caller — the chat's streamed turns, the knowledge pipeline, the short auxiliary calls
(clarification, question detection, option guessing) — describes its limits with a
`CallBudget`; the OpenAI-compatible client and `knowledge.llm_calls` both retry through
`call_with_retries` (non-streamed calls) or `CallBudget.next_delay` (the stream loop, which
must also tell the UI to discard partial text between attempts).

Retry rules: transient failures only (timeouts, 429 honouring Retry-After, 5xx, dropped
streams, garbled bodies), never 400/401/403 or an answer that fails its schema; full-jitter
exponential back-off; and never past the call's overall deadline.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, replace
from typing import Awaitable, Callable, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_any
from tenacity.stop import stop_base

from llm.errors import LLMError

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]
# (attempt number, seconds the attempt took, "ok" or the LLMError kind)
AttemptHook = Callable[[int, float, str], None]


@dataclass(frozen=True)
class CallBudget:
    """Limits of one model call, all attempts included.

    first_token_seconds: from sending the request to the first streamed chunk; for a call that
        is not streamed, the whole answer (it arrives in one piece).
    idle_seconds: streaming only, the longest silence allowed between two chunks. A model that
        keeps sending is never cut off by the first-token limit, however long its answer.
    total_seconds: the generous cap on the whole call: every attempt and back-off included.
    connect_seconds: opening the TCP connection to the endpoint.
    max_retries: attempts after the first one, for transient failures only.
    """

    first_token_seconds: float = 60.0
    idle_seconds: float = 30.0
    total_seconds: float = 600.0
    connect_seconds: float = 10.0
    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_max: float = 8.0

    def __post_init__(self) -> None:
        for name in ("first_token_seconds", "idle_seconds", "total_seconds", "connect_seconds"):
            if not getattr(self, name) > 0:
                raise ValueError(f"CallBudget.{name} must be positive")
        if self.max_retries < 0 or self.backoff_base < 0 or self.backoff_max < 0:
            raise ValueError("CallBudget retries and back-off must not be negative")

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def with_first_token(self, seconds: float | None) -> CallBudget:
        """This budget with a per-call first-token (non-streamed: whole-answer) timeout."""
        if seconds is None:
            return self
        return replace(self, first_token_seconds=seconds, total_seconds=max(self.total_seconds, seconds))

    def next_delay(self, failed_attempt: int, err: LLMError) -> float:
        """Seconds to wait before the attempt after `failed_attempt` (1-based)."""
        if err.retry_after is not None:
            return min(self.backoff_max, max(0.0, err.retry_after))
        # Full jitter: spreads retries of many concurrent chats over the window.
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (failed_attempt - 1)))

    def should_retry(self, err: LLMError, *, failed_attempt: int, delay: float, remaining: float) -> bool:
        """Another attempt only for a transient error, within max_retries, and when there is
        still time left for it after the back-off."""
        return err.retryable and failed_attempt < self.attempts and delay < remaining


def total_timeout_error(budget: CallBudget) -> LLMError:
    return LLMError("timeout", f"The model's answer took longer than {budget.total_seconds:g} s.")


def first_token_timeout_error(seconds: float) -> LLMError:
    return LLMError("timeout", f"The model did not answer within {seconds:g} s.")


def idle_timeout_error(seconds: float) -> LLMError:
    return LLMError("timeout", f"The model stopped sending its answer for {seconds:g} s.")


class _PastDeadline(stop_base):
    """Stop when the back-off just chosen would end past the call's overall cap (tenacity asks
    before sleeping; `upcoming_sleep` is that back-off)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return time.monotonic() + (retry_state.upcoming_sleep or 0.0) >= self.deadline


async def call_with_retries(
    attempt_call: Callable[[], Awaitable[T]],
    *,
    budget: CallBudget,
    map_error: Callable[[BaseException, float], LLMError] | None = None,
    on_attempt: AttemptHook | None = None,
    sleep: Sleep = asyncio.sleep,
) -> T:
    """Run a non-streamed call under `budget`: each attempt gets first_token_seconds (cut
    short by the overall deadline), transient failures are retried with jittered back-off.

    `map_error(exc, timeout)` turns a provider exception into an LLMError (LLMErrors and
    timeouts are handled here). The raised LLMError carries `.attempts`.
    """
    started = time.monotonic()
    deadline = started + budget.total_seconds

    async def one_attempt(number: int) -> T:
        remaining = deadline - time.monotonic()
        timeout = min(budget.first_token_seconds, remaining)
        attempt_started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                result = await attempt_call()
        except BaseException as exc:
            if isinstance(exc, TimeoutError):
                # Cut short by the overall cap (a budget whose cap is its first-token limit, like the
                # auxiliary one, simply "did not answer").
                capped = timeout < budget.first_token_seconds and budget.total_seconds > budget.first_token_seconds
                err = total_timeout_error(budget) if capped else first_token_timeout_error(budget.first_token_seconds)
            elif isinstance(exc, LLMError):
                err = exc
            elif isinstance(exc, Exception) and map_error is not None:
                err = map_error(exc, timeout)
            else:
                raise  # cancellation and bugs are not the model's failures
            err.attempts = number
            if on_attempt:
                on_attempt(number, time.monotonic() - attempt_started, err.kind)
            if err is exc:
                raise
            raise err from exc
        if on_attempt:
            on_attempt(number, time.monotonic() - attempt_started, "ok")
        return result

    def wait(state: RetryCallState) -> float:
        err = state.outcome.exception() if state.outcome else None
        return budget.next_delay(state.attempt_number, err) if isinstance(err, LLMError) else 0.0

    retrying = AsyncRetrying(
        stop=stop_any(stop_after_attempt(budget.attempts), _PastDeadline(deadline)),
        retry=retry_if_exception(lambda exc: isinstance(exc, LLMError) and exc.retryable),
        wait=wait,
        sleep=sleep,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await one_attempt(attempt.retry_state.attempt_number)
    raise AssertionError("unreachable")  # reraise=True: the last failure propagates


__all__ = [
    "AttemptHook",
    "CallBudget",
    "call_with_retries",
    "first_token_timeout_error",
    "idle_timeout_error",
    "total_timeout_error",
]
