from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from chat import rendering, selectors, services
from chat.frames import FrameError, SendMessage, parse_frame
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
        except (FrameError, services.MessageRejected) as exc:
            await self.send(text_data=rendering.composer_error(str(exc)))

    async def _send_message(self, frame: SendMessage) -> None:
        message, conversation = await database_sync_to_async(self._post)(frame.message)
        await self.channel_layer.group_send(
            conversation.group_name,
            {"type": "broadcast.html", "html": rendering.message_appended(message) + rendering.conversation_link(conversation)},
        )
        await self.send(text_data=rendering.composer(conversation) + rendering.composer_error(""))

    def _post(self, text: str):
        message = services.post_user_message(user=self.scope["user"], conversation_id=self.conversation.pk, content=text)
        return message, message.conversation

    async def broadcast_html(self, event: dict) -> None:
        await self.send(text_data=event["html"])
