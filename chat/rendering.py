"""HTML fragments pushed over the websocket. Each is one template partial; htmx swaps by id."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from chat.models import CARD_TOOLS, Conversation, Message
from knowledge.rendering import render_markdown
from llm.offline.phrasing import PAST_DAYS, task_noun
from project.text import visible_bidi_controls
from questions import selectors as question_selectors
from questions.models import PendingQuestion, QuestionGroup

if TYPE_CHECKING:
    from chat.selectors import ConversationPage


def message_appended(message: Message) -> str:
    return render_to_string("chat/_message_append.html", {"message": message})


def message_removed(message_id: int) -> str:
    return f'<div id="message-{int(message_id)}" hx-swap-oob="delete"></div>'


# What a tab showing a conversation deleted elsewhere says, when told and when it tries to send.
CONVERSATION_DELETED = "This conversation was deleted."


def conversation_link(conversation: Conversation) -> str:
    # Every tab that receives this is showing that conversation, so it is the current one.
    return render_to_string("chat/_conversation_link.html", {"conversation": conversation, "current": conversation, "oob": True})


def delete_dialog_name(conversation: Conversation) -> str:
    """The title the Delete dialog names, swapped in whenever the title changes."""
    return render_to_string("chat/_delete_dialog_name.html", {"conversation": conversation, "oob": True})


def conversation_heading(conversation: Conversation) -> str:
    """The heading and everything else that shows the title in the thread (a new title)."""
    header = render_to_string("chat/_conversation_header.html", {"conversation": conversation, "oob": True})
    return header + delete_dialog_name(conversation)


def message_replaced(message: Message) -> str:
    """The message re-rendered in place (an edited message)."""
    return render_to_string("chat/_message.html", {"message": message, "replaces": f"message-{message.pk}"})


def conversation_nav(page: ConversationPage, *, current: Conversation | None = None) -> str:
    """The conversation list's first page, swapped in by id (its order changed: a pin, new
    activity). Broadcast to every tab of the user without `current`: each tab marks its own."""
    context = {"groups": page.groups, "conversation": current, "next_url": list_next_url(page, current_id=current.pk if current else None)}
    return render_to_string("chat/_conversation_nav.html", {**context, "oob": True})


def list_next_url(page: ConversationPage, *, current_id: uuid.UUID | None = None, query: str = "") -> str:
    """Where the list's next page is fetched from when its end scrolls into view ("" on the last)."""
    cursor = page.next_cursor
    if cursor is None:
        return ""
    params = {"q": query, "current": current_id or "", "after": cursor.updated_at.isoformat(), "after_id": cursor.id}
    if cursor.pinned_at is not None:
        params["after_pinned"] = cursor.pinned_at.isoformat()
    return f"{reverse('chat:search')}?{urlencode(params)}"


def composer(conversation: Conversation) -> str:
    return render_to_string("chat/_composer.html", {"conversation": conversation, "oob": True})


def composer_error(text: str) -> str:
    return render_to_string("chat/_composer_error.html", {"error": text})


def stream_started(stream_id: str) -> str:
    return render_to_string("chat/_stream_started.html", {"stream_id": stream_id})


def stream_delta(stream_id: str, text: str) -> str:
    """The streamed reply so far (all of it, not the newest piece), as sanitized Markdown."""
    return render_to_string("chat/_stream_delta.html", {"stream_id": stream_id, "html": render_markdown(text)})


def stream_reset(stream_id: str) -> str:
    return render_to_string("chat/_stream_reset.html", {"stream_id": stream_id})


def stream_discarded(stream_id: str) -> str:
    """The typing indicator goes away without a message (the turn asked a question instead)."""
    return render_to_string("chat/_stream_discarded.html", {"stream_id": stream_id})


def stream_finished(stream_id: str, message: Message) -> str:
    """The streamed placeholder becomes the saved message (rendered Markdown, or the error)."""
    return render_to_string("chat/_message.html", {"message": message, "replaces": f"stream-{stream_id}"})


# --- question cards ----------------------------------------------------------------------------

KEYS = "abcdefghij"


@dataclass(frozen=True)
class DisplayOption:
    index: int  # the option's index as asked (what an answer stores)
    key: str  # the key printed on it: its place on the card, a = first shown
    label: str
    description: str
    confidence: float | None
    reasoning: str
    is_default: bool

    @property
    def percent(self) -> int | None:
        return None if self.confidence is None else round(self.confidence * 100)

    @property
    def number(self) -> int:
        return KEYS.index(self.key) + 1


@dataclass(frozen=True)
class QuestionStep:
    """One question of a group as the card lists it: answered, current, or still to come."""

    question: PendingQuestion
    number: int
    options: list[DisplayOption]

    @property
    def key_range(self) -> str:
        return f"{self.options[0].key}–{self.options[-1].key}" if self.options else ""


def display_options(question: PendingQuestion) -> list[DisplayOption]:
    """The options in the order shown (most likely first once guesses exist), keyed by place."""
    defaults = set(question.default_indexes)
    return [
        DisplayOption(
            index=i, key=KEYS[place], label=question.options[i]["label"], description=question.options[i].get("description", ""),
            confidence=question.options[i].get("confidence"), reasoning=question.options[i].get("reasoning", ""), is_default=i in defaults,
        )
        for place, i in enumerate(question_selectors.display_order(question))
    ]  # fmt: skip


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
    def answered_count(self) -> int:
        return sum(1 for q in self.questions if not q.is_pending)

    @property
    def resolved_summary(self) -> str:
        """A finished card's header: "3 questions answered", or what became of each kind
        ("2 questions · 1 answered, 1 timed out"), never "answered" for ones that were not."""
        set_aside = bool(self.group.payload.get("set_aside"))
        words: dict[str, str] = {
            PendingQuestion.Status.ANSWERED: "answered",
            PendingQuestion.Status.TIMED_OUT: "timed out",
            PendingQuestion.Status.CANCELLED: "cancelled" if set_aside or self.is_confirmation else "skipped",
        }
        counts = Counter(words.get(q.status, "") for q in self.questions)
        if len(counts) == 1:
            return f"{self.total} questions {next(iter(counts))}".rstrip()
        return f"{self.total} questions · " + ", ".join(f"{counts[word]} {word}" for word in words.values() if counts[word])

    @property
    def resolved(self) -> list[PendingQuestion]:
        return [q for q in self.questions if not q.is_pending]

    @property
    def upcoming(self) -> list[QuestionStep]:
        """The questions after the current one, with their keys, so "1a 2b" can be typed at once."""
        return [
            QuestionStep(question=q, number=q.position + 1, options=display_options(q))
            for q in self.questions
            if q.is_pending and q is not self.current
        ]

    @property
    def is_confirmation(self) -> bool:
        return self.group.kind == QuestionGroup.Kind.CONFIRM

    @property
    def state(self) -> str:
        return "pending" if self.current else "resolved"

    @property
    def default_option(self) -> DisplayOption | None:
        return next((o for o in self.options if o.is_default), None)

    @property
    def key_range(self) -> str:
        return f"{self.options[0].key}–{self.options[-1].key}" if self.options else ""

    # Confirmation cards: the list of changes, the first few always visible.
    CHANGES_SHOWN = 10

    @property
    def changes(self) -> list[dict]:
        return list(self.group.payload.get("lines") or [])

    @property
    def applied_count(self) -> int:
        """How many changes an applied confirmation made: the ticked ones."""
        chosen = self.group.payload.get("chosen")
        return len(self.changes) if chosen is None else len(chosen)

    @property
    def changes_shown(self) -> list[dict]:
        return self.changes[: self.CHANGES_SHOWN]

    @property
    def changes_more(self) -> list[dict]:
        return self.changes[self.CHANGES_SHOWN :]


def question_card(group: QuestionGroup, *, questions: list[PendingQuestion] | None = None, now: dt.datetime | None = None) -> QuestionCard:
    """The card of `group`; `questions`: its questions, when the caller has just read them."""
    now = now or timezone.now()
    questions = question_selectors.group_questions(group) if questions is None else questions
    current = next((q for q in questions if q.is_pending), None)
    options, remaining, paused = [], None, False
    if current is not None:
        options = display_options(current)
        paused = current.paused_at is not None
        if paused:
            remaining = current.remaining_at_pause
        elif current.deadline is not None:
            remaining = max(0.0, (current.deadline - now).total_seconds())
    return QuestionCard(group=group, questions=questions, current=current, options=options, remaining=remaining, paused=paused)


def question_group(group: QuestionGroup, *, questions: list[PendingQuestion] | None = None, oob: bool = True, error: str = "") -> str:
    """The group's card: swapped in by id over the websocket (oob), or as an HTTP response."""
    return render_to_string("questions/_group.html", {"card": question_card(group, questions=questions), "oob": oob, "error": error})


def question_group_appended(group: QuestionGroup) -> str:
    return render_to_string("questions/_group_append.html", {"card": question_card(group)})


# --- tool calls, in words ----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolActivity:
    """One line in the thread for a lookup the assistant made: a sentence, and the raw call
    (name and arguments) kept behind a disclosure for whoever wants it."""

    sentence: str
    raw: str


def tool_activity(message: Message) -> list[ToolActivity]:
    lines = []
    for call in message.tool_calls:
        name = call.get("name", "")
        if name in CARD_TOOLS:
            continue  # the question card shows these in full
        try:
            args = json.loads(call.get("arguments") or "{}")
        except (TypeError, ValueError, RecursionError):  # a model's garbled (or absurdly nested) arguments
            args = {}
        args = args if isinstance(args, dict) else {}
        raw = f"{name}({', '.join(f'{k}: {v}' for k, v in args.items() if v not in (None, ''))})"
        # The model wrote the arguments: their bidirectional controls are shown, not obeyed.
        lines.append(ToolActivity(sentence=visible_bidi_controls(describe_tool_call(name, args)), raw=visible_bidi_controls(raw)))
    return lines


def describe_tool_call(name: str, args: dict) -> str:
    """What a lookup did, as a person would say it ("Looked at up to 50 in-progress tasks")."""
    if name == "query_tasks":
        noun = task_noun(args)
        limit = args.get("limit")
        # A limit of 1 is how totals are counted; "up to 1 tasks" would say nothing useful.
        what = f"up to {limit} {noun}" if isinstance(limit, int) and 1 < limit < 500 else f"your {noun}"
        return f"Looked at {what}{_scope(args, 'search')}"
    if name == "query_notes":
        term = args.get("search_term")
        when = f" added or edited {PAST_DAYS[str(args.get('changed'))]}" if str(args.get("changed")) in PAST_DAYS else ""
        return f"Searched your notes{when} for “{_short(term)}”{_scope(args)}" if term else f"Looked at your notes{when}{_scope(args)}"
    if name == "query_projects":
        return "Looked at your projects" + (" and their task counts" if args.get("include_stats", True) else "")
    if name == "search_knowledge_base":
        question = args.get("question")
        return f"Searched the documentation for “{_short(question)}”" if question else "Searched the documentation"
    return f"Used {name.replace('_', ' ') or 'a tool'}"


def _scope(args: dict, search_key: str | None = None) -> str:
    parts = []
    if search_key and args.get(search_key):
        parts.append(f" matching “{_short(args[search_key])}”")
    if args.get("project_id") is not None:
        parts.append(" in one project")
    return "".join(parts)


def _short(text: object, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
