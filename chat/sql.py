"""`chat`'s statements written in SQL, the reads every turn makes: whether a conversation's
newest request still waits for its turn (asked twice on every turn, before and after it holds
the lock), the history the model reads, and whether the person pressed "Stop generating" (asked
while a reply streams). Built by the ORM, each cost more to compile than to run. Private to
`chat`: the services, selectors and the stop check call the typed functions.
"""

from __future__ import annotations

import datetime as dt
import uuid

from django.db import connection

from chat.models import Conversation, Message

_M, _C = Message._meta.db_table, Conversation._meta.db_table

# A turn is over when it wrote a final answer (an assistant message without tool calls) or an error.
_NEWEST_REQUEST_AND_ANSWER = (
    f"SELECT max(id) FILTER (WHERE role = %(user)s), "
    f"max(in_reply_to_id) FILTER (WHERE role = %(error)s OR (role = %(assistant)s AND tool_calls = '[]'::jsonb)) "
    f"FROM {_M} WHERE conversation_id = %(conversation)s"
)

# Error messages are for people only; tool calls whose arguments could not be read (and their
# error results) are left out, so a retry starts from the request.
_HISTORY = (
    f"SELECT * FROM {_M} WHERE conversation_id = %(conversation)s AND role <> %(error)s "
    "AND NOT (metadata @> '{\"malformed\": true}'::jsonb) ORDER BY id DESC LIMIT %(limit)s"
)

_STOP_REQUESTED_SINCE = f"SELECT EXISTS (SELECT 1 FROM {_C} WHERE id = %(conversation)s AND stop_requested_at >= %(since)s)"


def newest_request_and_answer(*, conversation_id: uuid.UUID) -> tuple[int | None, int | None]:
    """(the newest user message's id, the newest request a finished turn answered), each None
    when there is none."""
    with connection.cursor() as cursor:
        cursor.execute(
            _NEWEST_REQUEST_AND_ANSWER,
            {
                "conversation": conversation_id,
                "user": Message.Role.USER.value,
                "error": Message.Role.ERROR.value,
                "assistant": Message.Role.ASSISTANT.value,
            },
        )
        last_user, answered = cursor.fetchone()
    return last_user, answered


def newest_messages_for_model(*, conversation_id: uuid.UUID, limit: int) -> list[Message]:
    """The conversation's newest `limit` messages the model may read, newest first."""
    return list(Message.objects.raw(_HISTORY, {"conversation": conversation_id, "error": Message.Role.ERROR.value, "limit": limit}))


def stop_requested_since(*, conversation_id: uuid.UUID, since: dt.datetime) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_STOP_REQUESTED_SINCE, {"conversation": conversation_id, "since": since})
        row = cursor.fetchone()
    return bool(row and row[0])
