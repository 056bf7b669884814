"""Sending HTML to every open tab of a conversation (its channel-layer group).

The bottom of the chat path: the agent, the answer path and the deadline timers all publish
through here, and it imports none of them.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from chat import rendering, selectors
from chat.models import group_name_of, user_group_name
from questions import selectors as question_selectors

if TYPE_CHECKING:
    from chat.models import Conversation
    from chat.selectors import ConversationPage
    from project.users import User


async def send(group: str, html: str) -> None:
    if html:
        await get_channel_layer().group_send(group, {"type": "broadcast.html", "html": html})


def render_group(group_id: uuid.UUID) -> tuple[str, str]:
    """(card html, channel group) of a question group, as every tab should now show it."""
    group = question_selectors.group_by_id(group_id=group_id)
    return rendering.question_group(group), group_name_of(group.conversation_id)


async def publish_group(group_id: uuid.UUID) -> None:
    html, group = await database_sync_to_async(render_group)(group_id)
    await send(group, html)


def _conversation_list(user: User) -> str:
    return rendering.conversation_nav(selectors.conversations_for_user(user=user))


async def publish_conversation_list(user: User) -> None:
    """The user's conversation list, in its new order, to every tab they have open."""
    await send(user_group_name(user.pk), await database_sync_to_async(_conversation_list)(user))


def conversation_changed(conversation: Conversation, page: ConversationPage) -> list[tuple[str, str]]:
    """(group, html) for a new title or pin, to every tab of its owner: the heading where the
    conversation is open, and the list (`page`, read after the change) everywhere. Rendered in
    the caller's thread (a sync view's), so that sending them needs no database."""
    return [
        (conversation.group_name, rendering.conversation_heading(conversation)),
        (user_group_name(conversation.owner_id), rendering.conversation_nav(page)),
    ]


def conversation_deleted(user: User, conversation_id: uuid.UUID) -> list[tuple[str, str]]:
    """(group, html) for a deleted conversation: a tab still showing it says so; every list drops it."""
    return [
        (group_name_of(conversation_id), rendering.composer_error(rendering.CONVERSATION_DELETED)),
        (user_group_name(user.pk), _conversation_list(user)),
    ]


async def send_all(frames: list[tuple[str, str]]) -> None:
    for group, html in frames:
        await send(group, html)
