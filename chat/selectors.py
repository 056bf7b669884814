from __future__ import annotations

import uuid

from chat.models import Conversation, Message


def conversations_for_user(*, user, limit: int = 50) -> list[Conversation]:
    return list(Conversation.objects.filter(owner=user).order_by("-updated_at")[:limit])


def conversation_for_user(*, user, conversation_id: uuid.UUID | str) -> Conversation:
    """The user's conversation, or Conversation.DoesNotExist (also for another user's id)."""
    return Conversation.objects.get(owner=user, pk=conversation_id)


def history_for_model(*, conversation: Conversation, limit: int) -> list[Message]:
    """The newest `limit` messages the model should see, in the order a model expects.

    - A turn's rows follow the user message they answer, even when the user typed again while
      the turn ran (chronologically that message sits inside the turn).
    - The history starts at a user message, so every tool result stays next to its call, and a
      tool call whose result was never saved (worker died in between) is dropped.
    - Error messages are for people only.
    """
    recent = list(conversation.messages.exclude(role=Message.Role.ERROR).order_by("-id")[:limit])
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
    from questions import selectors as question_selectors

    items = [(m.created_at, "message", m) for m in visible_messages(conversation=conversation)]
    items += [(g.created_at, "questions", g) for g in question_selectors.groups_for_conversation(conversation_id=conversation.pk)]
    return [(kind, obj) for _, kind, obj in sorted(items, key=lambda i: i[0])]
