from __future__ import annotations

import datetime as dt
import uuid
import zoneinfo
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, cast
from urllib.parse import urljoin

from django.conf import settings
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.formats import date_format

from chat import sql
from chat.models import Conversation, Message
from chat.prompts import system_prompt
from knowledge.selectors import get_ai_config
from llm import ChatMessage, ToolCall
from project.text import without_nul
from questions import selectors as question_selectors
from questions.models import PendingQuestion, QuestionGroup
from questions.services import QuestionTimeouts
from workspace.selectors import Snapshot, snapshot_for_user

if TYPE_CHECKING:
    from project.users import User

SEARCH_MAX_CHARS = 200


# The conversation list and the thread are sent a page at a time; scrolling loads the next.
CONVERSATIONS_PAGE = 50
THREAD_PAGE = 50
PINNED_LABEL = "Pinned"


@dataclass(frozen=True)
class ListCursor:
    """Where a page of the conversation list ends: its last conversation's (pinned_at, updated_at, id)."""

    pinned_at: dt.datetime | None
    updated_at: dt.datetime
    id: uuid.UUID


@dataclass(frozen=True)
class ConversationGroup:
    label: str  # "Pinned", "Today", "Yesterday", or the date
    conversations: list[Conversation]
    # The page before ended under this heading: it is already on screen.
    continued: bool = False


@dataclass(frozen=True)
class ConversationPage:
    groups: list[ConversationGroup]
    next_cursor: ListCursor | None  # None: the last page


def conversations_for_user(*, user: User, query: str = "", after: ListCursor | None = None) -> ConversationPage:
    """A page of the user's conversations, pinned ones first, then newest activity first, under
    their headings; with a query, those whose title or any message text contains it
    (case-insensitive; a NUL in the query is dropped: no stored text holds one, and Postgres would
    refuse the statement). `after`: the cursor of the page before (keyset pagination: a page
    costs the same however deep)."""
    conversations = Conversation.objects.filter(owner=user)
    text = " ".join(without_nul(query).split())[:SEARCH_MAX_CHARS]
    if text:
        in_messages = Message.objects.filter(
            conversation=OuterRef("pk"), content__icontains=text, role__in=[Message.Role.USER, Message.Role.ASSISTANT]
        )
        conversations = conversations.filter(Q(title__icontains=text) | Exists(in_messages))
    if after is not None:
        later = Q(updated_at__lt=after.updated_at) | Q(updated_at=after.updated_at, id__lt=after.id)
        if after.pinned_at is None:
            conversations = conversations.filter(Q(pinned_at__isnull=True) & later)
        else:
            conversations = conversations.filter(
                Q(pinned_at__isnull=True) | Q(pinned_at__lt=after.pinned_at) | (Q(pinned_at=after.pinned_at) & later)
            )
    ordered = conversations.order_by(F("pinned_at").desc(nulls_last=True), "-updated_at", "-id")
    rows = list(ordered[: CONVERSATIONS_PAGE + 1])
    page = rows[:CONVERSATIONS_PAGE]
    last = page[-1] if len(rows) > CONVERSATIONS_PAGE else None
    return ConversationPage(
        groups=grouped_by_day(page, after=after),
        next_cursor=ListCursor(pinned_at=last.pinned_at, updated_at=last.updated_at, id=last.pk) if last else None,
    )


def day_label(moment: dt.datetime, *, today: dt.date) -> str:
    """The heading for the local day of `moment`: "Today", "Yesterday", or the date."""
    day = timezone.localdate(moment)
    if day == today:
        return "Today"
    if day == today - dt.timedelta(days=1):
        return "Yesterday"
    return date_format(day, "j F") if day.year == today.year else date_format(day, "j F Y")


def grouped_by_day(
    conversations: list[Conversation], *, today: dt.date | None = None, after: ListCursor | None = None
) -> list[ConversationGroup]:
    """Consecutive conversations under a heading for the local day of their last activity;
    pinned ones (listed first) under "Pinned". `after`: where the page before ended; a first
    group under the same heading continues it."""
    today = today or timezone.localdate()

    def label_of(pinned_at: dt.datetime | None, updated_at: dt.datetime) -> str:
        return PINNED_LABEL if pinned_at is not None else day_label(updated_at, today=today)

    previous = label_of(after.pinned_at, after.updated_at) if after is not None else None
    groups: list[ConversationGroup] = []
    for conversation in conversations:
        label = label_of(conversation.pinned_at, conversation.updated_at)
        if groups and groups[-1].label == label:
            groups[-1].conversations.append(conversation)
        else:
            groups.append(ConversationGroup(label=label, conversations=[conversation], continued=not groups and label == previous))
    return groups


def conversation_for_user(*, user: User, conversation_id: uuid.UUID | str) -> Conversation:
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


def thread_items(*, conversation: Conversation) -> list[tuple[str, Message | QuestionGroup]]:
    """The thread as shown: visible messages and question cards, in the order they appeared."""
    items: list[tuple[dt.datetime, str, Message | QuestionGroup]] = [
        (m.created_at, "message", m) for m in visible_messages(conversation=conversation)
    ]
    items += [(g.created_at, "questions", g) for g in question_selectors.groups_for_conversation(conversation_id=conversation.pk)]
    return [(kind, obj) for _, kind, obj in sorted(items, key=lambda i: i[0])]


@dataclass(frozen=True)
class ThreadPage:
    """A stretch of the thread as shown: visible messages and question cards in the order they
    appeared, with each card's questions."""

    items: list[tuple[str, Message | QuestionGroup]]  # ("message", m) or ("questions", group)
    questions: dict[uuid.UUID, list[PendingQuestion]]
    earlier_than: int | None  # earlier messages exist: load them before this message id


def thread_page(*, user: User, conversation: Conversation, before: int | None = None, through: int | None = None) -> ThreadPage:
    """The newest `THREAD_PAGE` visible messages of the user's `conversation` older than message
    `before` (keyset by id: a page costs the same however long the thread), with the cards asked
    among them. The page as opened (no `before`) reaches back to a card still waiting for an
    answer; `through` reaches back to that message id, however far (a link to a message)."""
    if conversation.owner_id != user.pk:
        raise Conversation.DoesNotExist("no such conversation")
    visible = Message.objects.filter(conversation=conversation).exclude(role=Message.Role.TOOL)  # tool plumbing stays out of sight
    newer = visible if before is None else visible.filter(id__lt=before)
    newest_first = newer.order_by("-id")
    reach = through
    if before is None and (waiting := question_selectors.open_group(conversation_id=conversation.pk)) is not None:
        # Back to the message just before the card, so the card is on this page.
        asked_after = newer.filter(created_at__lte=waiting.created_at).order_by("-id").values_list("id", flat=True).first() or 0
        reach = asked_after if reach is None else min(reach, asked_after)
    rows = list(newest_first[: THREAD_PAGE + 1])
    shown = THREAD_PAGE
    if reach is not None and len(rows) > THREAD_PAGE and rows[THREAD_PAGE - 1].pk > reach:
        rows = list(newest_first.filter(id__gte=reach)) + list(newest_first.filter(id__lt=reach)[:1])
        shown = len(rows) - 1 if rows[-1].pk < reach else len(rows)
    messages, more = rows[:shown], len(rows) > shown
    # Cards between this page's oldest message and the next page's (the one `before` names, or
    # the next still there when it was deleted).
    since = messages[-1].created_at if messages and more else None
    until = visible.filter(id__gte=before).order_by("id").values_list("created_at", flat=True).first() if before is not None else None
    groups = question_selectors.groups_for_conversation(conversation_id=conversation.pk, since=since, until=until)
    items: list[tuple[dt.datetime, str, Message | QuestionGroup]] = [(m.created_at, "message", m) for m in reversed(messages)]
    items += [(g.created_at, "questions", g) for g in groups]
    return ThreadPage(
        items=[(kind, obj) for _, kind, obj in sorted(items, key=lambda i: i[0])],
        questions=question_selectors.questions_of_groups({g.pk: g for g in groups}) if groups else {},
        earlier_than=messages[-1].pk if more else None,
    )


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
    owner: User
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
    history = _history_from(sql.newest_messages_for_model(conversation_id=conversation_id, limit=history_limit))
    request = max((m for m in history if m.role == Message.Role.USER), key=lambda m: m.pk)
    snapshot = snapshot_for_user(user=conversation.owner)
    meta = dict(request.metadata or {})
    continuing = any(m.in_reply_to_id == request.pk for m in history)
    root_id = meta.get("clarification_of") or request.pk
    rounds = None
    if settings.CLARIFICATION_ENABLED and not (continuing or meta.get("answer_to") or meta.get("skipped")):
        rounds = question_selectors.clarification_rounds(conversation_id=conversation_id).get(root_id, 0)
    time_zone = next(
        (m.metadata["time_zone"] for m in reversed(history) if m.role == Message.Role.USER and (m.metadata or {}).get("time_zone")),
        settings.TIME_ZONE,
    )
    # The model reads "today" as the person does: in their calendar, like the query tools.
    today = timezone.localdate(timezone=zoneinfo.ZoneInfo(time_zone))
    messages = (
        ChatMessage(role="system", content=system_prompt(snapshot, today=today, template=config.chat_system_prompt)),
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
        time_zone=time_zone,
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
