from __future__ import annotations

from questions.models import PendingQuestion, QuestionGroup

Status = PendingQuestion.Status


def question_for_user(*, user, question_id) -> PendingQuestion:
    """The user's question, or PendingQuestion.DoesNotExist (also for another user's id)."""
    return PendingQuestion.objects.select_related("group").get(pk=question_id, user=user)


def open_group(*, conversation_id) -> QuestionGroup | None:
    """The conversation's group still waiting for the person, if any (newest first)."""
    return QuestionGroup.objects.filter(conversation_id=conversation_id, completed_at__isnull=True).order_by("-created_at").first()


def has_open_group(*, conversation_id) -> bool:
    return QuestionGroup.objects.filter(conversation_id=conversation_id, completed_at__isnull=True).exists()


def group_questions(group: QuestionGroup) -> list[PendingQuestion]:
    return list(group.questions.order_by("position"))


def groups_for_conversation(*, conversation_id) -> list[QuestionGroup]:
    return list(QuestionGroup.objects.filter(conversation_id=conversation_id).prefetch_related("questions").order_by("created_at"))


def clarification_rounds(*, conversation_id, since_message_id: int) -> int:
    """Clarification rounds asked for one request (seed 002 allows at most two)."""
    return QuestionGroup.objects.filter(
        conversation_id=conversation_id, kind=QuestionGroup.Kind.CLARIFY, payload__request_message_id=since_message_id
    ).count()


def answers_for_model(group: QuestionGroup) -> dict:
    """What the model receives per question: the answer(s), whether typed, which options, and
    whether the person answered or the deadline applied a default (or none)."""
    rows = []
    for q in group_questions(group):
        row = {
            "question": q.question,
            "status": {Status.ANSWERED: "answered", Status.TIMED_OUT: "timed_out", Status.CANCELLED: "skipped"}.get(q.status, q.status),
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
    """Option indexes in the order the card shows them: most likely first once guesses exist."""
    indexes = list(range(len(question.options)))
    if any(o.get("confidence") is not None for o in question.options):
        indexes.sort(key=lambda i: -(question.options[i].get("confidence") or 0))
    return indexes
