"""`chat`'s one statement written in SQL: whether a conversation's newest request still waits for
its turn, asked twice on every turn (before and after it holds the lock). Built by the ORM, the
aggregate with its two filters cost more to compile than to run. Private to `chat`: the services
call the typed function.
"""

from __future__ import annotations

import uuid

from django.db import connection

from chat.models import Message

_M = Message._meta.db_table

# A turn is over when it wrote a final answer (an assistant message without tool calls) or an error.
_NEWEST_REQUEST_AND_ANSWER = (
    f"SELECT max(id) FILTER (WHERE role = %(user)s), "
    f"max(in_reply_to_id) FILTER (WHERE role = %(error)s OR (role = %(assistant)s AND tool_calls = '[]'::jsonb)) "
    f"FROM {_M} WHERE conversation_id = %(conversation)s"
)


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
