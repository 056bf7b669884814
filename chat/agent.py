"""The agent loop (DESIGN §3): one turn = up to N LLM calls, tools in between, every step a row.

A turn is started by whichever worker received the message; a Postgres advisory lock keeps it to
one turn per conversation across workers. Tokens go to the conversation's channel-layer group,
so every open tab sees them. A failure ends the turn with a visible, retryable error message.
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from typing import AsyncIterator

import psycopg
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from chat import answering, background, deadlines, rendering, selectors, services, tools
from chat.locks import conversation_turn_lock
from chat.models import Conversation, Message
from chat.prompts import system_prompt
from knowledge.models import AIConfig
from knowledge.selectors import get_ai_config
from llm.metrics import LLM_CALL_SECONDS
from llm import ChatMessage, Completion, LLMClient, LLMError, StreamDone, StreamRestart, TextDelta, ToolCall, client_from_settings
from questions import clarification, detector, guesser
from questions import selectors as question_selectors
from questions import services as questions
from questions.models import QuestionGroup
from questions.schemas import OptionSpec, QuestionSpec
from workspace.selectors import Snapshot, snapshot_for_user

log = logging.getLogger("clarion.agent")

# Streamed text is pushed at most this often: one frame per token would flood slow tabs.
STREAM_FLUSH_SECONDS = 0.05
# A turn lock that is free again is re-checked this many times for messages that raced in.
MAX_LOCK_ROUNDS = 3
# Turns run back to back under one lock while new messages keep arriving; bounded all the same.
MAX_TURNS_PER_LOCK = 10

def start_turn(conversation_id: uuid.UUID) -> asyncio.Task:
    """Run any pending turn of the conversation in the background of this process's event loop."""
    return background.spawn(run_pending_turns(conversation_id))


async def wait_for_running_turns() -> None:
    """For tests and shutdown: let every started turn (and what it started) finish."""
    await background.wait_for_all()


async def run_pending_turns(conversation_id: uuid.UUID) -> None:
    try:
        await _run_pending_turns(conversation_id)
    except (psycopg.OperationalError, OSError) as exc:
        # No database connection for the turn lock (Postgres full or down): the person must see
        # that the reply failed and be able to retry — never a silently unanswered message.
        log.error("turn could not start for %s: %s", conversation_id, exc)
        await _fail_without_turn(conversation_id, "Clarion could not reach its database to answer. Try again in a moment.")


async def _fail_without_turn(conversation_id: uuid.UUID, text: str) -> None:
    try:
        error = await database_sync_to_async(services.record_unanswered_error)(conversation_id=conversation_id, text=text)
    except Exception:
        log.exception("could not record the failed turn for %s", conversation_id)
        return
    if error is not None:
        html = await database_sync_to_async(rendering.message_appended)(error)
        await get_channel_layer().group_send(Conversation(pk=conversation_id).group_name, {"type": "broadcast.html", "html": html})


async def _run_pending_turns(conversation_id: uuid.UUID) -> None:
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
        try:
            loaded = await database_sync_to_async(self._load)()
        except Exception:  # even a turn that cannot load ends visibly
            log.exception("turn could not load", extra={"conversation": str(self.conversation_id)})
            await _fail_without_turn(self.conversation_id, "Something went wrong on Clarion's side while answering. Try again.")
            return
        conversation, messages, self.request, snapshot, self.continuing, config = loaded
        self.conversation, self.reply_to = conversation, self.request.pk
        self.timeouts = questions.QuestionTimeouts(
            low=config.question_timeout_low_seconds,
            medium=config.question_timeout_medium_seconds,
            high=config.question_timeout_high_seconds,
            ask=config.ask_timeout_seconds,
        )
        self.threshold = config.clarification_threshold
        self.citations: list[dict] = []
        self.context = _context_text(messages, snapshot)
        self.projects = [p.project.name for p in snapshot.projects if not p.project.archived]
        try:
            if await self._clarify():
                return
            await self._loop(messages)
        except Exception:  # a bug must still end the turn visibly, never hang it
            log.exception("turn failed", extra={"conversation": str(self.conversation_id)})
            await self._fail("Something went wrong on Clarion's side while answering. Try again.", {"kind": "internal"})

    def _load(self) -> tuple[Conversation, list[ChatMessage], Message, Snapshot, bool, AIConfig]:
        conversation = Conversation.objects.select_related("owner").get(pk=self.conversation_id)
        history = selectors.history_for_model(conversation=conversation, limit=settings.AGENT_HISTORY_MESSAGES)
        request = max((m for m in history if m.role == Message.Role.USER), key=lambda m: m.pk)
        snapshot = snapshot_for_user(user=conversation.owner)
        system = ChatMessage(role="system", content=system_prompt(snapshot))
        # Rows already answering the request: this turn continues it (after an answer, a crash).
        continuing = any(m.in_reply_to_id == request.pk for m in history)
        return conversation, [system, *(_as_chat_message(m) for m in history)], request, snapshot, continuing, get_ai_config()

    # --- asking instead of guessing --------------------------------------------------------

    async def _clarify(self) -> bool:
        """Seed 002: analyse a fresh request; below the threshold, ask and end the turn."""
        meta = self.request.metadata or {}
        if not settings.CLARIFICATION_ENABLED or meta.get("answer_to") or meta.get("skipped") or self.continuing:
            return False
        root_id = meta.get("clarification_of") or self.request.pk
        rounds = await database_sync_to_async(question_selectors.clarification_rounds)(
            conversation_id=self.conversation_id, since_message_id=root_id
        )
        if rounds >= clarification.MAX_ROUNDS:
            return False
        analysis = await clarification.analyze(
            client=self.client, request=self.request.content, context=self.context, projects=self.projects,
            threshold=self.threshold,
        )  # fmt: skip
        if not clarification.needs_clarification(analysis, threshold=self.threshold):
            return False
        specs = [
            QuestionSpec(
                question=q.question, header=q.header, allow_custom=q.allow_freeform, multi_select=q.multi_select,
                options=[OptionSpec(label=o.label, description=o.description) for o in q.options],
            )
            for q in analysis.questions
        ]  # fmt: skip
        extras = [[{"key": o.key, "maps_to": o.maps_to, "replaces_request": o.replaces_request} for o in q.options] for q in analysis.questions]
        group = await self._ask(
            kind=QuestionGroup.Kind.CLARIFY, specs=specs, option_extras=extras, complexity=analysis.complexity,
            payload={"request_message_id": self.request.pk, "request_root_id": root_id, "in_reply_to_id": self.reply_to,
                     "analysis": analysis.model_dump(exclude={"questions"}), "round": rounds + 1},
        )  # fmt: skip
        return group is not None

    async def _detect_question(self, reply: str) -> None:
        """Seed 001: a reply that ends by asking the person something becomes a card."""
        if not settings.QUESTION_DETECTOR_ENABLED or not detector.asks_something(reply):
            return
        found = await detector.detect(client=self.client, reply=reply)
        if not found:
            return
        specs = [QuestionSpec(question=q.question[:500], options=[OptionSpec(label=o[:200]) for o in q.options]) for q in found]
        complexity = max((q.complexity for q in found), key=["low", "medium", "high"].index)
        await self._ask(kind=QuestionGroup.Kind.DETECTED, specs=specs, complexity=complexity, payload={"in_reply_to_id": self.reply_to})

    async def _ask(self, **kwargs) -> QuestionGroup | None:
        try:
            group = await database_sync_to_async(questions.ask)(
                user=self.conversation.owner, conversation_id=self.conversation_id, timeouts=self.timeouts, **kwargs
            )
        except questions.AskRejected as exc:
            log.info("not asking: %s", exc)
            return None
        await self._show(group)
        return group

    async def _show(self, group: QuestionGroup) -> None:
        """Publish a new card, arm its deadline, and let the guesser rank its options meanwhile."""
        html, first = await database_sync_to_async(_render_new_group)(group.pk)
        await self._publish(html)
        if first is not None:
            deadlines.schedule(first.pk, first.deadline)
        if group.kind != QuestionGroup.Kind.CONFIRM and settings.QUESTION_GUESSER_ENABLED:
            background.spawn(guess_in_background(group.pk, client=self.client, context=self.context))

    async def _loop(self, messages: list[ChatMessage]) -> None:
        specs = tools.tool_specs()
        for call_number in range(1, settings.AGENT_MAX_LLM_CALLS + 1):
            stream_id = uuid.uuid4().hex[:12]
            await self._publish(rendering.stream_started(stream_id))
            started = time.perf_counter()
            try:
                completion = await self._stream(stream_id, self.client.stream(messages, tools=specs))
            except LLMError as exc:
                LLM_CALL_SECONDS.labels(purpose="chat", outcome=exc.kind).observe(time.perf_counter() - started)
                await self._fail(exc.user_message, {"kind": exc.kind, "status": exc.status, "attempts": exc.attempts}, stream_id)
                return
            LLM_CALL_SECONDS.labels(purpose="chat", outcome="ok").observe(time.perf_counter() - started)
            metadata = _call_metadata(self.client, completion, time.perf_counter() - started)
            if not completion.tool_calls and self.citations:
                metadata["citations"] = _cited(completion.content, self.citations)
            calls = [c.model_dump() for c in completion.tool_calls]
            assistant = await database_sync_to_async(services.save_assistant_message)(
                conversation=self.conversation, in_reply_to_id=self.reply_to, content=completion.content, tool_calls=calls, metadata=metadata
            )
            await self._publish(rendering.stream_finished(stream_id, assistant))
            messages.append(_as_chat_message(assistant))
            if not completion.tool_calls:
                await self._detect_question(completion.content)
                return
            waiting = False
            for call in completion.tool_calls:
                outcome, result = await self._run_tool(call)
                if outcome.waiting_on is not None:
                    waiting = True
                    await self._show(outcome.waiting_on)
                else:
                    messages.append(_as_chat_message(result))
            if waiting:
                return  # the turn ends here; the answers start the next one
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

    async def _run_tool(self, call: ToolCall) -> tuple[tools.ToolOutcome, Message | None]:
        ctx = tools.ToolContext(
            user=self.conversation.owner,
            conversation_id=self.conversation_id,
            tool_call_id=call.id,
            in_reply_to_id=self.reply_to,
            timeouts=self.timeouts,
        )
        outcome = await tools.execute(ctx=ctx, call=call)
        if outcome.waiting_on is not None:
            return outcome, None  # its result is the person's answer, recorded when it comes
        if call.name == "search_knowledge_base" and not outcome.is_error:
            self.citations = json.loads(outcome.content).get("citations", [])
        result = await database_sync_to_async(services.save_tool_result)(
            conversation=self.conversation, in_reply_to_id=self.reply_to, tool_call_id=call.id, tool_name=call.name,
            content=outcome.content, is_error=outcome.is_error,
        )  # fmt: skip
        return outcome, result

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



def _cited(reply: str, citations: list[dict]) -> list[dict]:
    """The sources the reply cites with [n]; all of them when it uses no markers at all."""
    used = {int(n) for n in re.findall(r"\[(\d+)\]", reply)}
    return [c for c in citations if c["n"] in used] or citations


def _render_new_group(group_id):
    group = QuestionGroup.objects.get(pk=group_id)
    questions_ = question_selectors.group_questions(group)
    return rendering.question_group_appended(group), (questions_[0] if questions_ else None)


def _context_text(messages: list[ChatMessage], snapshot: Snapshot) -> str:
    """What the guesser and the clarifier read: the recent conversation and the workspace's names."""
    recent = [f"{m.role}: {m.content}" for m in messages[1:] if m.content and m.role in ("user", "assistant")][-10:]
    projects = ", ".join(p.project.name for p in snapshot.projects)
    tasks = "; ".join(t.title for t in [*snapshot.in_progress, *snapshot.todo])
    return "\n".join([*recent, f"projects: {projects}", f"open tasks: {tasks}"])


async def guess_in_background(group_id, *, client: LLMClient, context: str) -> None:
    """Rank each pending question's options; the hints swap into every tab when ready."""
    group_questions = await database_sync_to_async(lambda: question_selectors.group_questions(QuestionGroup.objects.get(pk=group_id)))()
    for question in group_questions:
        if not question.is_pending:
            continue
        ranking = await guesser.rank_options(client=client, question=question.question, options=question.options, context=context)
        await database_sync_to_async(questions.record_guess)(question_id=question.pk, ranking=ranking)
    await answering.publish_group(group_id)
