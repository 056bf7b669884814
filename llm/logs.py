"""Structured logs: a per-turn id on every line logged while a turn runs, and the `extra=` fields of
a record (the knowledge pipeline's gate decision, sources, verification, per-node latency; a model
call's op, attempts and outcome) shown in both formats.

- `LOG_FORMAT=plain` (default): the usual line, then ` key=value` for each extra field the message
  does not already show.
- `LOG_FORMAT=json`: one JSON object per line (python-json-logger), extra fields as keys.

settings.LOGGING wires `ContextFilter` on the console handler and picks the formatter. A turn calls
`begin_turn(...)` once; tasks it spawns inherit the id (contextvars are copied into new tasks).
"""

from __future__ import annotations

import contextvars
import json
import logging
import uuid
from typing import Any

from django.http import HttpRequest

_turn_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("clarion_turn_id", default=None)
_conversation_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("clarion_conversation_id", default=None)

# Attributes every LogRecord has; anything else on a record came from `extra=` (or a filter).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


def begin_turn(*, conversation_id: object | None = None) -> str:
    """Start a new per-turn id for this task (and the tasks it spawns); returns it."""
    turn_id = uuid.uuid4().hex[:12]
    _turn_id.set(turn_id)
    _conversation_id.set(str(conversation_id) if conversation_id is not None else None)
    return turn_id


def current_turn_id() -> str | None:
    return _turn_id.get()


class ContextFilter(logging.Filter):
    """Adds `turn_id` (and `conversation` when known) to records logged inside a turn."""

    def filter(self, record: logging.LogRecord) -> bool:
        turn_id = _turn_id.get()
        if turn_id is not None and not hasattr(record, "turn_id"):
            record.turn_id = turn_id
        conversation = _conversation_id.get()
        if conversation is not None and not hasattr(record, "conversation"):
            record.conversation = conversation
        return True


class WithoutQueryStrings(logging.Filter):
    """Django logs its `request` with every error line (`extra={"request": ...}`), and a request's
    repr carries the whole URL: a token someone put in a query string would land in the log. The
    line keeps the method and path only."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest):
            record.request = f"{request.method} {request.path}"
        return True


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class PlainFormatter(logging.Formatter):
    """The plain line plus ` key=value` for the extra fields the message doesn't already show."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        fields = extra_fields(record)
        message = record.getMessage()
        parts = []
        for key, value in fields.items():
            if value is None or value == "" or f"{key}=" in message:
                continue
            # A dict that only repeats other extra fields (the pipeline's `kb` bundle) adds nothing.
            if isinstance(value, dict) and value and all(k in fields for k in value):
                continue
            parts.append(f"{key}={_plain(value)}")
        return f"{line} {' '.join(parts)}" if parts else line


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if (not value or any(c.isspace() or c in '"=' for c in value)) else value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return str(value)


__all__ = ["ContextFilter", "PlainFormatter", "WithoutQueryStrings", "begin_turn", "current_turn_id", "extra_fields"]
