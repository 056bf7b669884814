"""HTTP endpoints of question cards: answer, pause, resume, expire. They work without the
websocket: the page sends an answer on its socket while that is open (`chat.consumers`, with the
same rules and the same card back) and posts it here when it is not.

Thin: parse the form → chat.answering → the group's card (an answer's and an expiry's: the card
their resolution rendered for every tab). Another user's (or no) question is a 404; a question
already resolved returns its resolved card with 409 (the loser of a double click or a race with
the deadline sees the receipt, not an error page).
"""

from __future__ import annotations

import functools
import re
import uuid
from typing import Any, Callable, Coroutine

from channels.db import database_sync_to_async
from django.http import Http404, HttpResponse, QueryDict
from django.views.decorators.http import require_POST
from pydantic import ValidationError

from chat import answering, rendering
from project.errors import ClarionError, Rejected, first_error
from project.users import AuthenticatedHttpRequest, User
from questions import selectors as question_selectors
from questions import services as questions
from questions.models import PendingQuestion
from questions.schemas import AnswerFields, AnswerInput


async def _card_response(group_id: uuid.UUID, *, status: int = 200, error: str = "") -> HttpResponse:
    def render() -> str:
        return rendering.question_group(question_selectors.group_by_id(group_id=group_id), oob=False, error=error)

    return HttpResponse(await database_sync_to_async(render)(), status=status)


def _signed_in(request: AuthenticatedHttpRequest) -> User:
    return request.user  # LoginRequiredMiddleware let only a signed-in person through


async def _acting_user(request: AuthenticatedHttpRequest) -> User:
    """The signed-in person, read in a database hop that gives its connection back: the
    middleware loaded them in this request's thread, whose connection is otherwise kept until
    the response, and a burst of answers waiting on the resolution that needs one would hold
    the whole pool."""
    return await database_sync_to_async(_signed_in)(request)


async def _error_response(exc: Exception, group_id: uuid.UUID) -> HttpResponse:
    """The one place these endpoints turn errors into responses: a question already resolved
    returns its resolved card (409); anything else the person can fix returns the card with the
    message (its status, e.g. 422)."""
    if isinstance(exc, questions.AlreadyResolved):
        return await _card_response(group_id, status=409)
    if isinstance(exc, ClarionError):
        return await _card_response(group_id, status=exc.status, error=exc.message)
    if isinstance(exc, ValidationError):
        return await _card_response(group_id, status=422, error=first_error(exc))
    raise exc


async def _question(user: User, question_id: uuid.UUID) -> PendingQuestion:
    """The person's question; another user's (or none) is a 404."""
    try:
        return await database_sync_to_async(question_selectors.question_for_user)(user=user, question_id=question_id)
    except questions.QuestionNotFound:
        raise Http404("No such question") from None


def card_errors(
    view: Callable[[AuthenticatedHttpRequest, User, PendingQuestion], Coroutine[Any, Any, HttpResponse]],
) -> Callable[[AuthenticatedHttpRequest, uuid.UUID], Coroutine[Any, Any, HttpResponse]]:
    """For the endpoints that need the question first: it is read (404 when it is not the
    person's), and the view's errors become the card's responses."""

    @functools.wraps(view)
    async def wrapped(request: AuthenticatedHttpRequest, question_id: uuid.UUID) -> HttpResponse:
        user = await _acting_user(request)
        question = await _question(user, question_id)
        try:
            return await view(request, user, question)
        except (ClarionError, ValidationError) as exc:
            return await _error_response(exc, question.group_id)

    return wrapped


# A form's index, as the card's buttons and checkboxes send it: ASCII digits, nothing else (int()
# would also take " 1", "+1", "1_0" and other scripts' digits). A minus sign is read, so that "-1"
# is refused as out of range, as over the websocket.
_INDEX = re.compile(r"-?[0-9]{1,9}")


def parse_answer_form(data: QueryDict) -> AnswerInput:
    """The card's forms: `option` (a button), `options` (checkboxes) or `custom` (typed), read
    explicitly into the fields an `answer` frame carries, then held to the same rules. A
    confirmation's form also says it lists its changes (`choose_changes`) and sends the ticked
    ones (`changes`, their places in the list): none ticked is an empty choice, not "all"."""
    fields: dict[str, Any] = {}
    for name, several in (("option", "Pick one option for this question, not several."), ("custom", "Type one answer.")):
        values = data.getlist(name)
        if len(values) > 1:
            raise Rejected(several)
        if values:
            fields[name] = values[0]
    if "option" in fields:
        fields["option"] = _index(fields["option"])
    if "options" in data:
        fields["options"] = [_index(value) for value in data.getlist("options")]
    if "label" in data:
        fields["label"] = data.getlist("label")
    if "choose_changes" in data:
        fields["changes"] = [_index(value, error="Tick changes from the list.") for value in data.getlist("changes")]
    return AnswerFields.model_validate(fields).to_answer()


def _index(value: str, *, error: str = "Pick an option from the list.") -> int:
    if not _INDEX.fullmatch(value):
        raise Rejected(error)
    return int(value)


@require_POST
async def answer(request: AuthenticatedHttpRequest, question_id: uuid.UUID) -> HttpResponse:
    """The question is not read first: resolving it checks that it is the person's. On success
    the response is the card its resolution rendered; an error reads the question for its card."""
    user = await _acting_user(request)
    try:
        answer_input = parse_answer_form(request.POST)
        receipt = await answering.submit_answer(
            user=user, question_id=question_id, answer=answer_input, via=PendingQuestion.ResolvedVia.OPTION
        )
    except questions.QuestionNotFound:
        raise Http404("No such question") from None
    except (ClarionError, ValidationError) as exc:
        question = await _question(user, question_id)
        return await _error_response(exc, question.group_id)
    return HttpResponse(receipt.card)


@require_POST
@card_errors
async def pause(request: AuthenticatedHttpRequest, user: User, question: PendingQuestion) -> HttpResponse:
    """A pause that arrives after the question was answered (text pasted and sent at once: the
    answer overtakes the pause its typing started) has nothing left to stop; not an error."""
    try:
        await answering.pause(user=user, question_id=question.pk)
    except questions.AlreadyResolved:
        pass
    return HttpResponse(status=204)


@require_POST
@card_errors
async def resume(request: AuthenticatedHttpRequest, user: User, question: PendingQuestion) -> HttpResponse:
    """The card as it now is: a page that resumes on load may not have its socket yet, and
    would miss the broadcast of the running clock. A question resolved meanwhile has no clock
    to resume: its resolved card, as a success too."""
    try:
        await answering.resume(user=user, question_id=question.pk)
    except questions.AlreadyResolved:
        pass
    return await _card_response(question.group_id)


@require_POST
@card_errors
async def expire(request: AuthenticatedHttpRequest, user: User, question: PendingQuestion) -> HttpResponse:
    receipt = await answering.expire(question.pk, early_seconds=answering.PAGE_EXPIRY_TOLERANCE_SECONDS)
    if receipt is not None:
        return HttpResponse(receipt.card)
    if question.is_pending and await database_sync_to_async(question_selectors.is_pending)(question_id=question.pk):
        return HttpResponse(status=204)  # not due yet (paused or extended); the card stays
    return await _card_response(question.group_id)
