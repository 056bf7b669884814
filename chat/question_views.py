"""HTTP endpoints of question cards: answer, pause, resume, expire. Work without the websocket.

Thin: parse the form → chat.answering → render the group card. Another user's question is a
404; a question already resolved returns its resolved card with 409 (the loser of a double
click or a race with the deadline sees the receipt, not an error page).
"""
from __future__ import annotations

from channels.db import database_sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_POST
from pydantic import ValidationError

from chat import answering, rendering
from questions import selectors as question_selectors
from questions import services as questions
from questions.models import PendingQuestion, QuestionGroup
from questions.schemas import AnswerInput


async def _card_response(group_id, *, status: int = 200, error: str = "") -> HttpResponse:
    html = await database_sync_to_async(lambda: rendering.question_group(QuestionGroup.objects.get(pk=group_id), oob=False, error=error))()
    return HttpResponse(html, status=status)


async def _own_question(request: HttpRequest, question_id) -> tuple[object, PendingQuestion]:
    user = await request.auser()
    try:
        return user, await database_sync_to_async(question_selectors.question_for_user)(user=user, question_id=question_id)
    except PendingQuestion.DoesNotExist:
        raise Http404("No such question") from None


def parse_answer_form(data) -> AnswerInput:
    """The card's forms: `option` (a button), `options` (checkboxes) or `custom` (typed)."""
    if "custom" in data:
        return AnswerInput(custom=data.get("custom", ""))
    raw = data.getlist("options") if "options" in data else data.getlist("option")
    try:
        indexes = [int(i) for i in raw]
    except ValueError:
        raise ValueError("Pick an option from the list.") from None
    labels = data.getlist("label") or None
    return AnswerInput(selected_indexes=indexes, labels=labels)


@require_POST
async def answer(request: HttpRequest, question_id) -> HttpResponse:
    user, question = await _own_question(request, question_id)
    try:
        answer_input = parse_answer_form(request.POST)
        await answering.submit_answer(user=user, question_id=question.pk, answer=answer_input, via=PendingQuestion.ResolvedVia.OPTION)
    except ValidationError as exc:
        return await _card_response(question.group_id, status=422, error=_first_error(exc))
    except (questions.AnswerRejected, ValueError) as exc:
        return await _card_response(question.group_id, status=422, error=str(exc))
    except questions.AlreadyResolved:
        return await _card_response(question.group_id, status=409)
    return await _card_response(question.group_id)


@require_POST
async def pause(request: HttpRequest, question_id) -> HttpResponse:
    return await _clock(request, question_id, answering.pause)


@require_POST
async def resume(request: HttpRequest, question_id) -> HttpResponse:
    return await _clock(request, question_id, answering.resume)


async def _clock(request, question_id, change) -> HttpResponse:
    user, question = await _own_question(request, question_id)
    try:
        await change(user=user, question_id=question.pk)
    except questions.AlreadyResolved:
        return await _card_response(question.group_id, status=409)
    return HttpResponse(status=204)


# The browser's countdown reaches zero, flashes the default for 500 ms, then asks for expiry; a
# little tolerance absorbs the difference between its clock and the server's.
BROWSER_EXPIRY_TOLERANCE_SECONDS = 1.0


@require_POST
async def expire(request: HttpRequest, question_id) -> HttpResponse:
    _, question = await _own_question(request, question_id)
    resolution = await answering.expire(question.pk, early_seconds=BROWSER_EXPIRY_TOLERANCE_SECONDS)
    if resolution is None and question.is_pending:
        fresh = await database_sync_to_async(PendingQuestion.objects.get)(pk=question.pk)
        if fresh.is_pending:
            return HttpResponse(status=204)  # not due yet (paused or extended); the card stays
    return await _card_response(question.group_id)


def _first_error(exc: ValidationError) -> str:
    message = exc.errors()[0]["msg"]
    return message.removeprefix("Value error, ")
