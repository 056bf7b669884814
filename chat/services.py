from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.models import Conversation, Message

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
