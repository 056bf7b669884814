"""The provider boundary. Imports no Clarion app; the `*_from_settings` functions are the one Django
touchpoint, and `client_from_settings` the one client factory (chat, knowledge, auxiliary calls)."""

from __future__ import annotations

from llm.budget import CallBudget
from llm.errors import LLMError
from llm.types import ChatMessage, Completion, LLMClient, StreamDone, StreamRestart, TextDelta, ToolCall, ToolSpec, Usage

__all__ = [
    "CallBudget",
    "ChatMessage",
    "Completion",
    "LLMClient",
    "LLMError",
    "StreamDone",
    "StreamRestart",
    "TextDelta",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "auxiliary_budget",
    "budget_from_settings",
    "build_client",
    "client_from_settings",
]

# Auxiliary calls (clarification, question detection, option guessing) never retry more than once.
AUXILIARY_MAX_RETRIES_CAP = 1


def build_client(
    *,
    base_url: str,
    api_key: str,
    model: str,
    timeout_seconds: float | None = None,
    max_retries: int | None = None,
    budget: CallBudget | None = None,
    offline_stream_delay: float = 0.0,
) -> LLMClient:
    """An OpenAI-compatible client when an endpoint or key is configured, else the offline engine.

    `budget` is the default for every call; timeout_seconds (first token / whole non-streamed
    answer) and max_retries override its fields.
    """
    if base_url or api_key:
        from llm.openai_compatible import OpenAICompatibleClient

        return OpenAICompatibleClient(
            base_url=base_url or None,
            api_key=api_key or None,
            model=model,
            budget=budget,
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
        )
    from llm.offline import OfflineEngine

    return OfflineEngine(stream_delay=offline_stream_delay)


def budget_from_settings() -> CallBudget:
    """The budget of the main calls (a chat turn's streamed answer) from LLM_* settings."""
    from django.conf import settings

    return CallBudget(
        first_token_seconds=settings.LLM_TIMEOUT_SECONDS,
        idle_seconds=settings.LLM_IDLE_TIMEOUT_SECONDS,
        total_seconds=max(settings.LLM_TOTAL_TIMEOUT_SECONDS, settings.LLM_TIMEOUT_SECONDS),
        connect_seconds=settings.LLM_CONNECT_TIMEOUT_SECONDS,
        max_retries=max(0, settings.LLM_MAX_RETRIES),
    )


def auxiliary_budget() -> CallBudget:
    """The short budget of the calls that only help a turn (clarification, question detection,
    option guessing): LLM_AUX_TIMEOUT_SECONDS covers every attempt, and at most one retry fits in
    it. Their callers fall back ("no clarification", "no detection", "no guess") when it runs out."""
    from django.conf import settings

    seconds = settings.LLM_AUX_TIMEOUT_SECONDS
    return CallBudget(
        first_token_seconds=seconds,
        idle_seconds=seconds,
        total_seconds=seconds,
        connect_seconds=min(seconds, settings.LLM_CONNECT_TIMEOUT_SECONDS),
        max_retries=min(AUXILIARY_MAX_RETRIES_CAP, max(0, settings.LLM_AUX_MAX_RETRIES)),
        backoff_base=0.25,
        backoff_max=1.0,
    )


_cache: dict[tuple, LLMClient] = {}


def client_from_settings(*, max_retries: int | None = None) -> LLMClient:
    """The process's client for the current settings (rebuilt when they change, e.g. in tests).

    max_retries overrides LLM_MAX_RETRIES, for callers that retry under their own policy (the
    knowledge pipeline passes 0 and retries through `llm.budget.call_with_retries` itself).
    """
    from django.conf import settings

    budget = budget_from_settings()
    if max_retries is not None:
        budget = CallBudget(**{**budget.__dict__, "max_retries": max(0, max_retries)})
    key = (settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL, settings.OFFLINE_STREAM_DELAY, budget)
    if key not in _cache:
        if len(_cache) > 8:  # settings changed (tests): drop the old clients
            _cache.clear()
        _cache[key] = build_client(base_url=key[0], api_key=key[1], model=key[2], budget=budget, offline_stream_delay=key[3])
    return _cache[key]
