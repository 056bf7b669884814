from __future__ import annotations

import functools
import uuid

from project import rawsql
from questions.errors import QuestionNotFound
from questions.models import PendingQuestion, QuestionGroup

Status = PendingQuestion.Status


def question_for_user(*, user, question_id) -> PendingQuestion:
    """The user's question; QuestionNotFound (a 404) also for another user's id."""
    question = PendingQuestion.objects.select_related("group").filter(pk=question_id, user=user).first()
    if question is None:
        raise QuestionNotFound()
    return question


def group_by_id(*, group_id) -> QuestionGroup:
    """A group by id, for code acting on the group's own behalf (timers, the guesser); raises
    QuestionGroup.DoesNotExist."""
    return QuestionGroup.objects.get(pk=group_id)


def pending_deadline(*, question_id):
    """The deadline of a question still pending, or None (resolved, gone, or no clock)."""
    return PendingQuestion.objects.filter(pk=question_id, status=Status.PENDING).values_list("deadline", flat=True).first()


def is_pending(*, question_id) -> bool:
    return PendingQuestion.objects.filter(pk=question_id, status=Status.PENDING).exists()


def open_group(*, conversation_id) -> QuestionGroup | None:
    """The conversation's group still waiting for the person, if any (newest first)."""
    return QuestionGroup.objects.filter(conversation_id=conversation_id, completed_at__isnull=True).order_by("-created_at").first()


def has_open_group(*, conversation_id) -> bool:
    return QuestionGroup.objects.filter(conversation_id=conversation_id, completed_at__isnull=True).exists()


def open_group_sql(conversation_param: str) -> str:
    """`has_open_group` as an SQL expression, for a hot statement written in SQL (one that runs
    around every turn: building it through the ORM costs more CPU than running it).
    `conversation_param` is the placeholder of the conversation id, e.g. "%(conversation)s"."""
    table = QuestionGroup._meta.db_table
    return f"EXISTS (SELECT 1 FROM {table} WHERE conversation_id = {conversation_param} AND completed_at IS NULL)"


def group_questions(group: QuestionGroup) -> list[PendingQuestion]:
    """The group's questions in order, each with `group` set to this instance (one statement)."""
    return questions_of_groups({group.pk: group}).get(group.pk, [])


def questions_of_groups(groups: dict[uuid.UUID, QuestionGroup]) -> dict[uuid.UUID, list[PendingQuestion]]:
    """{group id: its questions in order, each with `group` set} for the groups given by id, in
    one statement (it runs on every answer and every batch of answers, so it is written in SQL)."""
    found: dict[uuid.UUID, list[PendingQuestion]] = {}
    for q in rawsql.fetch_models(PendingQuestion, _questions_of_groups_sql(), {"groups": rawsql.as_json(list(groups))}):
        q.group = groups[q.group_id]
        found.setdefault(q.group_id, []).append(q)
    return found


@functools.cache
def _questions_of_groups_sql() -> str:
    return (
        f"SELECT {rawsql.columns(PendingQuestion, 'q')} FROM {PendingQuestion._meta.db_table} q "
        f"WHERE q.group_id IN {rawsql.uuids_in('%(groups)s')} ORDER BY q.group_id, q.position"
    )


def groups_for_conversation(*, conversation_id) -> list[QuestionGroup]:
    return list(QuestionGroup.objects.filter(conversation_id=conversation_id).prefetch_related("questions").order_by("created_at"))


@functools.cache
def clarification_rounds_sql() -> str:
    """Clarification rounds asked per request in the conversation `%(conversation)s` (at most two
    are allowed per request): rows of (the request's message id, rounds)."""
    return (
        f"SELECT (payload->>'request_message_id')::bigint, count(*) FROM {QuestionGroup._meta.db_table} "
        f"WHERE conversation_id = %(conversation)s AND kind = '{QuestionGroup.Kind.CLARIFY.value}' GROUP BY 1"
    )


_STATUS_FOR_MODEL: dict[str, str] = {Status.ANSWERED: "answered", Status.TIMED_OUT: "timed_out", Status.CANCELLED: "skipped"}


def answers_for_model(questions: list[PendingQuestion]) -> dict:
    """What the model receives per question: the answer(s), whether typed, which options, and
    whether the person answered or the deadline applied a default (or none)."""
    rows = []
    for q in questions:
        row = {
            "question": q.question,
            "status": _STATUS_FOR_MODEL.get(q.status, q.status),
            "answers": ([q.answer] if q.is_custom else [q.options[i]["label"] for i in q.selected_indexes]),
            "is_custom": q.is_custom,
            "selected_indexes": q.selected_indexes,
        }
        if q.status == Status.TIMED_OUT:
            row["default_applied"] = bool(q.selected_indexes)
            row["note"] = (
                "The user did not answer in time; the most likely option was applied as the default."
                if q.selected_indexes
                else "The user did not answer in time and there was no default; treat it as unanswered."
            )
        elif q.status == Status.CANCELLED:
            row["note"] = "The user skipped this question; use your best judgement or ask differently."
        rows.append(row)
    return {"answers": rows}


def display_order(question: PendingQuestion) -> list[int]:
    """Option indexes in the order the card shows them: as asked. Guesses add a confidence and
    mark the default but never reorder, so the key on an option (a, b, c… = 1, 2, 3…) is the
    same in the box, on the keyboard and in the shorthand, and does not move under a finger."""
    return list(range(len(question.options)))
