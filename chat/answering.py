"""From a person's answer (or a deadline) to the next turn — exactly once.

Every way in — an HTMX POST, a websocket frame, text typed in the chat box, a timer, the sweep
— ends here, in two halves:

1. In one thread hop, one transaction (`_resolve`): `questions.services` resolves the question,
   and when that completed its group, `record_group_outcomes` records what the answer means (the
   tool result the model receives, the operations a confirmation applies, the enhanced request
   of a clarification).
   Answers that arrive while a hop runs wait for the next and share it (`chat.batching`): a
   burst of a hundred answers is a few hops and a few transactions, not a hundred.
2. After commit (`_after_commit_all`; for answers, in a task of its own, so that a caller that
   goes away cancels nothing): render and broadcast each receipt (one at a time, so the first of
   a batch goes out at once), arm the next question's timer, and —
   only for the resolver that completed the group — start the next turn, once every answer
   received so far is resolved and shown (`_start_turns_after_receipts`): a burst's receipts do
   not wait behind the turns that the same burst starts.

Nothing in the transaction broadcasts or starts work, so a rolled-back resolution shows nothing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, cast

from channels.db import database_sync_to_async
from django.db import transaction
from django.utils import timezone

from chat import agent, background, deadlines, publishing, rendering, services
from chat.batching import Batcher
from chat.models import Message, group_name_of
from project.errors import Rejected
from questions import metrics as question_metrics
from questions import selectors as question_selectors
from questions import services as questions
from questions.clarification import enhance
from questions.models import PendingQuestion, QuestionGroup
from questions.schemas import AnswerInput
from questions.shorthand import ShorthandError, Slot, answers_the_card, is_number, label_index, looks_like_shorthand, parse
from workspace import operations

if TYPE_CHECKING:
    from project.users import User

log = logging.getLogger("clarion.questions")
Status = PendingQuestion.Status


# --- recording what a completed group means --------------------------------------------------


def record_group_outcomes(resolutions: list[questions.Resolution]) -> dict[uuid.UUID, Message]:
    """Called inside the transaction that completed these groups (exactly once per group), with
    each group and its questions as its resolution left them. Returns the user-role messages it
    wrote on the person's behalf, by group id (to show them). The tool results of all the groups
    are saved in one statement."""
    results: list[tuple[QuestionGroup, dict]] = []
    derived: dict[uuid.UUID, Message] = {}
    for resolution in resolutions:
        group, questions_ = resolution.group, resolution.questions
        if group.kind == QuestionGroup.Kind.ASK:
            results.append((group, question_selectors.answers_for_model(questions_)))
        elif group.kind == QuestionGroup.Kind.CONFIRM:
            results.append((group, _confirmation_outcome(group, questions_)))
        elif group.kind == QuestionGroup.Kind.CLARIFY:
            derived[group.pk] = _clarified_request(group, questions_)
        elif group.kind == QuestionGroup.Kind.DETECTED:
            derived[group.pk] = _answer_as_message(group, questions_)
    _tool_results(results)
    return derived


def _tool_results(results: list[tuple[QuestionGroup, dict]]) -> None:
    """Each group's asking tool call gets `result` as its answer."""
    if results:
        services.save_tool_results_of_calls(
            [
                (
                    group.conversation_id,
                    group.payload["in_reply_to_id"],
                    services.ToolResult(
                        tool_call_id=group.tool_call_id,
                        tool_name=group.tool_name,
                        content=json.dumps(result, ensure_ascii=False),
                        is_error=False,
                    ),
                )
                for group, result in results
            ]
        )


def _confirmation_outcome(group: QuestionGroup, questions_: list[PendingQuestion]) -> dict:
    (question,) = questions_
    if question.status == Status.ANSWERED and question.selected_indexes == [questions.CONFIRM_APPLY]:
        proposed = group.payload["operations"]
        chosen = group.payload.get("chosen", range(len(proposed)))
        try:
            applied = operations.apply(user=group.user, operations=[proposed[i] for i in chosen])
        except operations.OperationRejected as exc:
            return {"status": "failed", "error": str(exc), "note": "Nothing was changed."}
        refused = [i for i in range(len(proposed)) if i not in set(chosen)]
        if not refused:
            return {"status": "applied", **applied}
        lines = group.payload.get("lines") or []
        return {
            "status": "applied_in_part",
            **applied,
            "note": f"The user applied {len(chosen)} of the {len(proposed)} proposed changes and refused {len(refused)}; "
            "the refused ones were not made. Do not propose them again unless asked.",
            "applied_changes": [_change(proposed, lines, i) for i in chosen],
            "refused_changes": [_change(proposed, lines, i) for i in refused],
        }
    if question.status == Status.TIMED_OUT:
        return {"status": "timed_out", "note": "The user did not confirm in time; nothing was changed."}
    return {"status": "cancelled", "note": "The user cancelled; nothing was changed."}


def _change(proposed: list[dict], lines: list[dict], index: int) -> dict:
    """One proposed change as the model is told about it: its number on the card, what it said, the operation."""
    text = lines[index]["text"] if index < len(lines) else ""
    return {"number": index + 1, "text": text, "operation": proposed[index]}


def _clarified_request(group: QuestionGroup, questions_: list[PendingQuestion]) -> Message:
    request = Message.objects.get(pk=group.payload["request_message_id"])
    skipped = all(q.status == Status.CANCELLED for q in questions_)
    picks = []
    for q in questions_:
        if q.is_custom:
            picks.append((q.answer, False))
        else:
            picks += [
                (q.options[i].get("maps_to", q.options[i]["label"]), q.options[i].get("replaces_request", False))
                for i in q.selected_indexes
            ]
    text = request.content if skipped else enhance(request.content, picks)
    return services.post_derived_user_message(
        conversation_id=group.conversation_id,
        content=text,
        metadata={"clarification_of": group.payload["request_root_id"], "clarification_group": str(group.pk), "skipped": skipped},
    )


NO_ANSWER = "No answer"


def _answer_as_message(group: QuestionGroup, questions_: list[PendingQuestion]) -> Message:
    parts, timed_out = [], False
    for q in questions_:
        if q.status == Status.TIMED_OUT:
            # The person said nothing: the record (and the model, which reads it) says so.
            timed_out = True
            parts.append(f"{NO_ANSWER} — default applied: {q.answer}" if q.answer else f"{NO_ANSWER} — nothing was chosen")
        elif q.answer:
            parts.append(q.answer)
    text = "; ".join(parts) or "(no answer)"
    return services.post_derived_user_message(
        conversation_id=group.conversation_id,
        content=text,
        metadata={"answer_to": str(group.pk), "timed_out": timed_out},
    )


@dataclass(frozen=True)
class Receipt:
    """A committed resolution and what follows from it."""

    resolution: questions.Resolution
    group_name: str
    derived: Message | None  # the message written on the person's behalf, if any

    @functools.cached_property
    def card(self) -> str:
        """The group's card as it is now, from the rows the resolution locked and updated (not a
        fresh read of them). Rendered once: every tab is sent it, and the card's POST returns it.
        It carries no hx-swap-oob: the websocket swaps a frame's elements by id all the same."""
        return rendering.question_group(self.resolution.group, questions=self.resolution.questions, oob=False)

    def html(self) -> str:
        """What every tab is sent: the card, plus the message written on the person's behalf."""
        return self.card + (rendering.message_appended(self.derived) if self.derived is not None else "")


def _resolve(resolve: Callable[[], list[questions.Resolution | questions.QuestionError]]) -> list[Receipt | questions.QuestionError]:
    """`resolve` resolves questions inside one transaction; the groups that completed get what
    they mean recorded in it. Errors `resolve` returns in an answer's place stay in its place."""
    with transaction.atomic():
        outcomes = resolve()
        derived = record_group_outcomes([o for o in outcomes if isinstance(o, questions.Resolution) and o.completed_group])
    return [
        o
        if not isinstance(o, questions.Resolution)
        else Receipt(
            resolution=o,
            group_name=group_name_of(o.group.conversation_id),
            derived=derived.get(o.group.pk) if o.completed_group else None,
        )
        for o in outcomes
    ]


def _resolve_one(resolve: Callable[[], questions.Resolution | None]) -> Receipt | None:
    """`_resolve` for one resolution that raises its errors (a deadline, a skip); None when it
    resolved nothing."""
    resolved = _resolve(lambda: [r for r in [resolve()] if r is not None])
    return cast(Receipt, resolved[0]) if resolved else None


def _resolve_answers(requests: list[questions.AnswerRequest]) -> list[Receipt | Exception]:
    """Answers received together, resolved in one transaction. When that transaction fails (a
    deadlock, one group's outcome that cannot be recorded), each is resolved in a transaction of
    its own, so that only the one at fault fails."""
    try:
        return list(_resolve(lambda: questions.answer_many(requests)))
    except Exception as exc:
        if len(requests) == 1:
            return [exc]
        log.warning("%d answers could not be resolved together (%r); resolving them one at a time", len(requests), exc)
        return [_resolve_answers([request])[0] for request in requests]


async def _after_commit(resolved: Receipt) -> Receipt:
    (outcome,) = await _after_commit_all([resolved])
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


async def _after_commit_all(outcomes: list[Receipt | Exception]) -> list[Receipt | Exception]:
    """Every tab is shown its receipt first; then the next questions' timers are armed and, for
    the resolvers that completed a group, the next turns start once the answers still coming in
    are shown too. So a burst's receipts do not wait behind the turns that the same burst starts.
    A receipt that could not be sent to the tabs (the channel layer out of reach) changes none of
    that: the answer is committed, so its caller gets the receipt (the card's POST shows it in
    the tab that answered), and the timer and the turn follow as always."""
    resolved = [o for o in outcomes if isinstance(o, Receipt)]
    for r in resolved:
        # Rendered one by one as they go out, each let through to its tabs before the next is
        # rendered: the first receipt of a batch does not wait for the whole batch's rendering.
        try:
            await publishing.send(r.group_name, r.html())
        except Exception as exc:
            log.error("the receipt of question %s could not be sent to its tabs: %r", r.resolution.question.pk, exc)
        await asyncio.sleep(0)
    for r in resolved:
        resolution = r.resolution
        question_metrics.observe(resolution.changed)
        if resolution.next_question is not None and resolution.next_question.deadline is not None:
            deadlines.schedule(resolution.next_question.pk, resolution.next_question.deadline)
    due = [r.resolution.group.conversation_id for r in resolved if r.resolution.completed_group]
    if due:
        background.spawn(_start_turns_after_receipts(due))
    return outcomes


# How long turns that answers started wait for the answers still coming in to be shown.
TURNS_WAIT_FOR_RECEIPTS_SECONDS = 2.0


async def _start_turns_after_receipts(conversation_ids: list[uuid.UUID]) -> None:
    """The next turns, once every answer received so far is resolved and its receipt sent (at
    most TURNS_WAIT_FOR_RECEIPTS_SECONDS later): in a burst, the turns the first answers start
    would otherwise take the process's time from resolving the rest, and a person who just
    answered waits for that receipt. One answer alone starts its turn at once."""
    await _answers.settled(timeout=TURNS_WAIT_FOR_RECEIPTS_SECONDS)
    for conversation_id in conversation_ids:
        agent.start_turn(conversation_id)


# A burst's answers share hops of up to this many (one transaction each); see chat.batching.
ANSWERS_PER_HOP = 100
# A queue of waiting answers goes in halves down to this many per hop: of a burst of a hundred,
# the first fifty see their receipts after half the work rather than all of it.
ANSWERS_LEAST_PER_HOP = 25

_answers: Batcher[questions.AnswerRequest, Receipt] = Batcher(
    lambda requests: database_sync_to_async(_resolve_answers)(requests),
    _after_commit_all,
    limit=ANSWERS_PER_HOP,
    least=ANSWERS_LEAST_PER_HOP,
)


# --- entry points (async: they publish and may start the next turn) --------------------------


async def submit_answer(*, user: User, question_id: uuid.UUID, answer: AnswerInput, via: str) -> Receipt:
    """Raises questions.QuestionNotFound, questions.AnswerRejected or questions.AlreadyResolved.
    Answers that arrive while others are being resolved are resolved together with them."""
    request = questions.AnswerRequest(user=user, question_id=question_id, answer=answer, via=via)
    return await _answers.submit(request)


# A page's countdown reaches zero, flashes the default for 500 ms, then asks for the expiry; a
# little tolerance absorbs the difference between its clock and the server's.
PAGE_EXPIRY_TOLERANCE_SECONDS = 1.0


async def expire(question_id: uuid.UUID, *, early_seconds: float = 0.0) -> Receipt | None:
    """Apply the default if the deadline has passed. `early_seconds` tolerates a browser whose
    countdown reached zero a moment before the server's clock."""
    now = timezone.now() + dt.timedelta(seconds=early_seconds)
    resolved = await database_sync_to_async(_resolve_one)(lambda: questions.expire_if_due(question_id=question_id, now=now))
    return None if resolved is None else await _after_commit(resolved)


async def skip(*, user: User, group_id: uuid.UUID) -> Receipt:
    resolved = await database_sync_to_async(_resolve_one)(lambda: questions.skip_group(user=user, group_id=group_id))
    assert resolved is not None  # skip_group raises rather than return nothing
    return await _after_commit(resolved)


class TypedAnswerRejected(Rejected):
    """Text typed in the chat box that cannot answer the pending question; nothing was written."""


async def answer_from_chat_text(*, user: User, conversation_id: uuid.UUID, text: str) -> bool:
    """Text typed while a question is pending answers it when `answers_the_card` says so (keys,
    shorthand, a label, a short reply). False when nothing is pending or it is a new request."""
    group = await database_sync_to_async(question_selectors.open_group)(conversation_id=conversation_id)
    if group is None:
        return False
    group_questions = await database_sync_to_async(question_selectors.group_questions)(group)
    pending = [q for q in group_questions if q.is_pending]
    current = pending[0]
    labels = [o["label"] for o in current.options]
    if not answers_the_card(text, option_labels=labels, allow_custom=current.allow_custom):
        await set_aside(user=user, group=group)
        return False  # a new request: it goes through as a message
    if (picked := label_index(text, labels)) is not None:
        await _answer_typed(user, current, AnswerInput(selected_indexes=[picked]), PendingQuestion.ResolvedVia.CHAT_TEXT)
        return True
    if is_number(text):
        # "Press 1–3 to pick" works in the chat box too: the option shown in that place.
        shown = question_selectors.display_order(current)
        place = int(text.strip())
        if not 1 <= place <= len(shown):
            raise TypedAnswerRejected(f"There is no option {place}; pick 1–{len(shown)}.")
        await _answer_typed(user, current, AnswerInput(selected_indexes=[shown[place - 1]]), PendingQuestion.ResolvedVia.OPTION)
        return True
    if looks_like_shorthand(text):
        slots = [
            Slot(q.position + 1, len(q.options), q.multi_select, q.is_pending, tuple(question_selectors.display_order(q)))
            for q in group_questions
        ]
        try:
            parsed = parse(text, slots)
        except ShorthandError as exc:
            raise TypedAnswerRejected(str(exc)) from None
        if parsed.skip:
            await skip(user=user, group_id=group.pk)
            return True
        by_position = {q.position + 1: q for q in group_questions}
        for shorthand in parsed.answers:
            await _answer_typed(user, by_position[shorthand.position], AnswerInput(selected_indexes=list(shorthand.indexes)), "shorthand")
        return True
    if not current.allow_custom:
        keys = current.option_keys
        raise TypedAnswerRejected(
            f"This question needs one of its options ({keys[0]}–{keys[-1]}): click one, or type its letter, e.g. “{keys[0]}”."
        )
    await _answer_typed(user, current, AnswerInput(custom=text), PendingQuestion.ResolvedVia.CHAT_TEXT)
    return True


SET_ASIDE_NOTE = "The user sent a new message instead of answering; nothing was chosen. Treat these questions as unanswered."


async def set_aside(*, user: User, group: QuestionGroup) -> None:
    """A new request while a card waits: the card is cancelled — its receipt says the person moved
    on — and the model is told so, but nothing continues from it: the new message starts the next
    turn. (Continuing would answer a request the person has left, or run an unclarified one.)"""

    def cancel() -> questions.Resolution | None:
        with transaction.atomic():
            try:
                resolution = questions.skip_group(user=user, group_id=group.pk, set_aside=True)
            except questions.AlreadyResolved:
                return None  # answered or timed out a moment ago; that continuation stands
            if resolution.completed_group and resolution.group.tool_call_id:
                _tool_results([(resolution.group, {"status": "cancelled", "note": SET_ASIDE_NOTE})])
            return resolution

    resolution = await database_sync_to_async(cancel)()
    if resolution is not None:
        question_metrics.observe(resolution.changed)
        await publishing.publish_group(group.pk)


async def _answer_typed(user: User, question: PendingQuestion, answer: AnswerInput, via: str) -> None:
    try:
        await submit_answer(user=user, question_id=question.pk, answer=answer, via=via)
    except questions.AnswerRejected as exc:
        raise TypedAnswerRejected(exc.message) from None
    except questions.AlreadyResolved:
        pass  # another tab or the deadline got there first; its receipt is already on screen


async def pause(*, user: User, question_id: uuid.UUID) -> PendingQuestion:
    return await _moved_deadline(questions.pause, user=user, question_id=question_id)


async def resume(*, user: User, question_id: uuid.UUID) -> PendingQuestion:
    return await _moved_deadline(questions.resume, user=user, question_id=question_id)


async def _moved_deadline(change: Callable[..., PendingQuestion], *, user: User, question_id: uuid.UUID) -> PendingQuestion:
    """Every tab shows the new clock, and this process's timer follows the new deadline."""
    question = await database_sync_to_async(change)(user=user, question_id=question_id)
    await publishing.publish_group(question.group_id)
    deadlines.schedule(question.pk, question.deadline)
    return question
