"""The answer path's statements, written in SQL because they are set-based: one statement locks
every group a batch of answers touches, one writes every resolution, one every started clock,
one every completed group — however many answers arrive together. The ORM would issue one
statement per row. Rows and ids go as one JSON parameter, read on the server with
`json_to_recordset`. Also the reads every answer and every turn make (the locked groups'
questions, whether a card still waits), which cost the ORM more to build than Postgres to
answer. Private to `questions`: the selectors and services call these typed functions.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from django.db import connection

from questions.models import PendingQuestion, QuestionGroup

_Q, _G = PendingQuestion._meta.db_table, QuestionGroup._meta.db_table


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


# An UPDATE locks a row as SELECT … FOR UPDATE would, and raises the revision in the same
# statement: a transaction that rolls back leaves the revision as it was. Groups are locked in
# id order, as any other process locking several does, so two never wait on each other in a cycle.
_LOCK_GROUPS_OF_QUESTIONS = (
    f"WITH wanted AS (SELECT g.id FROM {_G} g WHERE g.id IN ("
    f"SELECT q.group_id FROM {_Q} q JOIN json_to_recordset(%(wanted)s::json) AS r(id uuid, user_id bigint) "
    "ON q.id = r.id AND (r.user_id IS NULL OR q.user_id = r.user_id)) ORDER BY g.id FOR UPDATE) "
    f"UPDATE {_G} g SET revision = g.revision + 1 FROM wanted WHERE g.id = wanted.id RETURNING g.*"
)
_LOCK_GROUP = f"UPDATE {_G} g SET revision = g.revision + 1 WHERE g.id = %(key)s AND g.user_id = %(user)s RETURNING g.*"
# A resolution is written only over a pending question: a second resolver never overwrites one.
_RESOLVE = (
    f"UPDATE {_Q} q SET status = v.status, answer = v.answer, selected_indexes = v.indexes, is_custom = v.custom, "
    "resolved_via = v.via, resolved_at = %(now)s, paused_at = NULL "
    "FROM json_to_recordset(%(rows)s::json) AS v(id uuid, status text, answer text, indexes jsonb, custom bool, via text) "
    "WHERE q.id = v.id AND q.status = %(pending)s RETURNING q.id"
)
_START_CLOCKS = (
    f"UPDATE {_Q} q SET deadline = v.deadline FROM json_to_recordset(%(rows)s::json) AS v(id uuid, deadline timestamptz) WHERE q.id = v.id"
)
_QUESTIONS_OF_GROUPS = f"SELECT * FROM {_Q} WHERE group_id = ANY(%(groups)s) ORDER BY group_id, position"
_HAS_OPEN_GROUP = f"SELECT EXISTS (SELECT 1 FROM {_G} WHERE conversation_id = %(conversation)s AND completed_at IS NULL)"
_COMPLETE = f"UPDATE {_G} SET completed_at = %(now)s WHERE id IN (SELECT id::uuid FROM json_array_elements_text(%(ids)s::json) AS ids(id))"


def lock_groups_of_questions(wanted: list[tuple[uuid.UUID, int | None]]) -> list[QuestionGroup]:
    """Lock the groups of these (question id, owner's user id or None for any) and raise their
    revisions; the groups as they are now."""
    rows = [{"id": str(key), "user_id": user_id} for key, user_id in wanted]
    return list(QuestionGroup.objects.raw(_LOCK_GROUPS_OF_QUESTIONS, {"wanted": _json(rows)}))


def lock_group(*, group_id: uuid.UUID, user_id: int) -> QuestionGroup | None:
    """`lock_groups_of_questions` for one group named by its own id (the user's)."""
    return next(iter(QuestionGroup.objects.raw(_LOCK_GROUP, {"key": group_id, "user": user_id})), None)


def resolve(questions: list[PendingQuestion], *, now: dt.datetime) -> set[uuid.UUID]:
    """Write the resolutions of these questions (status, answer, …) over those still pending;
    the ids written."""
    rows = [
        {"id": str(q.pk), "status": q.status, "answer": q.answer, "indexes": q.selected_indexes, "custom": q.is_custom, "via": q.resolved_via}
        for q in questions
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(_RESOLVE, {"rows": _json(rows), "now": now, "pending": PendingQuestion.Status.PENDING})
        return {row[0] for row in cursor.fetchall()}


def start_clocks(questions: list[PendingQuestion]) -> None:
    """Write the deadlines of questions whose clocks started."""
    rows = [{"id": str(q.pk), "deadline": q.deadline.isoformat() if q.deadline else None} for q in questions]
    with connection.cursor() as cursor:
        cursor.execute(_START_CLOCKS, {"rows": _json(rows)})


def complete(groups: list[QuestionGroup], *, now: dt.datetime) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_COMPLETE, {"ids": _json([str(g.pk) for g in groups]), "now": now})


def questions_of_groups(group_ids: list[uuid.UUID]) -> list[PendingQuestion]:
    """The questions of these groups, each group's in order."""
    return list(PendingQuestion.objects.raw(_QUESTIONS_OF_GROUPS, {"groups": group_ids}))


def has_open_group(*, conversation_id: uuid.UUID) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_HAS_OPEN_GROUP, {"conversation": conversation_id})
        row = cursor.fetchone()
    return bool(row and row[0])
