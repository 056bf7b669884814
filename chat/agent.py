"""The agent loop (DESIGN §3): one turn = up to N LLM calls, tools in between, every step a row.

A turn is started by whichever worker received the message; a Postgres advisory lock keeps it to
one turn per conversation across workers. Tokens go to the conversation's channel-layer group,
so every open tab sees them. A failure ends the turn with a visible, retryable error message.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import AsyncIterator

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from chat import rendering, selectors, services, tools
from chat.locks import conversation_turn_lock
from chat.models import Conversation, Message
from chat.prompts import system_prompt
from llm import ChatMessage, Completion, LLMClient, LLMError, StreamDone, StreamRestart, TextDelta, ToolCall, client_from_settings
from workspace.selectors import snapshot_for_user

log = logging.getLogger("clarion.agent")

# Streamed text is pushed at most this often: one frame per token would flood slow tabs.
STREAM_FLUSH_SECONDS = 0.05
# A turn lock that is free again is re-checked this many times for messages that raced in.
MAX_LOCK_ROUNDS = 3
# Turns run back to back under one lock while new messages keep arriving; bounded all the same.
MAX_TURNS_PER_LOCK = 10

_running: set[asyncio.Task] = set()


def start_turn(conversation_id: uuid.UUID) -> asyncio.Task:
    """Run any pending turn of the conversation in the background of this process's event loop."""
    task = asyncio.get_running_loop().create_task(run_pending_turns(conversation_id))
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task


async def wait_for_running_turns() -> None:
    """For tests and shutdown: let every started turn finish."""
    while _running:
        await asyncio.gather(*list(_running), return_exceptions=True)


async def run_pending_turns(conversation_id: uuid.UUID) -> None:
    for _ in range(MAX_LOCK_ROUNDS):
        async with conversation_turn_lock(conversation_id) as acquired:
            if not acquired:
                return  # the turn holding the lock re-checks for new messages before it lets go
            for _ in range(MAX_TURNS_PER_LOCK):
                if not await database_sync_to_async(services.needs_reply)(conversation_id=conversation_id):
                    break
                await Turn(conversation_id).run()
        if not await database_sync_to_async(services.needs_reply)(conversation_id=conversation_id):
            return


class Turn:
    def __init__(self, conversation_id: uuid.UUID, *, client: LLMClient | None = None):
        self.conversation_id = conversation_id
        self.client = client or client_from_settings()
        self.layer = get_channel_layer()

    async def run(self) -> None:
        conversation, messages, self.reply_to = await database_sync_to_async(self._load)()
        self.conversation = conversation
        try:
            await self._loop(messages)
        except Exception:  # a bug must still end the turn visibly, never hang it
            log.exception("turn failed", extra={"conversation": str(self.conversation_id)})
            await self._fail("Something went wrong on Clarion's side while answering. Try again.", {"kind": "internal"})

    def _load(self) -> tuple[Conversation, list[ChatMessage], int]:
        conversation = Conversation.objects.select_related("owner").get(pk=self.conversation_id)
        history = selectors.history_for_model(conversation=conversation, limit=settings.AGENT_HISTORY_MESSAGES)
        reply_to = max(m.pk for m in history if m.role == Message.Role.USER)
        system = ChatMessage(role="system", content=system_prompt(snapshot_for_user(user=conversation.owner)))
        return conversation, [system, *(_as_chat_message(m) for m in history)], reply_to

    async def _loop(self, messages: list[ChatMessage]) -> None:
        specs = tools.tool_specs()
        for call_number in range(1, settings.AGENT_MAX_LLM_CALLS + 1):
            stream_id = uuid.uuid4().hex[:12]
            await self._publish(rendering.stream_started(stream_id))
            started = time.perf_counter()
            try:
                completion = await self._stream(stream_id, self.client.stream(messages, tools=specs))
            except LLMError as exc:
                await self._fail(exc.user_message, {"kind": exc.kind, "status": exc.status, "attempts": exc.attempts}, stream_id)
                return
            metadata = _call_metadata(self.client, completion, time.perf_counter() - started)
            calls = [c.model_dump() for c in completion.tool_calls]
            assistant = await database_sync_to_async(services.save_assistant_message)(
                conversation=self.conversation, in_reply_to_id=self.reply_to, content=completion.content, tool_calls=calls, metadata=metadata
            )
            await self._publish(rendering.stream_finished(stream_id, assistant))
            messages.append(_as_chat_message(assistant))
            if not completion.tool_calls:
                return
            for call in completion.tool_calls:
                result = await database_sync_to_async(self._run_tool)(call)
                messages.append(_as_chat_message(result))
        await self._fail(
            f"I stopped after {settings.AGENT_MAX_LLM_CALLS} model calls without reaching an answer. "
            "Try again, or ask a narrower question.",
            {"kind": "call_limit"},
        )

    async def _stream(self, stream_id: str, events: AsyncIterator) -> Completion:
        pending, last_flush = "", time.monotonic()
        async for event in events:
            if isinstance(event, TextDelta):
                pending += event.text
                if time.monotonic() - last_flush >= STREAM_FLUSH_SECONDS:
                    await self._publish(rendering.stream_delta(stream_id, pending))
                    pending, last_flush = "", time.monotonic()
            elif isinstance(event, StreamRestart):
                pending = ""
                await self._publish(rendering.stream_reset(stream_id))
            elif isinstance(event, StreamDone):
                if pending:
                    await self._publish(rendering.stream_delta(stream_id, pending))
                return event.completion
        raise LLMError("stream_interrupted", "The model's answer ended before it was complete.")

    def _run_tool(self, call: ToolCall) -> Message:
        outcome = tools.execute(user=self.conversation.owner, call=call)
        return services.save_tool_result(
            conversation=self.conversation, in_reply_to_id=self.reply_to, tool_call_id=call.id, tool_name=call.name, content=outcome.content, is_error=outcome.is_error
        )

    async def _fail(self, text: str, detail: dict, stream_id: str | None = None) -> None:
        error = await database_sync_to_async(services.record_turn_error)(
            conversation=self.conversation, in_reply_to_id=self.reply_to, text=text, detail=detail
        )
        await self._publish(rendering.stream_finished(stream_id, error) if stream_id else rendering.message_appended(error))

    async def _publish(self, html: str) -> None:
        await self.layer.group_send(self.conversation.group_name, {"type": "broadcast.html", "html": html})


def _as_chat_message(message: Message) -> ChatMessage:
    if message.role == Message.Role.TOOL:
        return ChatMessage(role="tool", content=message.content, tool_call_id=message.tool_call_id, name=message.tool_name)
    if message.role == Message.Role.ASSISTANT:
        return ChatMessage(role="assistant", content=message.content or None, tool_calls=[ToolCall(**c) for c in message.tool_calls])
    return ChatMessage(role="user", content=message.content)


def _call_metadata(client: LLMClient, completion: Completion, seconds: float) -> dict:
    return {
        "engine": client.name,
        "model": completion.model,
        "usage": completion.usage.model_dump(),
        "attempts": completion.attempts,
        "seconds": round(seconds, 4),
    }

