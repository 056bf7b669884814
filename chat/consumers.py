from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from chat import agent, rendering, selectors, services
from chat.frames import FrameError, Retry, SendMessage, parse_frame
from chat.models import Conversation

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


class ConversationConsumer(AsyncWebsocketConsumer):
    """One socket per open tab of a conversation. Thin: parse → service → push partials."""

    conversation: Conversation | None = None

    async def connect(self) -> None:
        # Accept first so the close code reaches the browser; a refused handshake carries none.
        await self.accept()
        user = self.scope["user"]
        if not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        try:
            self.conversation = await database_sync_to_async(selectors.conversation_for_user)(
                user=user, conversation_id=conversation_id
            )
        except Conversation.DoesNotExist:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.channel_layer.group_add(self.conversation.group_name, self.channel_name)
        # A turn whose worker died left its message unanswered; the turn lock makes this a no-op
        # while a live turn is still running.
        if await database_sync_to_async(services.needs_reply)(conversation_id=self.conversation.pk):
            agent.start_turn(self.conversation.pk)

    async def disconnect(self, code: int) -> None:
        if self.conversation is not None:
            await self.channel_layer.group_discard(self.conversation.group_name, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.conversation is None:
            return
        try:
            frame = parse_frame(text_data, bytes_data, max_bytes=settings.WS_FRAME_MAX_BYTES)
            if isinstance(frame, SendMessage):
                await self._send_message(frame)
            elif isinstance(frame, Retry):
                await self._retry()
        except (FrameError, services.MessageRejected) as exc:
            await self.send(text_data=rendering.composer_error(str(exc)))

    async def _send_message(self, frame: SendMessage) -> None:
        message = await database_sync_to_async(services.post_user_message)(
            user=self.scope["user"], conversation_id=self.conversation.pk, content=frame.message
        )
        conversation = message.conversation
        await self._broadcast(rendering.message_appended(message) + rendering.conversation_link(conversation))
        await self.send(text_data=rendering.composer(conversation) + rendering.composer_error(""))
        agent.start_turn(conversation.pk)

    async def _retry(self) -> None:
        removed = await database_sync_to_async(services.prepare_retry)(user=self.scope["user"], conversation_id=self.conversation.pk)
        await self._broadcast("".join(rendering.message_removed(pk) for pk in removed))
        await self.send(text_data=rendering.composer_error(""))
        agent.start_turn(self.conversation.pk)

    async def _broadcast(self, html: str) -> None:
        await self.channel_layer.group_send(self.conversation.group_name, {"type": "broadcast.html", "html": html})

    async def broadcast_html(self, event: dict) -> None:
        await self.send(text_data=event["html"])
