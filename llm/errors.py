"""The one exception type callers of an LLMClient need to handle."""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal[
    "timeout",
    "rate_limited",
    "server",
    "connection",
    "bad_request",
    "auth",
    "invalid_response",
    "stream_interrupted",
]

# Transient by nature: the same request may well succeed a moment later.
# invalid_response defaults to retryable (a garbled body from a flaky proxy);
# schema-validation failures override this to False.
_RETRYABLE_BY_DEFAULT: frozenset[str] = frozenset(
    {"timeout", "rate_limited", "server", "connection", "invalid_response", "stream_interrupted"}
)


class LLMError(Exception):
    kind: ErrorKind
    retryable: bool
    status: int | None
    user_message: str  # one plain sentence, safe to show in the chat UI
    retry_after: float | None  # seconds, from a Retry-After header when the server sent one
    attempts: int  # how many attempts were made before giving up (set by the client)

    def __init__(
        self,
        kind: ErrorKind,
        user_message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(user_message)
        self.kind = kind
        self.user_message = user_message
        self.retryable = kind in _RETRYABLE_BY_DEFAULT if retryable is None else retryable
        self.status = status
        self.retry_after = retry_after
        self.attempts = attempts

    def __str__(self) -> str:
        return self.user_message

    def __repr__(self) -> str:
        return f"LLMError(kind={self.kind!r}, status={self.status!r}, retryable={self.retryable!r}, user_message={self.user_message!r})"


def redact(text: str, secret: str | None) -> str:
    """Remove a secret (the API key) from text that may be shown or logged."""
    if secret and len(secret) >= 4 and secret in text:
        return text.replace(secret, "***")
    return text
