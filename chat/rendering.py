"""HTML fragments pushed over the websocket. Each is one template partial; htmx swaps by id."""
from __future__ import annotations

from dataclasses import dataclass

from django.template.loader import render_to_string
from django.utils import timezone

from chat.models import Conversation, Message
from questions import selectors as question_selectors
from questions.models import PendingQuestion, QuestionGroup


def message_appended(message: Message) -> str:
    return render_to_string("chat/_message_append.html", {"message": message})


def message_removed(message_id: int) -> str:
    return f'<div id="message-{int(message_id)}" hx-swap-oob="delete"></div>'


def conversation_link(conversation: Conversation) -> str:
    # Every tab that receives this is showing that conversation, so it is the current one.
    return render_to_string(
        "chat/_conversation_link.html", {"conversation": conversation, "current": conversation, "oob": True}
    )


def composer(conversation: Conversation) -> str:
    return render_to_string("chat/_composer.html", {"conversation": conversation, "oob": True})


def composer_error(text: str) -> str:
    return render_to_string("chat/_composer_error.html", {"error": text})


def stream_started(stream_id: str) -> str:
    return render_to_string("chat/_stream_started.html", {"stream_id": stream_id})


def stream_delta(stream_id: str, text: str) -> str:
    return render_to_string("chat/_stream_delta.html", {"stream_id": stream_id, "text": text})


def stream_reset(stream_id: str) -> str:
    return render_to_string("chat/_stream_reset.html", {"stream_id": stream_id})


def stream_finished(stream_id: str, message: Message) -> str:
    """The streamed placeholder becomes the saved message (rendered Markdown, or the error)."""
    return render_to_string("chat/_message.html", {"message": message, "replaces": f"stream-{stream_id}"})


# --- question cards ----------------------------------------------------------------------------

KEYS = "abcdefghij"


@dataclass(frozen=True)
class DisplayOption:
    index: int
    key: str
    label: str
    description: str
    confidence: float | None
    reasoning: str
    is_default: bool

    @property
    def percent(self) -> int | None:
        return None if self.confidence is None else round(self.confidence * 100)


@dataclass(frozen=True)
class QuestionCard:
    """Everything a card's partials need; the server alone decides which state is shown."""

    group: QuestionGroup
    questions: list[PendingQuestion]
    current: PendingQuestion | None
    options: list[DisplayOption]
    remaining: float | None
    paused: bool

    @property
    def total(self) -> int:
        return len(self.questions)

    @property
    def number(self) -> int:
        return (self.current.position + 1) if self.current else self.total

    @property
    def resolved(self) -> list[PendingQuestion]:
        return [q for q in self.questions if not q.is_pending]

    @property
    def is_confirmation(self) -> bool:
        return self.group.kind == QuestionGroup.Kind.CONFIRM

    @property
    def state(self) -> str:
        return "pending" if self.current else "resolved"


def question_card(group: QuestionGroup, *, now=None) -> QuestionCard:
    now = now or timezone.now()
    questions = question_selectors.group_questions(group)
    current = next((q for q in questions if q.is_pending), None)
    options, remaining, paused = [], None, False
    if current is not None:
        defaults = set(current.default_indexes)
        # Most likely first; the letter keys stay tied to the option, not to the position.
        options = [
            DisplayOption(
                index=i, key=KEYS[i], label=o["label"], description=o.get("description", ""),
                confidence=o.get("confidence"), reasoning=o.get("reasoning", ""), is_default=i in defaults,
            )
            for i, o in ((i, current.options[i]) for i in question_selectors.display_order(current))
        ]  # fmt: skip
        paused = current.paused_at is not None
        if paused:
            remaining = current.remaining_at_pause
        elif current.deadline is not None:
            remaining = max(0.0, (current.deadline - now).total_seconds())
    return QuestionCard(group=group, questions=questions, current=current, options=options, remaining=remaining, paused=paused)


def question_group(group: QuestionGroup, *, oob: bool = True, error: str = "") -> str:
    """The group's card: swapped in by id over the websocket (oob), or as an HTTP response."""
    return render_to_string("questions/_group.html", {"card": question_card(group), "oob": oob, "error": error})


def question_group_appended(group: QuestionGroup) -> str:
    return render_to_string("questions/_group_append.html", {"card": question_card(group)})
