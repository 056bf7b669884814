from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from chat.models import Conversation, Message
from questions import selectors as question_selectors

TITLE_CHARS = 60


class MessageRejected(ValueError):
    """A user message that cannot be accepted; the text says why, for the person who typed it."""


def start_conversation(*, user) -> Conversation:
    return Conversation.objects.create(owner=user)


def validate_user_message(content: str) -> str:
    text = (content or "").strip()
    if not text:
        raise MessageRejected("Type a message first.")
    limit = settings.CHAT_MESSAGE_MAX_CHARS
    if len(text) > limit:
        raise MessageRejected(f"That message is {len(text):,} characters; the limit is {limit:,}. Shorten it and send again.")
    return text


@transaction.atomic
def post_user_message(*, user, conversation_id, content: str) -> Message:
    text = validate_user_message(content)
    conversation = Conversation.objects.select_for_update().get(owner=user, pk=conversation_id)
    message = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=text)
    if conversation.title == Conversation.DEFAULT_TITLE:
        conversation.title = _title_from(text)
    conversation.updated_at = timezone.now()
    conversation.save(update_fields=["title", "updated_at"])
    return message


def _title_from(text: str) -> str:
    first_line = " ".join(text.split())
    return first_line if len(first_line) <= TITLE_CHARS else first_line[: TITLE_CHARS - 1].rstrip() + "…"


# --- Turn persistence: every step of a turn is a row, so nothing lives only in a coroutine.

# A turn is over when it wrote a final answer (no tool calls) or an error.
TURN_ENDED = Q(role=Message.Role.ERROR) | Q(role=Message.Role.ASSISTANT, tool_calls=[])


def needs_reply(*, conversation_id) -> bool:
    """True when some user message has no finished turn answering it yet.

    Also true after a worker died mid-turn (its tool results are there, its answer is not), so
    the next turn picks up where that one stopped. False while questions wait for the person:
    the turn that asked them has ended, and their answers start the next one.
    """
    if question_selectors.has_open_group(conversation_id=conversation_id):
        return False
    state = Message.objects.filter(conversation_id=conversation_id).aggregate(
        last_user=Max("id", filter=Q(role=Message.Role.USER)),
        answered=Max("in_reply_to_id", filter=TURN_ENDED),
    )
    return state["last_user"] is not None and (state["answered"] is None or state["last_user"] > state["answered"])


def save_assistant_message(
    *, conversation: Conversation, in_reply_to_id: int, content: str, tool_calls: list[dict], metadata: dict
) -> Message:
    return Message.objects.create(
        conversation=conversation,
        in_reply_to_id=in_reply_to_id,
        role=Message.Role.ASSISTANT,
        content=content,
        tool_calls=tool_calls,
        metadata=metadata,
    )


def save_tool_result(
    *, conversation: Conversation, in_reply_to_id: int, tool_call_id: str, tool_name: str, content: str, is_error: bool
) -> Message:
    return Message.objects.create(
        conversation=conversation,
        in_reply_to_id=in_reply_to_id,
        role=Message.Role.TOOL,
        content=content,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        metadata={"is_error": is_error},
    )


def record_turn_error(*, conversation: Conversation, in_reply_to_id: int, text: str, detail: dict) -> Message:
    return Message.objects.create(
        conversation=conversation, in_reply_to_id=in_reply_to_id, role=Message.Role.ERROR, content=text, metadata=detail
    )


def record_unanswered_error(*, conversation_id, text: str) -> Message | None:
    """A turn that could not even start: an error (with Retry) for the newest user message."""
    last_user = Message.objects.filter(conversation_id=conversation_id, role=Message.Role.USER).order_by("-id").first()
    if last_user is None or not needs_reply(conversation_id=conversation_id):
        return None
    return Message.objects.create(
        conversation_id=conversation_id, in_reply_to=last_user, role=Message.Role.ERROR, content=text, metadata={"kind": "unavailable"}
    )


class NothingToRetry(MessageRejected):
    pass


@transaction.atomic
def prepare_retry(*, user, conversation_id) -> list[int]:
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


def post_derived_user_message(*, conversation_id, content: str, metadata: dict) -> Message:
    """A user-role message Clarion writes on the person's behalf: a clarified request, or the
    answer to a question detected in a reply. The metadata says where it came from."""
    message = Message.objects.create(conversation_id=conversation_id, role=Message.Role.USER, content=content, metadata=metadata)
    Conversation.objects.filter(pk=conversation_id).update(updated_at=timezone.now())
    return message
