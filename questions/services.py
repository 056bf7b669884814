"""Asking, answering, expiring: every state change of a question, atomically.

Every write locks the question's group row first, so answers, deadlines and skips of one group
are serialized across processes; a question's own resolution is a conditional UPDATE on
`status='pending'`, so a second resolver (double click, second tab, deadline) loses cleanly and
gets the resolved question back. Exactly one resolver completes the group.

The errors these raise live in `questions.errors` and are importable from here too.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from questions import selectors, sql
from questions.errors import AlreadyResolved, AnswerRejected, AskRejected, QuestionNotFound
from questions.models import PendingQuestion, QuestionGroup
from questions.schemas import AnswerInput, QuestionSpec

if TYPE_CHECKING:
    from project.users import User

Status = PendingQuestion.Status
Via = PendingQuestion.ResolvedVia
# A confirmation's first option applies its changes (the ticked ones); the second cancels.
CONFIRM_APPLY = 0


@dataclass(frozen=True)
class QuestionTimeouts:
    """Seconds before a default is applied. The complexity ladder (low/medium/high) for clarifications,
    five minutes for plain asks and confirmations."""

    low: float = 8
    medium: float = 15
    high: float = 25
    ask: float = 300

    def for_question(self, *, kind: str, complexity: str, requested: float | None) -> float:
        if requested is not None:
            return requested
        if kind in (QuestionGroup.Kind.CLARIFY, QuestionGroup.Kind.DETECTED) and complexity:
            return getattr(self, complexity)
        return self.ask


@dataclass
class Resolution:
    question: PendingQuestion
    group: QuestionGroup
    # Every question of the group as the resolution left them, in order (read under the lock).
    questions: list[PendingQuestion]
    # True for exactly one resolver: the one whose resolution finished the group.
    completed_group: bool = False
    next_question: PendingQuestion | None = None
    changed: list[PendingQuestion] = field(default_factory=list)


# --- asking ----------------------------------------------------------------------------------


@transaction.atomic
def ask(
    *,
    user: User,
    conversation_id: uuid.UUID,
    kind: str,
    specs: list[QuestionSpec],
    tool_call_id: str = "",
    tool_name: str = "",
    payload: dict | None = None,
    complexity: str = "",
    destructive: bool = False,
    default_indexes: list[list[int]] | None = None,
    option_extras: list[list[dict]] | None = None,
    timeouts: QuestionTimeouts | None = None,
    starts_when_shown: bool = False,
    now: dt.datetime | None = None,
) -> QuestionGroup:
    """Create a group of questions; the first one becomes current and its deadline starts —
    or, with `starts_when_shown`, it waits paused until a tab shows it (`resume`). Waiting spends
    the pause budget, so a card that no tab ever shows still times out."""
    now = now or timezone.now()
    timeouts = timeouts or QuestionTimeouts()  # the turn passes the admin's values (AIConfig)
    _check_limits(user=user, conversation_id=conversation_id, new=len(specs), now=now)
    group = QuestionGroup.objects.create(
        conversation_id=conversation_id, user=user, kind=kind, tool_call_id=tool_call_id, tool_name=tool_name, payload=payload or {}
    )
    questions = []
    for position, spec in enumerate(specs):
        extras = (option_extras or [[]] * len(specs))[position]
        timeout = timeouts.for_question(kind=kind, complexity=complexity, requested=spec.timeout_seconds)
        questions.append(
            PendingQuestion(
                group=group,
                position=position,
                conversation_id=conversation_id,
                user=user,
                tool_call_id=tool_call_id,
                question=spec.question,
                header=spec.header,
                options=[
                    {"label": o.label, "description": o.description, **(extras[i] if i < len(extras) else {})}
                    for i, o in enumerate(spec.options)
                ],
                allow_custom=spec.allow_custom,
                placeholder=spec.placeholder,
                multi_select=spec.multi_select,
                complexity=complexity,
                destructive=destructive,
                timeout_seconds=timeout,
                deadline=now + dt.timedelta(seconds=timeout) if position == 0 else None,
                default_indexes=(default_indexes or [[]] * len(specs))[position],
            )
        )
    if starts_when_shown and questions and questions[0].deadline is not None:
        first = questions[0]
        first.paused_at, first.remaining_at_pause = now, first.timeout_seconds
        first.deadline = now + dt.timedelta(seconds=(first.timeout_seconds or 0) + settings.QUESTION_PAUSE_CAP_SECONDS)
    PendingQuestion.objects.bulk_create(questions)
    return group


def _check_limits(*, user: User, conversation_id: uuid.UUID, new: int, now: dt.datetime) -> None:
    limit = settings.QUESTIONS_MAX_PENDING_PER_USER
    pending = PendingQuestion.objects.filter(user=user, status=Status.PENDING).count()
    if pending + new > limit:
        raise AskRejected(
            f"The user already has {pending} unanswered question(s) and at most {limit} may be pending. "
            "Continue without asking, or wait for answers."
        )
    interval = settings.QUESTIONS_MIN_INTERVAL_SECONDS
    # Only a question still waiting counts: asking again right after the person answered is a
    # conversation (clarify → confirm), not spam.
    recent = QuestionGroup.objects.filter(
        conversation_id=conversation_id, created_at__gt=now - dt.timedelta(seconds=interval), completed_at__isnull=True
    )
    if recent.exists():
        raise AskRejected(f"A question was asked in this conversation less than {interval:g} s ago; ask at most one every {interval:g} s.")


# --- answering -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerRequest:
    """One person's answer to one question, as an entry point received it."""

    user: User
    question_id: uuid.UUID
    answer: AnswerInput
    via: str


QuestionError = QuestionNotFound | AnswerRejected | AlreadyResolved


def answer(*, user: User, question_id: uuid.UUID, answer: AnswerInput, via: str) -> Resolution:
    """Resolve a question with a person's answer. Raises QuestionNotFound (also for another
    user's question), AnswerRejected for an answer that doesn't fit, AlreadyResolved."""
    with transaction.atomic():
        (outcome,) = answer_many([AnswerRequest(user=user, question_id=question_id, answer=answer, via=via)])
        if isinstance(outcome, Resolution):
            return outcome
        raise outcome


def answer_many(requests: list[AnswerRequest]) -> list[Resolution | QuestionError]:
    """Answers to any questions of any people, resolved together in a few statements whatever
    their number: lock every group concerned (in one order, so two processes cannot deadlock),
    read their questions, write every resolution. Each answer's outcome is in its place: its
    Resolution, or the error that refused it (nothing of that answer is written). Two answers to
    one group apply in order, as they would one after the other. Call it inside a transaction."""
    keys = [_as_uuid(r.question_id) for r in requests]
    known = _lock_groups_of([(key, r.user) for r, key in zip(requests, keys, strict=True) if key is not None])
    now = timezone.now()
    changes = _Changes()
    outcomes: list[Resolution | QuestionError] = []
    for request, key in zip(requests, keys, strict=True):
        entry = known.get(key) if key is not None else None
        if entry is None or entry[2].user_id != request.user.pk:
            outcomes.append(QuestionNotFound())
            continue
        group, questions, question = entry
        if not question.is_pending:
            outcomes.append(AlreadyResolved(question))
            continue
        try:
            text, indexes, is_custom = _checked(question, request.answer)
            chosen = _checked_changes(group, request.answer, indexes)
        except AnswerRejected as exc:
            outcomes.append(exc)
            continue
        if chosen is not None:
            group.payload = {**group.payload, "chosen": chosen}
            changes.payloads.append(group)
        via = _via(request.via, is_custom=is_custom, picked=len(indexes))
        outcomes.append(
            _settle(
                question,
                group,
                questions,
                changes,
                now=now,
                status=Status.ANSWERED,
                text=text,
                indexes=indexes,
                is_custom=is_custom,
                via=via,
            )
        )
    changes.save(now)
    return outcomes


def _via(requested: str, *, is_custom: bool, picked: int) -> str:
    if is_custom:
        return Via.CHAT_TEXT if requested == Via.CHAT_TEXT else Via.CUSTOM
    return Via.OPTIONS if picked > 1 and requested == Via.OPTION else requested


def _checked(question: PendingQuestion, answer: AnswerInput) -> tuple[str, list[int], bool]:
    if answer.custom is not None:
        if not question.allow_custom:
            raise AnswerRejected(f"This question needs one of its options ({_key_range(question)}); a typed answer is not allowed.")
        return answer.custom, [], True
    indexes = answer.selected_indexes
    count = len(question.options)
    for i in indexes:
        if not 0 <= i < count:
            raise AnswerRejected(f"Option {i + 1} is not one of the {count} options.")
    if len(set(indexes)) != len(indexes):
        raise AnswerRejected("An option was picked twice.")
    if len(indexes) > 1 and not question.multi_select:
        raise AnswerRejected("Pick just one option for this question.")
    if answer.labels is not None:
        expected = [question.options[i]["label"] for i in indexes]
        if [label.strip() for label in answer.labels] != expected:
            raise AnswerRejected("The option you picked no longer matches the question; reload and try again.")
    ordered = sorted(indexes)
    return ", ".join(question.options[i]["label"] for i in ordered), ordered, False


def _checked_changes(group: QuestionGroup, answer: AnswerInput, indexes: list[int]) -> list[int] | None:
    """The changes a confirmation's Apply applies, by their place in its list, sorted; None when
    the answer names none (every change listed) or does not apply (Cancel ignores the ticks)."""
    if answer.changes is None:
        return None
    if group.kind != QuestionGroup.Kind.CONFIRM:
        raise AnswerRejected("This question has no list of changes to tick.")
    if indexes != [CONFIRM_APPLY]:
        return None
    count = len(group.payload.get("operations") or [])
    if not answer.changes:
        raise AnswerRejected("Tick at least one change to apply, or cancel.")
    for i in answer.changes:
        if not 0 <= i < count:
            raise AnswerRejected(f"There is no change {i + 1} on this card; it lists {count}.")
    if len(set(answer.changes)) != len(answer.changes):
        raise AnswerRejected("A change was ticked twice.")
    return sorted(answer.changes)


def _key_range(question: PendingQuestion) -> str:
    keys = question.option_keys
    return f"{keys[0]}–{keys[-1]}"


def _settle(
    question: PendingQuestion,
    group: QuestionGroup,
    questions: list[PendingQuestion],
    changes: _Changes,
    *,
    now: dt.datetime,
    status: str,
    text: str,
    indexes: list[int],
    is_custom: bool,
    via: str,
) -> Resolution:
    """Resolve one pending question of a group locked by `_lock_group_of`, whose `questions` were
    read under that lock: in memory, noting the rows to write in `changes` (which writes them all
    at once, without reading them back)."""
    question.status, question.answer, question.selected_indexes, question.is_custom = status, text, indexes, is_custom
    question.resolved_via, question.resolved_at, question.paused_at = via, now, None
    changes.resolved.append(question)
    resolution = Resolution(question=question, group=group, questions=questions, changed=[question])
    nxt = next((q for q in questions if q.is_pending), None)
    if nxt is not None:
        if nxt.deadline is None and nxt.timeout_seconds:
            nxt.deadline = now + dt.timedelta(seconds=nxt.timeout_seconds)
            changes.clocks_started.append(nxt)
        resolution.next_question = nxt
    elif group.completed_at is None:
        group.completed_at = now
        changes.completed.append(group)
        resolution.completed_group = True
    return resolution


def _resolve_one(
    question: PendingQuestion,
    group: QuestionGroup,
    questions: list[PendingQuestion],
    *,
    status: str,
    text: str,
    indexes: list[int],
    is_custom: bool,
    via: str,
) -> Resolution:
    now, changes = timezone.now(), _Changes()
    resolution = _settle(
        question, group, questions, changes, now=now, status=status, text=text, indexes=indexes, is_custom=is_custom, via=via
    )
    changes.save(now)
    return resolution


@dataclass
class _Changes:
    """The rows a set of resolutions changed, written in one statement per kind of change."""

    resolved: list[PendingQuestion] = field(default_factory=list)
    clocks_started: list[PendingQuestion] = field(default_factory=list)  # the next question's deadline
    completed: list[QuestionGroup] = field(default_factory=list)
    payloads: list[QuestionGroup] = field(default_factory=list)  # a confirmation's ticked changes

    def save(self, now: dt.datetime) -> None:
        for group in self.payloads:
            QuestionGroup.objects.filter(pk=group.pk).update(payload=group.payload)
        if self.resolved:
            qs = self.resolved
            written = sql.resolve(qs, now=now)
            if len(written) != len(qs):
                # Every writer holds the group's lock, so this cannot happen; if it does, the
                # transaction must not commit a resolution on top of another.
                lost = next(q for q in qs if q.pk not in written)
                lost.refresh_from_db()
                raise AlreadyResolved(lost)
        if self.clocks_started:
            sql.start_clocks(self.clocks_started)
        if self.completed:
            sql.complete(self.completed, now=now)


Locked = tuple[QuestionGroup, list[PendingQuestion], PendingQuestion]  # (group, its questions, the question)


def _lock_group_of(*, question_id: uuid.UUID, user: User | None = None) -> Locked | None:
    """Lock the group of a question (the user's, when given), raise its revision and read its
    questions as they are now: two statements. Every write to a group's questions takes this lock
    first, so what is read here stays true until the transaction ends. None when there is no such
    question."""
    key = _as_uuid(question_id)
    return None if key is None else _lock_groups_of([(key, user)]).get(key)


def _lock_groups_of(wanted: list[tuple[uuid.UUID, User | None]]) -> dict[uuid.UUID, Locked]:
    """`_lock_group_of` for many (question, user or None) at once, still in two statements; what
    was found, by question id. The groups are locked in id order, as any other process locking
    several does, so two of them never wait on each other in a cycle."""
    if not wanted:
        return {}
    groups = {g.pk: g for g in sql.lock_groups_of_questions([(key, None if user is None else user.pk) for key, user in wanted])}
    found: dict[uuid.UUID, Locked] = {}
    for questions in selectors.questions_of_groups(groups).values():
        for q in questions:
            found[q.pk] = (groups[q.group_id], questions, q)
    return found


def _lock_group(*, group_id: uuid.UUID, user: User) -> QuestionGroup | None:
    """`_lock_group_of` for a group named by its own id (the user's)."""
    key = _as_uuid(group_id)
    if key is None:
        return None
    return sql.lock_group(group_id=key, user_id=user.pk)


def _as_uuid(value: object) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


# --- deadlines -------------------------------------------------------------------------------


def expire_if_due(*, question_id: uuid.UUID, now: dt.datetime | None = None) -> Resolution | None:
    """Apply the default if the deadline has passed; None if it hasn't (or someone answered)."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _lock_group_of(question_id=question_id)
        if locked is None:
            return None
        group, questions, question = locked
        if not question.is_pending or question.deadline is None or question.deadline > now:
            return None
        indexes = [i for i in question.default_indexes if 0 <= i < len(question.options)]
        if question.destructive:
            indexes = []  # a destructive confirmation never defaults to "yes"
        if not question.multi_select:
            indexes = indexes[:1]
        text = ", ".join(question.options[i]["label"] for i in indexes)
        via = Via.TIMEOUT_DEFAULT if indexes else Via.TIMEOUT_NONE
        return _resolve_one(question, group, questions, status=Status.TIMED_OUT, text=text, indexes=indexes, is_custom=False, via=via)


def due_question_ids(*, now: dt.datetime | None = None, limit: int = 200) -> list[uuid.UUID]:
    now = now or timezone.now()
    return list(
        PendingQuestion.objects.filter(status=Status.PENDING, deadline__lte=now).order_by("deadline").values_list("pk", flat=True)[:limit]
    )


@transaction.atomic
def pause(*, user: User, question_id: uuid.UUID) -> PendingQuestion:
    """The person started typing: stop the clock. The deadline moves out by the remaining pause
    budget, so a tab that vanishes mid-pause still times out eventually."""
    question = _locked_pending(user=user, question_id=question_id)
    if question.paused_at is None and question.deadline is not None:
        now = timezone.now()
        remaining = max(0.0, (question.deadline - now).total_seconds())
        budget = max(0.0, settings.QUESTION_PAUSE_CAP_SECONDS - question.pause_seconds_used)
        question.paused_at, question.remaining_at_pause = now, remaining
        question.deadline = now + dt.timedelta(seconds=remaining + budget)
        question.save(update_fields=["paused_at", "remaining_at_pause", "deadline"])
    return question


@transaction.atomic
def resume(*, user: User, question_id: uuid.UUID) -> PendingQuestion:
    """Five seconds idle: the clock runs again from where it stopped (the pause is used up)."""
    question = _locked_pending(user=user, question_id=question_id)
    if question.paused_at is not None:
        now = timezone.now()
        budget = max(0.0, settings.QUESTION_PAUSE_CAP_SECONDS - question.pause_seconds_used)
        used = min(budget, (now - question.paused_at).total_seconds())
        # Past the cap, the clock ran on during the pause; what was left is reduced by the excess.
        overrun = max(0.0, (now - question.paused_at).total_seconds() - budget)
        question.pause_seconds_used += used
        question.deadline = now + dt.timedelta(seconds=max(0.0, (question.remaining_at_pause or 0) - overrun))
        question.paused_at, question.remaining_at_pause = None, None
        question.save(update_fields=["paused_at", "remaining_at_pause", "deadline", "pause_seconds_used"])
    return question


def _locked_pending(*, user: User, question_id: uuid.UUID) -> PendingQuestion:
    locked = _lock_group_of(question_id=question_id, user=user)
    if locked is None:
        raise QuestionNotFound()
    question = locked[2]
    if not question.is_pending:
        raise AlreadyResolved(question)
    return question


# --- skipping and guesses --------------------------------------------------------------------


def skip_group(*, user: User, group_id: uuid.UUID, set_aside: bool = False) -> Resolution:
    """`s`/`skip`: every unanswered question of the group is cancelled. `set_aside`: the person
    sent a new request instead, and the card's receipt says so."""
    with transaction.atomic():
        group = _lock_group(group_id=group_id, user=user)
        if group is None:
            raise QuestionNotFound()
        if set_aside and group.completed_at is None:
            group.payload = {**group.payload, "set_aside": True}
            group.save(update_fields=["payload"])
        questions = selectors.group_questions(group)
        pending = [q for q in questions if q.is_pending]
        if not pending:
            raise AlreadyResolved(questions[-1])
        now = timezone.now()
        changes = _Changes()
        resolutions = [
            _settle(q, group, questions, changes, now=now, status=Status.CANCELLED, text="", indexes=[], is_custom=False, via=Via.SKIPPED)
            for q in pending
        ]
        changes.save(now)
        resolution = resolutions[-1]
        resolution.changed = [r.question for r in resolutions]
        return resolution


def record_guesses(*, rankings: list[tuple[uuid.UUID, list[dict]]]) -> None:
    """Several questions' rankings at once (one thread hop for a whole group)."""
    for question_id, ranking in rankings:
        record_guess(question_id=question_id, ranking=ranking)


@transaction.atomic
def record_guess(*, question_id: uuid.UUID, ranking: list[dict]) -> PendingQuestion | None:
    """Store the guesser's confidences; the top option becomes the timeout default when the
    guesser is confident enough (QUESTION_DEFAULT_MIN_CONFIDENCE).
    `ranking`: [{"index", "confidence" (0..1), "reasoning"}]. No-op once resolved."""
    # Same lock as every other write (the group's): no deadlock with an answer.
    locked = _lock_group_of(question_id=question_id)
    if locked is None:
        return None
    question = locked[2]
    if not question.is_pending:
        return None
    by_index = {r["index"]: r for r in ranking if 0 <= r["index"] < len(question.options)}
    for i, option in enumerate(question.options):
        if i in by_index:
            option["confidence"] = round(float(by_index[i]["confidence"]), 3)
            option["reasoning"] = str(by_index[i].get("reasoning", ""))[:200]
    ordered = sorted(by_index.values(), key=lambda r: -r["confidence"])
    # A weak guess is shown as a hint but never applied as if it were the answer: below the
    # threshold the question has no default, and running out of time chooses nothing.
    if ordered and not question.destructive:
        sure = float(ordered[0]["confidence"]) >= settings.QUESTION_DEFAULT_MIN_CONFIDENCE
        question.default_indexes = [ordered[0]["index"]] if sure else []
    question.guessed_at = timezone.now()
    question.save(update_fields=["options", "default_indexes", "guessed_at"])
    return question
