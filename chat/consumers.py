from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from pydantic import ValidationError

from chat import agent, answering, deadlines, publishing, rendering, selectors, services
from chat.frames import AnswerQuestion, EditMessage, QuestionClock, Regenerate, Retry, SendMessage, SkipQuestions, Stop, parse_frame
from chat.models import Conversation, user_group_name
from project.errors import OUTAGE_ERRORS, ClarionError, first_error, unavailable_error
from questions import selectors as question_selectors
from questions import services as questions
from questions.models import PendingQuestion

if TYPE_CHECKING:
    from project.users import User

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_TRY_AGAIN_LATER = 1013


def _card_of(user: User, question_id: uuid.UUID, *, error: str = "") -> str:
    question = question_selectors.question_for_user(user=user, question_id=question_id)
    return rendering.question_group(question.group, error=error)


class ConversationConsumer(AsyncWebsocketConsumer):
    """One socket per open tab of a conversation. Thin: parse → service → push partials."""

    conversation: Conversation | None = None

    async def dispatch(self, message: dict) -> None:
        # Channels would first hop to the database thread to tidy its connections, for every
        # event — most are HTML frames forwarded to this tab, which would then wait behind turn
        # work to be sent. Every database call here makes its own hop, which does that upkeep.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        # Accept first so the close code reaches the browser; a refused handshake carries none.
        await self.accept()
        user = self.scope["user"]
        if not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        try:
            self.conversation = await database_sync_to_async(selectors.conversation_for_user)(user=user, conversation_id=conversation_id)
            await self.channel_layer.group_add(self.conversation.group_name, self.channel_name)
            # The conversation list of every tab follows new activity in any of the user's conversations.
            await self.channel_layer.group_add(user_group_name(user.pk), self.channel_name)
            deadlines.ensure_sweeper()
            # A turn whose worker died left its message unanswered; the turn lock makes this a
            # no-op while a live turn is still running.
            if await database_sync_to_async(services.needs_reply)(conversation_id=self.conversation.pk):
                agent.start_turn(self.conversation.pk)
        except Conversation.DoesNotExist:
            await self.close(code=CLOSE_NOT_FOUND)
        except OUTAGE_ERRORS as exc:
            if unavailable_error(exc) is None:
                raise
            await self.close(code=CLOSE_TRY_AGAIN_LATER)  # the page reconnects, backing off

    async def disconnect(self, code: int) -> None:
        if self.conversation is not None:
            await self.channel_layer.group_discard(self.conversation.group_name, self.channel_name)
            await self.channel_layer.group_discard(user_group_name(self.scope["user"].pk), self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        conversation = self.conversation
        if conversation is None:
            return
        # connect() opened the conversation only for a signed-in owner, so the scope's user is one.
        user: User = self.scope["user"]
        try:
            frame = parse_frame(text_data, bytes_data, max_bytes=settings.WS_FRAME_MAX_BYTES)
            if isinstance(frame, SendMessage):
                await self._send_message(frame, user=user, conversation=conversation)
            elif isinstance(frame, Retry):
                await self._retry(user=user, conversation=conversation)
            elif isinstance(frame, Stop):
                await database_sync_to_async(services.request_stop)(user=user, conversation_id=conversation.pk)
            elif isinstance(frame, Regenerate):
                await self._regenerate(user=user, conversation=conversation)
            elif isinstance(frame, EditMessage):
                await self._edit(frame, user=user, conversation=conversation)
            elif isinstance(frame, AnswerQuestion):
                await self._answer(frame, user=user)
            elif isinstance(frame, SkipQuestions):
                await answering.skip(user=user, group_id=frame.group_id)
            elif isinstance(frame, QuestionClock):
                await self._clock(frame, user=user)
        # The one place this entry point turns errors into what the person sees: an error frame
        # under the composer; the socket stays up and nothing was written.
        except questions.AlreadyResolved:
            pass  # its receipt was already broadcast to this tab
        except Conversation.DoesNotExist:  # deleted in another tab while this one was open
            await self.send(text_data=rendering.composer_error(rendering.CONVERSATION_DELETED))
        except ClarionError as exc:
            await self.send(text_data=rendering.composer_error(exc.message))
        except ValidationError as exc:  # an answer that fails its schema at the edge
            await self.send(text_data=rendering.composer_error(first_error(exc)))
        except OUTAGE_ERRORS as exc:  # no connection in time (a burst, Postgres restarting, Redis down)
            if (error := unavailable_error(exc)) is None:
                raise
            await self.send(text_data=rendering.composer_error(error.message))

    async def _answer(self, frame: AnswerQuestion, *, user: User) -> None:
        """The card's answer, as the page sends it while its socket is open. Like the card's POST,
        an answer the question refuses comes back as the card with the reason on it, and one
        already resolved as its resolved card — to this tab, where the person answered."""
        try:
            await answering.submit_answer(
                user=user, question_id=frame.question_id, answer=frame.to_answer(), via=PendingQuestion.ResolvedVia.OPTION
            )
        except questions.QuestionNotFound:
            raise
        except questions.AlreadyResolved:
            await self.send(text_data=await database_sync_to_async(_card_of)(user, frame.question_id))
        except (ClarionError, ValidationError) as exc:
            error = exc.message if isinstance(exc, ClarionError) else first_error(exc)
            await self.send(text_data=await database_sync_to_async(_card_of)(user, frame.question_id, error=error))

    async def _clock(self, frame: QuestionClock, *, user: User) -> None:
        """A card's clock, as the page changes it while its socket is open. Every tab, this one
        too, is sent the card with its new clock, or the receipt of its expiry; an expiry asked
        for before the deadline (paused or extended meanwhile) changes nothing."""
        if frame.action == "expire":
            question = await database_sync_to_async(question_selectors.question_for_user)(user=user, question_id=frame.question_id)
            await answering.expire(question.pk, early_seconds=answering.PAGE_EXPIRY_TOLERANCE_SECONDS)
            return
        change = answering.pause if frame.action == "pause" else answering.resume
        await change(user=user, question_id=frame.question_id)

    async def _send_message(self, frame: SendMessage, *, user: User, conversation: Conversation) -> None:
        text = services.validate_user_message(frame.message)
        # While a question waits, what the person types answers it (or is shorthand: "1a 2b").
        if await answering.answer_from_chat_text(user=user, conversation_id=conversation.pk, text=text):
            await self.send(text_data=rendering.composer(conversation) + rendering.composer_error(""))
            return
        message = await database_sync_to_async(services.post_user_message)(
            user=user, conversation_id=conversation.pk, content=frame.message, time_zone=frame.time_zone
        )
        updated = message.conversation
        # The heading shows the title the first message gave the conversation.
        await self._broadcast(conversation, rendering.message_appended(message) + rendering.conversation_heading(updated))
        await self.send(text_data=rendering.composer(updated) + rendering.composer_error(""))
        agent.start_turn(updated.pk)
        # Then the list, in every tab of this user, with this conversation on top: after the turn
        # has started, so its read costs the reply nothing.
        await publishing.publish_conversation_list(user)

    async def _edit(self, frame: EditMessage, *, user: User, conversation: Conversation) -> None:
        message, removed = await database_sync_to_async(services.edit_last_user_message)(
            user=user, conversation_id=conversation.pk, message_id=int(frame.message_id), content=frame.message
        )
        await self._broadcast(conversation, "".join(rendering.message_removed(pk) for pk in removed) + rendering.message_replaced(message))
        await self.send(text_data=rendering.composer_error(""))
        agent.start_turn(conversation.pk)
        await publishing.publish_conversation_list(user)

    async def _retry(self, *, user: User, conversation: Conversation) -> None:
        removed = await database_sync_to_async(services.prepare_retry)(user=user, conversation_id=conversation.pk)
        await self._broadcast(conversation, "".join(rendering.message_removed(pk) for pk in removed))
        await self.send(text_data=rendering.composer_error(""))
        agent.start_turn(conversation.pk)

    async def _regenerate(self, *, user: User, conversation: Conversation) -> None:
        removed = await database_sync_to_async(services.prepare_regenerate)(user=user, conversation_id=conversation.pk)
        await self._broadcast(conversation, "".join(rendering.message_removed(pk) for pk in removed))
        await self.send(text_data=rendering.composer_error(""))
        agent.start_turn(conversation.pk)

    async def _broadcast(self, conversation: Conversation, html: str) -> None:
        await self.channel_layer.group_send(conversation.group_name, {"type": "broadcast.html", "html": html})

    async def broadcast_html(self, event: dict) -> None:
        await self.send(text_data=event["html"])
