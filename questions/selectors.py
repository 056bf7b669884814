from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from django.db.models import Count
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce

from questions import sql
from questions.errors import QuestionNotFound
from questions.models import PendingQuestion, QuestionGroup

if TYPE_CHECKING:
    from project.users import User

Status = PendingQuestion.Status


def question_for_user(*, user: User, question_id: uuid.UUID) -> PendingQuestion:
    """The user's question; QuestionNotFound (a 404) also for another user's id."""
    question = PendingQuestion.objects.select_related("group").filter(pk=question_id, user=user).first()
    if question is None:
        raise QuestionNotFound()
    return question


def group_by_id(*, group_id: uuid.UUID) -> QuestionGroup:
    """A group by id, for code acting on the group's own behalf (timers, the guesser); raises
    QuestionGroup.DoesNotExist."""
    return QuestionGroup.objects.get(pk=group_id)


def pending_deadline(*, question_id: uuid.UUID) -> dt.datetime | None:
    """The deadline of a question still pending, or None (resolved, gone, or no clock)."""
    return PendingQuestion.objects.filter(pk=question_id, status=Status.PENDING).values_list("deadline", flat=True).first()


def is_pending(*, question_id: uuid.UUID) -> bool:
    return PendingQuestion.objects.filter(pk=question_id, status=Status.PENDING).exists()


def open_group(*, conversation_id: uuid.UUID) -> QuestionGroup | None:
    """The conversation's group still waiting for the person, if any (newest first)."""
    return QuestionGroup.objects.filter(conversation_id=conversation_id, completed_at__isnull=True).order_by("-created_at").first()


def has_open_group(*, conversation_id: uuid.UUID) -> bool:
    """Whether a card of the conversation still waits for the person (asked on every turn)."""
    return sql.has_open_group(conversation_id=conversation_id)


def group_questions(group: QuestionGroup) -> list[PendingQuestion]:
    """The group's questions in order, each with `group` set to this instance (one statement)."""
    return questions_of_groups({group.pk: group}).get(group.pk, [])


def questions_of_groups(groups: dict[uuid.UUID, QuestionGroup]) -> dict[uuid.UUID, list[PendingQuestion]]:
    """{group id: its questions in order, each with `group` set} for the groups given by id, in
    one statement."""
    found: dict[uuid.UUID, list[PendingQuestion]] = {}
    for q in sql.questions_of_groups(list(groups)):
        q.group = groups[q.group_id]
        found.setdefault(q.group_id, []).append(q)
    return found


def groups_for_conversation(
    *, conversation_id: uuid.UUID, since: dt.datetime | None = None, until: dt.datetime | None = None
) -> list[QuestionGroup]:
    """The conversation's groups asked in [since, until) (either end open when None), oldest first."""
    groups = QuestionGroup.objects.filter(conversation_id=conversation_id)
    if since is not None:
        groups = groups.filter(created_at__gte=since)
    if until is not None:
        groups = groups.filter(created_at__lt=until)
    return list(groups.order_by("created_at"))


def clarification_rounds(*, conversation_id: uuid.UUID) -> dict[int, int]:
    """Clarification rounds asked per request in the conversation (at most two are allowed per
    request): {the original request's message id: rounds}. A round asked about a clarified
    request counts toward the request it clarifies (its `request_root_id`)."""
    rounds = (
        QuestionGroup.objects.filter(conversation_id=conversation_id, kind=QuestionGroup.Kind.CLARIFY)
        .annotate(request=Coalesce(KT("payload__request_root_id"), KT("payload__request_message_id")))
        .values_list("request")
        .annotate(rounds=Count("id"))
        .order_by()
    )
    return {int(request): count for request, count in rounds if request is not None}


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
            labels = ", ".join(q.options[i]["label"] for i in q.selected_indexes)
            row["note"] = (
                f"No answer — default applied: {labels}. The user did not answer in time; this is your guess, not their choice."
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
