from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from chat import sql
from chat.models import CARD_TOOLS, Conversation, Message
from project.errors import Conflict, Rejected
from project.text import refuse_nul, without_nul
from questions import selectors as question_selectors

if TYPE_CHECKING:
    from project.users import User

TITLE_CHARS = 60
# A title is the first few words of the first message, not the whole message again.
TITLE_WORDS = 6


class MessageRejected(Rejected):
    """A user message that cannot be accepted; the text says why, for the person who typed it."""


class ConversationRejected(Rejected):
    """A rename (or similar) that cannot be applied; the text says why."""


def start_conversation(*, user: User) -> Conversation:
    return Conversation.objects.create(owner=user)


@transaction.atomic
def open_blank_conversation(*, user: User) -> Conversation:
    """The user's conversation with no messages yet, created when there is none.

    "New conversation" and the first visit reuse it, so empty entries never pile up in the list.
    """
    blank = (
        Conversation.objects.select_for_update()
        .filter(owner=user)
        .exclude(Exists(Message.objects.filter(conversation=OuterRef("pk"))))
        .order_by("-updated_at")
        .first()
    )
    if blank is not None:
        return blank
    return Conversation.objects.create(owner=user)


@transaction.atomic
def rename_conversation(*, user: User, conversation_id: uuid.UUID, title: str) -> Conversation:
    text = " ".join(refuse_nul(title or "", what="That title").split())
    if not text:
        raise ConversationRejected("A title cannot be empty.")
    limit = Conversation.TITLE_MAX_CHARS
    if len(text) > limit:
        raise ConversationRejected(f"That title is {len(text)} characters; the limit is {limit}.")
    conversation = Conversation.objects.select_for_update().get(owner=user, pk=conversation_id)
    conversation.title = text
    # Renaming is not activity: the list keeps its order.
    Conversation.objects.filter(pk=conversation.pk).update(title=text)
    return conversation


def delete_conversation(*, user: User, conversation_id: uuid.UUID) -> None:
    """Deletes the conversation with its messages and questions; another user's id does not exist."""
    deleted, _ = Conversation.objects.filter(owner=user, pk=conversation_id).delete()
    if not deleted:
        raise Conversation.DoesNotExist


@transaction.atomic
def set_pinned(*, user: User, conversation_id: uuid.UUID, pinned: bool) -> Conversation:
    """Pin a conversation to the top of the list, or unpin it; another user's id does not exist."""
    conversation = Conversation.objects.select_for_update().get(owner=user, pk=conversation_id)
    if pinned and conversation.pinned_at is None:
        conversation.pinned_at = timezone.now()
    elif not pinned:
        conversation.pinned_at = None
    # Pinning is not activity either: updated_at (the day it is listed under) stays.
    Conversation.objects.filter(pk=conversation.pk).update(pinned_at=conversation.pinned_at)
    return conversation


def request_stop(*, user: User, conversation_id: uuid.UUID) -> None:
    """Ask the running turn of this conversation to stop streaming; it keeps what it has so far.

    A stored timestamp, so the worker running the turn notices it whichever process got the click.
    """
    updated = Conversation.objects.filter(owner=user, pk=conversation_id).update(stop_requested_at=timezone.now())
    if not updated:
        raise Conversation.DoesNotExist


def validate_user_message(content: str) -> str:
    text = refuse_nul(content or "", what="That message").strip()
    if not text:
        raise MessageRejected("Type a message first.")
    limit = settings.CHAT_MESSAGE_MAX_CHARS
    if len(text) > limit:
        raise MessageRejected(f"That message is {len(text):,} characters; the limit is {limit:,}. Shorten it and send again.")
    return text


@transaction.atomic
def post_user_message(*, user: User, conversation_id: uuid.UUID, content: str, time_zone: str | None = None) -> Message:
    """`time_zone`: the IANA zone the person's browser is in, kept on the message; the turns
    that follow read dates ("due today") in it (chat.selectors.TurnContext.time_zone)."""
    text = validate_user_message(content)
    conversation = Conversation.objects.select_for_update().get(owner=user, pk=conversation_id)
    metadata = {"time_zone": time_zone} if time_zone else {}
    message = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=text, metadata=metadata)
    if conversation.title == Conversation.DEFAULT_TITLE:
        conversation.title = _title_from(text)
    conversation.updated_at = timezone.now()
    conversation.save(update_fields=["title", "updated_at"])
    return message


def _title_from(text: str) -> str:
    """A short title from the first message: its first words, without trailing punctuation."""
    words = text.split()
    title = " ".join(words[:TITLE_WORDS]).rstrip(" ,;:.!?-–—")
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1].rstrip()
    shortened = len(words) > TITLE_WORDS or len(" ".join(words[:TITLE_WORDS])) > TITLE_CHARS
    title = title or " ".join(words)[: TITLE_CHARS - 1]
    return title + "…" if shortened else title


# --- Turn persistence: every step of a turn is a row, so nothing lives only in a coroutine.


def needs_reply(*, conversation_id: uuid.UUID) -> bool:
    """True when some user message has no finished turn answering it yet.

    Also true after a worker died mid-turn (its tool results are there, its answer is not), so
    the next turn picks up where that one stopped. False while questions wait for the person:
    the turn that asked them has ended, and their answers start the next one.
    """
    last_user, answered = sql.newest_request_and_answer(conversation_id=conversation_id)
    if last_user is None or (answered is not None and answered >= last_user):
        return False
    return not question_selectors.has_open_group(conversation_id=conversation_id)


def save_assistant_message(
    *, conversation_id: uuid.UUID, in_reply_to_id: int, content: str, tool_calls: list[dict], metadata: dict
) -> Message:
    """A model's reply, as a row. A NUL the model wrote is dropped (Postgres cannot store it; it
    shows as nothing), so the reply is kept."""
    return Message.objects.create(
        conversation_id=conversation_id,
        in_reply_to_id=in_reply_to_id,
        role=Message.Role.ASSISTANT,
        content=without_nul(content),
        tool_calls=[{key: without_nul(v) if isinstance(v, str) else v for key, v in call.items()} for call in tool_calls],
        metadata=metadata,
    )


@dataclass(frozen=True)
class ToolResult:
    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool
    # Arguments the model garbled: kept for the record, left out of the history on a retry.
    malformed: bool = False


def save_tool_results(*, conversation_id: uuid.UUID, in_reply_to_id: int, results: list[ToolResult]) -> list[Message]:
    return save_tool_results_of_calls([(conversation_id, in_reply_to_id, r) for r in results])


def save_tool_results_of_calls(calls: list[tuple[uuid.UUID, int, ToolResult]]) -> list[Message]:
    """Results of tool calls from any conversations, in one statement: [(conversation id, the
    user message its turn answers, result)]."""
    if not calls:
        return []
    return Message.objects.bulk_create(
        [
            Message(
                conversation_id=conversation_id,
                in_reply_to_id=in_reply_to_id,
                role=Message.Role.TOOL,
                content=without_nul(r.content),  # a tool's output may quote the model's arguments
                tool_call_id=r.tool_call_id,
                tool_name=r.tool_name,
                metadata={"is_error": r.is_error, **({"malformed": True} if r.malformed else {})},
            )
            for conversation_id, in_reply_to_id, r in calls
        ]
    )


def save_tool_result(
    *, conversation_id: uuid.UUID, in_reply_to_id: int, tool_call_id: str, tool_name: str, content: str, is_error: bool
) -> Message:
    (message,) = save_tool_results(
        conversation_id=conversation_id,
        in_reply_to_id=in_reply_to_id,
        results=[ToolResult(tool_call_id=tool_call_id, tool_name=tool_name, content=content, is_error=is_error)],
    )
    return message


def record_turn_error(*, conversation_id: uuid.UUID, in_reply_to_id: int, text: str, detail: dict) -> Message:
    return Message.objects.create(
        conversation_id=conversation_id, in_reply_to_id=in_reply_to_id, role=Message.Role.ERROR, content=text, metadata=detail
    )


def record_unanswered_error(*, conversation_id: uuid.UUID, text: str) -> Message | None:
    """A turn that could not even start: an error (with Retry) for the newest user message."""
    last_user = Message.objects.filter(conversation_id=conversation_id, role=Message.Role.USER).order_by("-id").first()
    if last_user is None or not needs_reply(conversation_id=conversation_id):
        return None
    return Message.objects.create(
        conversation_id=conversation_id, in_reply_to=last_user, role=Message.Role.ERROR, content=text, metadata={"kind": "unavailable"}
    )


class NothingToRetry(Conflict):
    """Retry asked for, but the last reply did not fail."""


@transaction.atomic
def prepare_retry(*, user: User, conversation_id: uuid.UUID) -> list[int]:
    """Remove the failed turn's error message(s) so the turn can run again; returns their ids."""
    conversation = Conversation.objects.select_for_update().get(owner=user, pk=conversation_id)
    trailing_errors = []
    for message in conversation.messages.order_by("-created_at", "-id"):
        if message.role != Message.Role.ERROR:
            break
        trailing_errors.append(message.pk)
    if not trailing_errors:
        raise NothingToRetry("There is nothing to retry: the last reply did not fail.")
    Message.objects.filter(pk__in=trailing_errors).delete()
    return trailing_errors


def post_derived_user_message(*, conversation_id: uuid.UUID, content: str, metadata: dict) -> Message:
    """A user-role message Clarion writes on the person's behalf: a clarified request, or the
    answer to a question detected in a reply. The metadata says where it came from."""
    message = Message.objects.create(conversation_id=conversation_id, role=Message.Role.USER, content=content, metadata=metadata)
    Conversation.objects.filter(pk=conversation_id).update(updated_at=timezone.now())
    return message


class NotEditable(Conflict):
    """An edit of a message that cannot be edited now; the text says why."""


@transaction.atomic
def edit_last_user_message(*, user: User, conversation_id: uuid.UUID, message_id: int, content: str) -> tuple[Message, list[int]]:
    """Replace the text of the person's last message and remove everything that followed it, so
    its turn runs again on the new text (as Regenerate does). Returns the message and the ids of
    the removed rows.

    Checked like a new message (not empty, not too long); only the last message the person typed,
    and only when no reply is being written and no question waits.
    """
    text = validate_user_message(content)
    conversation = Conversation.objects.select_for_update().get(owner=user, pk=conversation_id)
    last_user = conversation.messages.filter(role=Message.Role.USER).order_by("-id").first()
    if last_user is None or last_user.pk != message_id:
        raise NotEditable("Only your last message can be edited.")
    if last_user.metadata.get("answer_to") or last_user.metadata.get("clarification_of"):
        raise NotEditable("That message answered a question; it cannot be edited.")
    if needs_reply(conversation_id=conversation.pk) or question_selectors.has_open_group(conversation_id=conversation.pk):
        raise NotEditable("Wait for the reply to finish (or stop it) before editing.")
    removed = list(conversation.messages.filter(pk__gt=last_user.pk).order_by("id").values_list("pk", flat=True))
    Message.objects.filter(pk__in=removed).delete()
    last_user.content = text
    last_user.metadata = {**last_user.metadata, "edited": True}
    last_user.save(update_fields=["content", "metadata"])
    conversation.updated_at = timezone.now()
    conversation.save(update_fields=["updated_at"])
    return last_user, removed


class NothingToRegenerate(MessageRejected):
    pass


@transaction.atomic
def prepare_regenerate(*, user: User, conversation_id: uuid.UUID) -> list[int]:
    """Remove the last reply so its turn runs again; returns the ids of the removed rows.

    Only a finished, plain reply can be regenerated: a reply that asked a question or proposed
    changes is answered through its card, and a reply still being written is stopped first.
    """
    conversation = Conversation.objects.select_for_update().get(owner=user, pk=conversation_id)
    last_user = conversation.messages.filter(role=Message.Role.USER).order_by("-id").first()
    if last_user is None:
        raise NothingToRegenerate("There is no reply to regenerate yet.")
    if needs_reply(conversation_id=conversation.pk) or question_selectors.has_open_group(conversation_id=conversation.pk):
        raise NothingToRegenerate("Wait for the reply to finish (or stop it) before regenerating.")
    turn = list(conversation.messages.filter(in_reply_to=last_user).order_by("id"))
    final = turn[-1] if turn else None
    if final is None or final.role != Message.Role.ASSISTANT or final.tool_calls:
        raise NothingToRegenerate("Only the last reply can be regenerated.")
    if any(call.get("name") in CARD_TOOLS for m in turn for call in m.tool_calls):
        raise NothingToRegenerate("That reply asked you something; answer its card instead.")
    removed = [m.pk for m in turn]
    Message.objects.filter(pk__in=removed).delete()
    return removed
