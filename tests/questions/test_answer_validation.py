"""One set of answer rules at both edges: the card's HTTP form and the websocket's `answer` frame.

Each bad answer gets its clear message — the card with the error, as a 4xx over HTTP and as a frame
to the tab that sent it over the websocket (which stays up); a frame of the wrong shape, an error
under the composer — and writes nothing: the question stays pending and no tool result is saved.
"""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from chat.models import Message
from questions.models import PendingQuestion
from tests.questions.test_answer_endpoints import make_group
from tests.websocket import open_socket, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def pending_question(user, **options):
    group = make_group(user, **options)
    return group.questions.order_by("position").first()


@database_sync_to_async
def state_of(question) -> tuple[str, int]:
    return PendingQuestion.objects.get(pk=question.pk).status, Message.objects.filter(role="tool").count()


def unescaped(html: str) -> str:
    return html.replace("&#x27;", "'").replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


async def answer_over_ws(user, question, fields: dict | str) -> tuple[str, str]:
    """Sends one `answer` frame (fields, or the raw text of a frame); returns where the error was
    shown — on the question's card (an answer the question refuses, as the card's POST shows it)
    or under the composer (a frame of the wrong shape) — and the frame that showed it."""
    socket = await open_socket(f"/ws/conversations/{question.conversation_id}/", user=user)
    assert (await socket.connect())[0]
    raw = fields if isinstance(fields, str) else json.dumps({"action": "answer", "question_id": str(question.pk), **fields})
    await socket.send_to(text_data=raw)
    while True:
        frame = await socket.receive_from(timeout=15)
        if 'class="question-error"' in frame or 'id="composer-error"' in frame:
            break
    where = "card" if 'class="question-error"' in frame and f'id="question-{question.pk}"' in frame else "composer"
    # The socket is still up and still served: a pause frame gets the card back.
    await socket.send_to(text_data=json.dumps({"action": "pause", "question_id": str(question.pk)}))
    assert f'id="question-{question.pk}"' in await receive_until(socket, f'id="question-{question.pk}"')
    await socket.disconnect()
    return where, unescaped(frame)


async def answer_over_http(async_client, user, question, data: dict) -> tuple[int, str]:
    await async_client.aforce_login(user)
    response = await async_client.post(f"/chat/questions/{question.pk}/answer/", data)
    return response.status_code, unescaped(response.content.decode())


# (websocket frame fields, what the person is told)
WS_CASES = [
    pytest.param({"option": True}, "Frame field 'option': Input should be a valid integer", id="true-is-not-an-index"),
    pytest.param({"option": False}, "Frame field 'option': Input should be a valid integer", id="false-is-not-an-index"),
    pytest.param({"option": "1"}, "Frame field 'option': Input should be a valid integer", id="a-string-is-not-an-index"),
    pytest.param({"option": 1.0}, "Frame field 'option': Input should be a valid integer", id="a-float-is-not-an-index"),
    pytest.param({"options": ["1"]}, "Frame field 'options.0': Input should be a valid integer", id="strings-in-options"),
    pytest.param({"options": [True]}, "Frame field 'options.0': Input should be a valid integer", id="bool-in-options"),
    pytest.param({"options": 1}, "Frame field 'options': Input should be a valid array", id="options-not-a-list"),
    pytest.param({"options": [0, 1]}, "Pick just one option for this question.", id="two-on-a-single-select"),
    pytest.param({"options": [0, 0]}, "An option was picked twice.", id="the-same-option-twice"),
    pytest.param({"option": 3}, "Option 4 is not one of the 3 options.", id="index-past-the-end"),
    pytest.param({"option": -1}, "Option 0 is not one of the 3 options.", id="negative-index"),
    pytest.param({"option": 0, "label": "Harbor"}, "The option you picked no longer matches the question", id="label-mismatch"),
    pytest.param({"custom": "Elsewhere", "option": 1}, "Pick options or type an answer, not both.", id="custom-and-option"),
    pytest.param({"custom": "Elsewhere", "options": [1]}, "Pick options or type an answer, not both.", id="custom-and-options"),
    pytest.param({"option": 0, "options": [1]}, "Pick one option, or several, not both.", id="option-and-options"),
    pytest.param({"custom": 5}, "Frame field 'custom': Input should be a valid string", id="custom-not-a-string"),
    pytest.param({"custom": "   "}, "Type an answer first.", id="custom-empty"),
    pytest.param({"custom": "x" * 1001}, "That answer is 1,001 characters; the limit is 1,000.", id="custom-too-long"),
    pytest.param({"custom": "a\u0000b"}, "That answer contains a NUL character (U+0000); remove it and try again.", id="custom-nul"),
    pytest.param({}, "Pick an option or type an answer.", id="nothing"),
]


@pytest.mark.parametrize("fields, message", WS_CASES)
async def test_bad_answer_frames_get_an_error_frame_and_nothing_is_written(alice, fields, message):
    question = await pending_question(alice)
    where, error = await answer_over_ws(alice, question, fields)
    assert message in error
    assert where == ("composer" if message.startswith("Frame field") else "card")
    assert await state_of(question) == ("pending", 0)


# (form fields, what the card says); the form's strings are parsed explicitly, never with int().
HTTP_CASES = [
    pytest.param({"option": "true"}, "Pick an option from the list.", id="true-is-not-an-index"),
    pytest.param({"option": " 1"}, "Pick an option from the list.", id="padded-digits"),
    pytest.param({"option": "+1"}, "Pick an option from the list.", id="signed-digits"),
    pytest.param({"option": "1_0"}, "Pick an option from the list.", id="underscored-digits"),
    pytest.param({"option": "\u0661"}, "Pick an option from the list.", id="arabic-indic-digit"),
    pytest.param({"option": "1.0"}, "Pick an option from the list.", id="a-float-is-not-an-index"),
    pytest.param({"option": ["0", "1"]}, "Pick one option for this question, not several.", id="two-option-fields"),
    pytest.param({"options": ["0", "1"]}, "Pick just one option for this question.", id="two-on-a-single-select"),
    pytest.param({"options": ["1", "1"]}, "An option was picked twice.", id="the-same-option-twice"),
    pytest.param({"option": "3"}, "Option 4 is not one of the 3 options.", id="index-past-the-end"),
    pytest.param({"option": "0", "label": "Harbor"}, "The option you picked no longer matches the question", id="label-mismatch"),
    pytest.param({"custom": "Elsewhere", "option": "1"}, "Pick options or type an answer, not both.", id="custom-and-option"),
    pytest.param({"option": "0", "options": ["1"]}, "Pick one option, or several, not both.", id="option-and-options"),
    pytest.param({"custom": ["one", "two"]}, "Type one answer.", id="two-custom-fields"),
    pytest.param({"custom": "   "}, "Type an answer first.", id="custom-empty"),
    pytest.param({"custom": "x" * 1001}, "That answer is 1,001 characters; the limit is 1,000.", id="custom-too-long"),
    pytest.param({"custom": "a\u0000b"}, "That answer contains a NUL character (U+0000); remove it and try again.", id="custom-nul"),
    pytest.param({}, "Pick an option or type an answer.", id="nothing"),
]


@pytest.mark.parametrize("data, message", HTTP_CASES)
async def test_bad_answer_posts_return_the_card_with_the_error_and_nothing_is_written(async_client, alice, data, message):
    question = await pending_question(alice)
    status, html = await answer_over_http(async_client, alice, question, data)
    assert status == 422
    assert message in html and 'class="question-error"' in html and "question-pending" in html
    assert await state_of(question) == ("pending", 0)


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_a_typed_answer_where_none_is_allowed_is_refused_on_both_edges(async_client, alice, transport):
    question = await pending_question(alice, allow_custom=False)
    if transport == "http":
        status, shown = await answer_over_http(async_client, alice, question, {"custom": "Somewhere else"})
        assert status == 422
    else:
        where, shown = await answer_over_ws(alice, question, {"custom": "Somewhere else"})
        assert where == "card"
    assert "This question needs one of its options (a–c); a typed answer is not allowed." in shown
    assert await state_of(question) == ("pending", 0)


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_good_answers_still_go_through_on_both_edges(async_client, alice, transport):
    question = await pending_question(alice, multi_select=True)
    if transport == "http":
        status, _ = await answer_over_http(async_client, alice, question, {"options": ["2", "0"]})
        assert status == 200
    else:
        socket = await open_socket(f"/ws/conversations/{question.conversation_id}/", user=alice)
        assert (await socket.connect())[0]
        await socket.send_to(text_data=json.dumps({"action": "answer", "question_id": str(question.pk), "options": [2, 0]}))
        await receive_until(socket, "receipt-answer")
        await socket.disconnect()
    answered = await database_sync_to_async(PendingQuestion.objects.get)(pk=question.pk)
    assert (answered.status, answered.selected_indexes, answered.answer) == ("answered", [0, 2], "Atlas, Home")


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_an_answer_to_a_question_already_answered_gets_its_receipt_on_both_edges(async_client, alice, transport):
    """A second tab, or a page that posts an answer its socket may have lost: the question keeps
    its first answer, and the one who sent the second sees the receipt of the first."""
    question = await pending_question(alice)
    socket = await open_socket(f"/ws/conversations/{question.conversation_id}/", user=alice)
    assert (await socket.connect())[0]
    await socket.send_to(text_data=json.dumps({"action": "answer", "question_id": str(question.pk), "option": 0}))
    await receive_until(socket, "receipt-answer")
    if transport == "http":
        status, shown = await answer_over_http(async_client, alice, question, {"option": "1"})
        assert status == 409
    else:
        await socket.send_to(text_data=json.dumps({"action": "answer", "question_id": str(question.pk), "option": 1}))
        shown = unescaped(await receive_until(socket, f'id="question-{question.pk}"'))
    await socket.disconnect()
    assert "receipt-answer" in shown and "Atlas" in shown and "question-error" not in shown
    answered = await database_sync_to_async(PendingQuestion.objects.get)(pk=question.pk)
    assert (answered.status, answered.selected_indexes) == ("answered", [0])
