from __future__ import annotations

import uuid

from chat.models import Conversation, Message


def conversations_for_user(*, user, limit: int = 50) -> list[Conversation]:
    return list(Conversation.objects.filter(owner=user).order_by("-updated_at")[:limit])


def conversation_for_user(*, user, conversation_id: uuid.UUID | str) -> Conversation:
    """The user's conversation, or Conversation.DoesNotExist (also for another user's id)."""
    return Conversation.objects.get(owner=user, pk=conversation_id)


def visible_messages(*, conversation: Conversation) -> list[Message]:
    """What the thread shows: tool plumbing stays out of sight."""
    return list(conversation.messages.exclude(role=Message.Role.TOOL).order_by("created_at", "id"))
