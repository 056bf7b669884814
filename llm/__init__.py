"""The provider boundary. Imports no Clarion app; `client_from_settings` is the one Django touchpoint."""
from __future__ import annotations

from llm.errors import LLMError
from llm.types import ChatMessage, Completion, LLMClient, StreamDone, StreamRestart, TextDelta, ToolCall, ToolSpec, Usage

__all__ = [
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
    "build_client",
    "client_from_settings",
]


def build_client(
    *, base_url: str, api_key: str, model: str, timeout_seconds: float, max_retries: int, offline_stream_delay: float = 0.0
) -> LLMClient:
    """An OpenAI-compatible client when an endpoint or key is configured, else the offline engine."""
    if base_url or api_key:
        from llm.openai_compatible import OpenAICompatibleClient

        return OpenAICompatibleClient(
            base_url=base_url or None, api_key=api_key or None, model=model, timeout_seconds=timeout_seconds, max_retries=max_retries
        )
    from llm.offline import OfflineEngine

    return OfflineEngine(stream_delay=offline_stream_delay)


_cache: dict[tuple, LLMClient] = {}


def client_from_settings() -> LLMClient:
    """The process's client for the current settings (rebuilt when they change, e.g. in tests)."""
    from django.conf import settings

    key = (
        settings.LLM_BASE_URL,
        settings.LLM_API_KEY,
        settings.LLM_MODEL,
        settings.LLM_TIMEOUT_SECONDS,
        settings.LLM_MAX_RETRIES,
        settings.OFFLINE_STREAM_DELAY,
    )
    if key not in _cache:
        _cache.clear()
        _cache[key] = build_client(
            base_url=key[0], api_key=key[1], model=key[2], timeout_seconds=key[3], max_retries=key[4], offline_stream_delay=key[5]
        )
    return _cache[key]
