from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, cast
from urllib.parse import urljoin

from django.conf import settings
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.formats import date_format

from chat.models import Conversation, Message
from chat.prompts import system_prompt
from knowledge.selectors import get_ai_config
from llm import ChatMessage, ToolCall
from project.text import without_nul
from questions import selectors as question_selectors
from questions.services import QuestionTimeouts
from workspace.selectors import Snapshot, snapshot_for_user

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from questions.models import PendingQuestion, QuestionGroup

SEARCH_MAX_CHARS = 200


def conversations_for_user(*, user, limit: int = 50, query: str = "") -> list[Conversation]:
    """The user's conversations, pinned ones first, then newest activity first; with a query,
    those whose title or any message text contains it (case-insensitive). A NUL in the query is
    dropped: no stored text holds one, and Postgres would refuse the statement."""
    conversations = Conversation.objects.filter(owner=user)
    text = " ".join(without_nul(query).split())[:SEARCH_MAX_CHARS]
    if text:
        in_messages = Message.objects.filter(
            conversation=OuterRef("pk"), content__icontains=text, role__in=[Message.Role.USER, Message.Role.ASSISTANT]
        )
        conversations = conversations.filter(Q(title__icontains=text) | Exists(in_messages))
    return list(conversations.order_by(F("pinned_at").desc(nulls_last=True), "-updated_at")[:limit])


@dataclass(frozen=True)
class ConversationGroup:
    label: str  # "Pinned", "Today", "Yesterday", or the date
    conversations: list[Conversation]


PINNED_LABEL = "Pinned"


def grouped_by_day(conversations: list[Conversation], *, today: dt.date | None = None) -> list[ConversationGroup]:
    """Consecutive conversations under a heading for the local day of their last activity;
    pinned ones (listed first) under "Pinned"."""
    today = today or timezone.localdate()
    groups: list[ConversationGroup] = []
    for conversation in conversations:
        day = timezone.localdate(conversation.updated_at)
        if conversation.pinned_at is not None:
            label = PINNED_LABEL
        elif day == today:
            label = "Today"
        elif day == today - dt.timedelta(days=1):
            label = "Yesterday"
        elif day.year == today.year:
            label = date_format(day, "j F")
        else:
            label = date_format(day, "j F Y")
        if groups and groups[-1].label == label:
            groups[-1].conversations.append(conversation)
        else:
            groups.append(ConversationGroup(label=label, conversations=[conversation]))
    return groups


def conversation_for_user(*, user, conversation_id: uuid.UUID | str) -> Conversation:
    """The user's conversation, or Conversation.DoesNotExist (also for another user's id)."""
    return Conversation.objects.get(owner=user, pk=conversation_id)


def _history_from(messages: Iterable[Message]) -> list[Message]:
    """Of the newest messages (without errors or garbled tool calls), those the model should see,
    in the order a model expects.

    - A turn's rows follow the user message they answer, even when the user typed again while
      the turn ran (chronologically that message sits inside the turn).
    - The history starts at a user message, so every tool result stays next to its call, and a
      tool call whose result was never saved (worker died in between) is dropped.
    - Error messages are for people only.
    - Tool calls whose arguments could not be read, and their error results, are left out: a
      retry starts from the request, not from the model's earlier garbled attempts.
    """
    recent = list(messages)
    recent.sort(key=lambda m: (m.pk, 0, m.pk) if m.role == Message.Role.USER else (m.in_reply_to_id or m.pk, 1, m.pk))
    first_user = next((i for i, m in enumerate(recent) if m.role == Message.Role.USER), len(recent))
    history = recent[first_user:]
    answered_calls = {m.tool_call_id for m in history if m.role == Message.Role.TOOL}
    for message in history:
        if message.tool_calls:
            message.tool_calls = [c for c in message.tool_calls if c.get("id") in answered_calls]
    return [m for m in history if not (m.role == Message.Role.ASSISTANT and not m.tool_calls and not m.content)]


def visible_messages(*, conversation: Conversation) -> list[Message]:
    """What the thread shows: tool plumbing stays out of sight."""
    return list(conversation.messages.exclude(role=Message.Role.TOOL).order_by("created_at", "id"))


def thread_items(*, conversation: Conversation) -> list[tuple[str, object]]:
    """The thread as shown: visible messages and question cards, in the order they appeared."""
    items = [(m.created_at, "message", m) for m in visible_messages(conversation=conversation)]
    items += [(g.created_at, "questions", g) for g in question_selectors.groups_for_conversation(conversation_id=conversation.pk)]
    return [(kind, obj) for _, kind, obj in sorted(items, key=lambda i: i[0])]


@dataclass(frozen=True)
class ExportEntry:
    """One entry of an exported thread: a message (its citations with absolute links) or a
    question card with its questions."""

    message: Message | None = None
    citations: tuple[dict, ...] = ()
    group: QuestionGroup | None = None
    questions: tuple[PendingQuestion, ...] = ()


@dataclass(frozen=True)
class ConversationExport:
    conversation: Conversation
    entries: list[ExportEntry]
    exported_at: dt.datetime


def conversation_export(*, user: User, conversation_id: uuid.UUID, base_url: str) -> ConversationExport:
    """The user's conversation as its export shows it: the thread in order, cards with their
    answers, citation links made absolute against `base_url`. Conversation.DoesNotExist for
    another user's id."""
    conversation = conversation_for_user(user=user, conversation_id=conversation_id)
    entries = []
    for kind, item in thread_items(conversation=conversation):
        if kind == "questions":
            group = cast("QuestionGroup", item)
            entries.append(ExportEntry(group=group, questions=tuple(question_selectors.group_questions(group))))
        else:
            message = cast(Message, item)
            citations = tuple(
                {**c, "url": urljoin(base_url, c["url"])} for c in (message.metadata or {}).get("citations") or [] if c.get("url")
            )
            entries.append(ExportEntry(message=message, citations=citations))
    return ConversationExport(conversation=conversation, entries=entries, exported_at=timezone.now())


# --- What a turn reads: loaded once, frozen ---------------------------------------------------


@dataclass(frozen=True)
class TurnContext:
    """Everything one turn reads from the database, loaded in one thread hop before the model is
    called. Frozen: the steps of a turn read it; what they write goes to rows."""

    conversation_id: uuid.UUID
    group_name: str
    owner: object
    request_id: int
    request_text: str
    request_metadata: dict
    # The system prompt and the history, as the model receives them.
    messages: tuple[ChatMessage, ...]
    # Rows already answer the request (after an answer, or a worker that died mid-turn).
    continuing: bool
    timeouts: QuestionTimeouts
    clarification_threshold: float
    # The admin's clarification prompt (empty: the built-in one).
    clarification_prompt: str
    # The request a clarification would be about (the first of a chain of clarified requests),
    # and the rounds already asked about it; None when the request is not open to clarification
    # (it answers a question, was skipped, or the turn continues).
    clarification_root_id: int
    clarification_rounds: int | None
    # What the guesser and the clarifier read: recent turns and the workspace's names.
    context_text: str
    projects: tuple[str, ...]
    # The user's IANA time zone: the one their browser sent with their latest message that had
    # one (chat.services.post_user_message stores it on the message), else the server's TIME_ZONE.
    time_zone: str


def turn_context(*, conversation_id: uuid.UUID, history_limit: int) -> TurnContext:
    """The turn's context: the conversation with its owner, the AI configuration, the history,
    the owner's workspace snapshot and, when clarification is on, the clarification rounds per
    request. Raises Conversation.DoesNotExist."""
    conversation = Conversation.objects.select_related("owner").get(pk=conversation_id)
    config = get_ai_config()
    history = _history_from(
        Message.objects.filter(conversation_id=conversation_id)
        .exclude(role=Message.Role.ERROR)
        .exclude(metadata__contains={"malformed": True})
        .order_by("-id")[:history_limit]
    )
    request = max((m for m in history if m.role == Message.Role.USER), key=lambda m: m.pk)
    snapshot = snapshot_for_user(user=conversation.owner)
    meta = dict(request.metadata or {})
    continuing = any(m.in_reply_to_id == request.pk for m in history)
    root_id = meta.get("clarification_of") or request.pk
    rounds = None
    if settings.CLARIFICATION_ENABLED and not (continuing or meta.get("answer_to") or meta.get("skipped")):
        rounds = question_selectors.clarification_rounds(conversation_id=conversation_id).get(root_id, 0)
    messages = (
        ChatMessage(role="system", content=system_prompt(snapshot, template=config.chat_system_prompt)),
        *(as_chat_message(m) for m in history),
    )
    return TurnContext(
        conversation_id=conversation.pk,
        group_name=conversation.group_name,
        owner=conversation.owner,
        request_id=request.pk,
        request_text=request.content,
        request_metadata=meta,
        messages=messages,
        continuing=continuing,
        timeouts=QuestionTimeouts(
            low=config.question_timeout_low_seconds,
            medium=config.question_timeout_medium_seconds,
            high=config.question_timeout_high_seconds,
            ask=config.ask_timeout_seconds,
        ),
        clarification_threshold=config.clarification_threshold,
        clarification_prompt=config.clarification_prompt,
        clarification_root_id=root_id,
        clarification_rounds=rounds,
        context_text=_context_text(messages, snapshot),
        projects=tuple(p.name for p in snapshot.projects if not p.archived),
        time_zone=next(
            (m.metadata["time_zone"] for m in reversed(history) if m.role == Message.Role.USER and (m.metadata or {}).get("time_zone")),
            settings.TIME_ZONE,
        ),
    )


def as_chat_message(message: Message) -> ChatMessage:
    if message.role == Message.Role.TOOL:
        return ChatMessage(role="tool", content=message.content, tool_call_id=message.tool_call_id, name=message.tool_name)
    if message.role == Message.Role.ASSISTANT:
        return ChatMessage(role="assistant", content=message.content or None, tool_calls=[ToolCall(**c) for c in message.tool_calls])
    return ChatMessage(role="user", content=message.content)


def _context_text(messages: tuple[ChatMessage, ...], snapshot: Snapshot) -> str:
    recent = [f"{m.role}: {m.content}" for m in messages[1:] if m.content and m.role in ("user", "assistant")][-10:]
    projects = ", ".join(p.name for p in snapshot.projects)
    tasks = "; ".join(t.title for t in [*snapshot.in_progress, *snapshot.todo])
    return "\n".join([*recent, f"projects: {projects}", f"open tasks: {tasks}"])
