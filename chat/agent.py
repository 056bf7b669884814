"""The agent loop: one turn = up to N LLM calls, tools in between, every step a row.

A turn is started by whichever worker received the message; a Postgres advisory lock keeps it to
one turn per conversation across workers. Tokens go to the conversation's channel-layer group,
so every open tab sees them. A failure ends the turn with a visible, retryable error message.

The shape of a turn, in the order it runs:

1. Everything the turn reads is loaded once, frozen (`selectors.turn_context`), in one thread
   hop after the turn lock is taken, with the check that a turn is due.
2. The typing indicator goes out at once — before anything that may wait on a model.
3. `_clarify` and `_ModelLoop` start together. Clarification decides whether a fresh, ambiguous
   request becomes a card (the turn then ends and the model call is dropped unseen); meanwhile
   the model loop calls the model, but shows and saves nothing until clarification said "go on".
   It then streams its reply, runs its tool calls and repeats (bounded).
4. `_detect_question`: a final reply that asks the person something becomes a card.

Auxiliary model calls (clarification, detector, guesser) get a short budget of their own
(`LLM_AUX_TIMEOUT_SECONDS`) and fail to "nothing to add". Clarification runs beside the chat
call rather than before it, so a hung model costs the person one call budget, not two, and a
working model answers one round trip sooner.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
import uuid
from typing import AsyncIterator, Awaitable, Callable, TypeVar

import psycopg
from channels.db import database_sync_to_async
from django.conf import settings

from chat import background, deadlines, publishing, rendering, selectors, services, stopping, tools
from chat.locks import conversation_turn_lock
from chat.models import Message, group_name_of
from chat.selectors import TurnContext, as_chat_message
from llm import ChatMessage, Completion, LLMClient, LLMError, StreamDone, StreamRestart, TextDelta, ToolCall, ToolSpec, client_from_settings
from llm.logs import begin_turn
from llm.metrics import LLM_CALL_SECONDS
from questions import clarification, detector, guesser
from questions import selectors as question_selectors
from questions import services as questions
from questions.models import PendingQuestion, QuestionGroup
from questions.schemas import OptionSpec, QuestionSpec

log = logging.getLogger("clarion.agent")
T = TypeVar("T")

# Streamed text is pushed at most this often: one frame per token would flood slow tabs.
STREAM_FLUSH_SECONDS = 0.08
# Turns run back to back while new messages keep arriving; bounded all the same.
MAX_TURNS_IN_A_ROW = 10
# Rounds in a row in which every tool call's arguments were unreadable before the turn gives up:
# the model had its chance to correct itself; more calls would only repeat the garble.
MAX_MALFORMED_ROUNDS = 2

INTERNAL_ERROR = "Something went wrong on Clarion's side while answering. Try again."


def start_turn(conversation_id: uuid.UUID) -> asyncio.Task:
    """Run any pending turn of the conversation in the background of this process's event loop."""
    return background.spawn(run_pending_turns(conversation_id))


async def wait_for_running_turns() -> None:
    """For tests and shutdown: let every started turn (and what it started) finish."""
    await background.wait_for_all()


async def run_pending_turns(conversation_id: uuid.UUID, *, client: LLMClient | None = None) -> None:
    try:
        await _run_pending_turns(conversation_id, client)
    except (psycopg.OperationalError, OSError) as exc:
        # No database connection for the turn lock (Postgres full or down): the person must see
        # that the reply failed and be able to retry — never a silently unanswered message.
        log.error("turn could not start for %s: %s", conversation_id, exc)
        await _fail_without_turn(conversation_id, "Clarion could not reach its database to answer. Try again in a moment.")


async def _fail_without_turn(conversation_id: uuid.UUID, text: str) -> None:
    try:
        html = await database_sync_to_async(_record_unanswered)(conversation_id, text)
    except Exception:
        log.exception("could not record the failed turn for %s", conversation_id)
        return
    await publishing.send(group_name_of(conversation_id), html)


def _record_unanswered(conversation_id: uuid.UUID, text: str) -> str:
    error = services.record_unanswered_error(conversation_id=conversation_id, text=text)
    return "" if error is None else rendering.message_appended(error)


async def _run_pending_turns(conversation_id: uuid.UUID, client: LLMClient | None) -> None:
    for _ in range(MAX_TURNS_IN_A_ROW):
        async with conversation_turn_lock(conversation_id) as acquired:
            if not acquired:
                return  # the worker holding the lock checks for new messages once it lets go
            try:
                ctx = await database_sync_to_async(_next_turn)(conversation_id)
            except Exception:  # even a turn that cannot load ends visibly
                log.exception("turn could not load", extra={"conversation": str(conversation_id)})
                await _fail_without_turn(conversation_id, INTERNAL_ERROR)
                ctx = None
            if ctx is not None:
                await run_turn(ctx, client=client)
        # One turn per hold of the lock. A message sent meanwhile found the lock taken and left
        # its reply to this check, made once the lock is free again.
        if not await database_sync_to_async(services.needs_reply)(conversation_id=conversation_id):
            return


def _next_turn(conversation_id: uuid.UUID) -> TurnContext | None:
    """The turn's context, read after the lock was taken (so it sees everything its last holder
    wrote); None when no turn is due."""
    if not services.needs_reply(conversation_id=conversation_id):
        return None
    return selectors.turn_context(conversation_id=conversation_id, history_limit=settings.AGENT_HISTORY_MESSAGES)


async def run_turn(ctx: TurnContext, *, client: LLMClient | None = None) -> None:
    """One turn for the conversation's newest unanswered request, run while holding the
    conversation's turn lock. Never raises: any failure ends the turn with a visible, retryable
    error."""
    begin_turn(conversation_id=ctx.conversation_id)  # every log line of this turn carries its turn_id
    client = client or client_from_settings()
    out = _TurnOutput(ctx)
    clarifying: asyncio.Task[bool] | None = None
    answering: asyncio.Task[None] | None = None
    try:
        await out.start_stream()  # at once: whatever waits on a model from here on, the person sees it working
        if _may_clarify(ctx):
            clarifying = asyncio.create_task(_clarify(ctx, client=client, out=out))
        answering = asyncio.create_task(_ModelLoop(ctx, client=client, out=out, hold=clarifying).run())
        if clarifying is not None and await clarifying:
            answering.cancel()  # the card ends the turn; the model call has shown and saved nothing
            await asyncio.gather(answering, return_exceptions=True)
            return
        await answering
    except Exception:  # a bug must still end the turn visibly, never hang it
        log.exception("turn failed", extra={"conversation": str(ctx.conversation_id)})
        await out.fail(INTERNAL_ERROR, {"kind": "internal"})
    finally:
        for task in (clarifying, answering):
            if task is not None and not task.done():
                task.cancel()


class _TurnOutput:
    """What a turn shows: one stream placeholder at a time, messages, cards, its error."""

    def __init__(self, ctx: TurnContext):
        self.ctx = ctx
        self.stream_id: str | None = None

    async def send(self, html: str) -> None:
        await publishing.send(self.ctx.group_name, html)

    async def start_stream(self) -> str:
        if self.stream_id is None:
            self.stream_id = uuid.uuid4().hex[:12]
            await self.send(rendering.stream_started(self.stream_id))
        return self.stream_id

    async def finish_stream(self, html_for: Callable[[str], str]) -> None:
        """The placeholder becomes `html_for(stream_id)` (the saved message, or nothing)."""
        stream_id, self.stream_id = self.stream_id, None
        if stream_id is not None:
            await self.send(html_for(stream_id))

    async def fail(self, text: str, detail: dict) -> None:
        error = await database_sync_to_async(services.record_turn_error)(
            conversation_id=self.ctx.conversation_id, in_reply_to_id=self.ctx.request_id, text=text, detail=detail
        )
        if self.stream_id is not None:
            await self.finish_stream(lambda sid: rendering.stream_finished(sid, error))
        else:
            await self.send(rendering.message_appended(error))


# The model boundary enforces an auxiliary call's budget and falls back (offline detection,
# offline ranking, "no clarification"); this backstop, a little later, only catches a helper
# that does not return at all (an offline engine stuck on a lock, a bug).
AUX_BACKSTOP_SLACK_SECONDS = 2.0


async def _auxiliary(call: Awaitable[T], *, purpose: str) -> T | None:
    """An auxiliary call, which its own short budget ends with a fallback; None if it hangs anyway."""
    limit = settings.LLM_AUX_TIMEOUT_SECONDS + AUX_BACKSTOP_SLACK_SECONDS
    try:
        async with asyncio.timeout(limit):
            return await call
    except TimeoutError:
        log.warning("%s did not return within %.1f s; continuing without it", purpose, limit)
        LLM_CALL_SECONDS.labels(purpose=purpose, outcome="timeout").observe(limit)
        return None


# --- asking instead of guessing --------------------------------------------------------------


def _may_clarify(ctx: TurnContext) -> bool:
    """Only a fresh request is clarified, and only so many rounds in a row."""
    if not settings.CLARIFICATION_ENABLED or ctx.clarification_rounds is None:
        return False
    return ctx.clarification_rounds < clarification.MAX_ROUNDS


async def _clarify(ctx: TurnContext, *, client: LLMClient, out: _TurnOutput) -> bool:
    """A fresh request below the confidence threshold is asked about instead; True when a card
    was shown (the turn then ends)."""
    assert ctx.clarification_rounds is not None
    analysis = await _auxiliary(
        clarification.analyze(
            client=client, request=ctx.request_text, context=ctx.context_text, projects=list(ctx.projects),
            threshold=ctx.clarification_threshold, prompt_template=ctx.clarification_prompt,
            answered_before=ctx.clarification_rounds > 0,
        ),
        purpose="clarification",
    )  # fmt: skip
    if analysis is None or not clarification.needs_clarification(analysis, threshold=ctx.clarification_threshold):
        return False
    specs = [
        QuestionSpec(
            question=q.question, header=q.header, allow_custom=q.allow_freeform, multi_select=q.multi_select,
            options=[OptionSpec(label=o.label, description=o.description) for o in q.options],
        )
        for q in analysis.questions
    ]  # fmt: skip
    extras = [[{"key": o.key, "maps_to": o.maps_to, "replaces_request": o.replaces_request} for o in q.options] for q in analysis.questions]
    payload = {
        "request_message_id": ctx.request_id,
        "request_root_id": ctx.clarification_root_id,
        "in_reply_to_id": ctx.request_id,
        "analysis": analysis.model_dump(exclude={"questions"}),
        "round": ctx.clarification_rounds + 1,
    }
    group = await _ask(
        ctx, client=client, out=out, kind=QuestionGroup.Kind.CLARIFY, specs=specs, complexity=analysis.complexity,
        payload=payload, option_extras=extras,
    )  # fmt: skip
    return group is not None


async def _detect_question(ctx: TurnContext, *, client: LLMClient, out: _TurnOutput, reply: str) -> None:
    """A final reply that ends by asking the person something becomes a card."""
    if not settings.QUESTION_DETECTOR_ENABLED or not detector.asks_something(reply):
        return
    found = await _auxiliary(detector.detect(client=client, reply=reply), purpose="detector")
    if not found:
        return
    specs = [QuestionSpec(question=q.question[:500], options=[OptionSpec(label=o[:200]) for o in q.options]) for q in found]
    complexity = max((q.complexity for q in found), key=["low", "medium", "high"].index)
    await _ask(ctx, client=client, out=out, kind=QuestionGroup.Kind.DETECTED, specs=specs, complexity=complexity,
               payload={"in_reply_to_id": ctx.request_id})  # fmt: skip


async def _ask(
    ctx: TurnContext,
    *,
    client: LLMClient,
    out: _TurnOutput,
    kind: str,
    specs: list[QuestionSpec],
    complexity: str,
    payload: dict,
    option_extras: list[list[dict]] | None = None,
) -> QuestionGroup | None:
    try:
        group = await database_sync_to_async(questions.ask)(
            user=ctx.owner, conversation_id=ctx.conversation_id, kind=kind, specs=specs, complexity=complexity,
            payload=payload, option_extras=option_extras, timeouts=ctx.timeouts,
            # Their short clocks apply a guess for the person: they run only once a tab shows the card.
            starts_when_shown=True,
        )  # fmt: skip
    except questions.AskRejected as exc:
        log.info("not asking: %s", exc)
        return None
    await out.finish_stream(rendering.stream_discarded)  # the card takes the typing indicator's place
    await _show(ctx, client=client, out=out, group=group)
    return group


async def _show(ctx: TurnContext, *, client: LLMClient, out: _TurnOutput, group: QuestionGroup) -> None:
    """Publish a new card, arm its deadline, and let the guesser rank its options meanwhile."""
    html, first = await database_sync_to_async(_render_new_group)(group.pk)
    await out.send(html)
    if first is not None:
        deadlines.schedule(first.pk, first.deadline)
    if group.kind != QuestionGroup.Kind.CONFIRM and settings.QUESTION_GUESSER_ENABLED:
        background.spawn(guess_in_background(group.pk, client=client, context=ctx.context_text))


def _render_new_group(group_id: uuid.UUID) -> tuple[str, PendingQuestion | None]:
    group = question_selectors.group_by_id(group_id=group_id)
    questions_ = question_selectors.group_questions(group)
    return rendering.question_group_appended(group), (questions_[0] if questions_ else None)


async def guess_in_background(group_id: uuid.UUID, *, client: LLMClient, context: str) -> None:
    """Rank every pending question's options at once; the hints swap into every tab when ready."""
    pending = await database_sync_to_async(
        lambda: [q for q in question_selectors.group_questions(question_selectors.group_by_id(group_id=group_id)) if q.is_pending]
    )()
    rankings = await asyncio.gather(
        *(
            _auxiliary(guesser.rank_options(client=client, question=q.question, options=q.options, context=context), purpose="guesser")
            for q in pending
        )
    )
    ranked = [(q.pk, ranking) for q, ranking in zip(pending, rankings, strict=True) if ranking]
    if not ranked:
        return
    await database_sync_to_async(questions.record_guesses)(rankings=ranked)
    await publishing.publish_group(group_id)


# --- the model loop --------------------------------------------------------------------------


class _ModelLoop:
    """Call the model, stream, run tools, repeat — at most AGENT_MAX_LLM_CALLS calls."""

    def __init__(self, ctx: TurnContext, *, client: LLMClient, out: _TurnOutput, hold: asyncio.Task[bool] | None = None):
        self.ctx, self.client, self.out = ctx, client, out
        # Clarification still deciding: nothing is shown or saved until it says "go on" (False).
        self.hold = hold
        self.messages: list[ChatMessage] = list(ctx.messages)
        # The newest tool result's sources: a final reply that cites [n] links them.
        self.citations: tuple[dict, ...] = ()

    async def run(self) -> None:
        specs = tools.tool_specs()
        malformed_rounds = 0
        for _ in range(settings.AGENT_MAX_LLM_CALLS):
            await self.out.start_stream()
            completion = await self._call(specs)
            if completion is None:
                return
            assistant = await self._save_reply(
                content=completion.content, tool_calls=[c.model_dump() for c in completion.tool_calls], metadata=self._metadata(completion)
            )
            await self.out.finish_stream(functools.partial(_stream_finished_as, assistant))
            self.messages.append(as_chat_message(assistant))
            if not completion.tool_calls:
                await _detect_question(self.ctx, client=self.client, out=self.out, reply=completion.content)
                return
            outcomes = await self._run_tools(completion.tool_calls)
            waiting = [o.waiting_on for o in outcomes if o.waiting_on is not None]
            for group in waiting:
                await _show(self.ctx, client=self.client, out=self.out, group=group)
            if waiting:
                return  # the turn ends here; the answers start the next one
            malformed_rounds = malformed_rounds + 1 if all(o.malformed for o in outcomes) else 0
            if malformed_rounds >= MAX_MALFORMED_ROUNDS:
                names = ", ".join(sorted({c.name for c in completion.tool_calls}))
                await self.out.fail(
                    f"The model kept sending tool calls ({names}) whose arguments could not be read, so I stopped. "
                    "Nothing was changed. Retry to ask it again; if it keeps happening, the model may not support tool calls well.",
                    {"kind": "malformed_tool_calls", "rounds": malformed_rounds},
                )  # fmt: skip
                return
        await self.out.fail(
            f"I stopped after {settings.AGENT_MAX_LLM_CALLS} model calls without reaching an answer. "
            "Try again, or ask a narrower question.",
            {"kind": "call_limit"},
        )

    async def _save_reply(self, *, content: str, tool_calls: list[dict], metadata: dict) -> Message:
        return await database_sync_to_async(services.save_assistant_message)(
            conversation_id=self.ctx.conversation_id, in_reply_to_id=self.ctx.request_id, content=content, tool_calls=tool_calls,
            metadata=metadata,
        )  # fmt: skip

    async def _go_on(self) -> None:
        """Wait, once, for clarification to decide; a card it showed ends this loop unseen."""
        if self.hold is None:
            return
        asked = await self.hold
        self.hold = None
        if asked:
            raise asyncio.CancelledError  # the turn ended with the card

    async def _call(self, specs: list[ToolSpec]) -> Completion | None:
        started = time.perf_counter()
        try:
            completion = await self._stream(self.client.stream(self.messages, tools=specs))
            await self._go_on()  # a reply of tool calls only streamed no text
        except LLMError as exc:
            LLM_CALL_SECONDS.labels(purpose="chat", outcome=exc.kind).observe(time.perf_counter() - started)
            await self._go_on()
            await self.out.fail(exc.user_message, {"kind": exc.kind, "status": exc.status, "attempts": exc.attempts})
            return None
        except stopping.TurnStopped as stopped:  # "Stop generating": keep the partial reply, end the turn
            kept = await self._save_reply(content=stopped.partial, tool_calls=[], metadata={"engine": self.client.name, "stopped": True})
            await self.out.finish_stream(lambda sid: rendering.stream_finished(sid, kept))
            return None
        seconds = time.perf_counter() - started
        LLM_CALL_SECONDS.labels(purpose="chat", outcome="ok").observe(seconds)
        completion.seconds = seconds
        return completion

    def _metadata(self, completion: Completion) -> dict:
        metadata = {
            "engine": self.client.name,
            "model": completion.model,
            "usage": completion.usage.model_dump(),
            "attempts": completion.attempts,
            "seconds": round(completion.seconds, 4),
        }
        if not completion.tool_calls and self.citations:
            metadata["citations"] = _cited(completion.content, self.citations)
        return metadata

    async def _stream(self, events: AsyncIterator) -> Completion:
        # Each flush sends the whole text so far, rendered as Markdown: what the reader sees while
        # it streams is what the saved reply will look like. The first text goes out at once (the
        # reply has started), later text at most every STREAM_FLUSH_SECONDS. Text still unshown
        # when the stream ends is not flushed: the saved reply replaces the placeholder next, and
        # a busy server would otherwise render and send the same reply twice.
        stream_id = await self.out.start_stream()  # the open placeholder (run() opened it)
        text, last_flush = "", None
        stop = stopping.StopWatch(self.ctx.conversation_id)
        async for event in events:
            await self._go_on()
            if isinstance(event, TextDelta):
                text += event.text
                if text and (last_flush is None or time.monotonic() - last_flush >= STREAM_FLUSH_SECONDS):
                    await self.out.send(rendering.stream_delta(stream_id, text))
                    last_flush = time.monotonic()
            elif isinstance(event, StreamRestart):
                text, last_flush = "", None
                await self.out.send(rendering.stream_reset(stream_id))
            elif isinstance(event, StreamDone):
                return event.completion
            await stop.raise_if_requested(events, text)
        raise LLMError("stream_interrupted", "The model's answer ended before it was complete.")

    async def _run_tools(self, calls: list[ToolCall]) -> list[tools.ToolOutcome]:
        outcomes = []
        for call in calls:
            ctx = tools.ToolContext(
                user=self.ctx.owner,
                conversation_id=self.ctx.conversation_id,
                tool_call_id=call.id,
                in_reply_to_id=self.ctx.request_id,
                timeouts=self.ctx.timeouts,
                time_zone=self.ctx.time_zone,
            )
            outcomes.append(await tools.execute(ctx=ctx, call=call))
        # Results (not the waiting ones: their result is the person's answer) in one hop.
        results = [
            services.ToolResult(tool_call_id=call.id, tool_name=call.name, content=o.content, is_error=o.is_error, malformed=o.malformed)
            for call, o in zip(calls, outcomes, strict=True)
            if o.waiting_on is None
        ]
        if results:
            saved = await database_sync_to_async(services.save_tool_results)(
                conversation_id=self.ctx.conversation_id, in_reply_to_id=self.ctx.request_id, results=results
            )
            self.messages.extend(as_chat_message(m) for m in saved)
        for outcome in outcomes:
            if outcome.citations:
                self.citations = outcome.citations
        return outcomes


def _stream_finished_as(message: Message, stream_id: str) -> str:
    return rendering.stream_finished(stream_id, message)


def _cited(reply: str, citations: tuple[dict, ...]) -> list[dict]:
    """The sources the reply cites with [n]; all of them when it uses no markers at all."""
    used = {int(n) for n in re.findall(r"\[(\d+)\]", reply)}
    return [c for c in citations if c["n"] in used] or list(citations)
