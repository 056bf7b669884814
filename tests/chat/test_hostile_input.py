"""Hostile input at the chat's edges: NUL characters, JSON nested past any parser's stack, mistyped
shorthand, and bidirectional controls in a model's reply. Each gets a clear error (an error frame
on a socket that stays up, or a 4xx) and writes nothing; a reply shows its controls instead of
obeying them."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.urls import reverse

from chat import agent, services
from chat.agent import wait_for_running_turns
from chat.models import Conversation, Message
from questions.models import PendingQuestion
from tests.fake_openai import Reply
from tests.questions.test_answer_endpoints import make_group
from tests.websocket import form_frame, frames_of_turn, open_socket, receive_until

pytestmark = pytest.mark.django_db(transaction=True)

NUL_MESSAGE = "That message contains a NUL character (U+0000); remove it and try again."


@database_sync_to_async
def counts() -> tuple[int, int]:
    return Message.objects.count(), PendingQuestion.objects.filter(status="pending").count()


async def connected(user, conversation_id):
    socket = await open_socket(f"/ws/conversations/{conversation_id}/", user=user)
    assert (await socket.connect())[0]
    return socket


async def error_then_still_up(socket) -> str:
    """The error frame; then proof that the socket is up and served (a message gets its reply)."""
    error = (await receive_until(socket, 'id="composer-error"')).replace("&#x27;", "'")
    await socket.send_to(text_data=form_frame(action="send_message", message="still here"))
    assert "still here" in await receive_until(socket, "still here")
    await wait_for_running_turns()
    return error


@pytest.mark.parametrize(
    "frame, expected",
    [
        pytest.param(form_frame(action="send_message", message="a\u0000b"), NUL_MESSAGE, id="nul-in-a-message"),
        pytest.param(form_frame(action="send_message", message="\u0000"), NUL_MESSAGE, id="nul-alone"),
        pytest.param(
            '{"action": "send_message", "message": "x", "HEADERS": ' + "[" * 20_000 + "]" * 20_000 + "}",
            "That frame is nested too deeply and was not processed.",
            id="nested-20000-deep-in-an-ignored-field",
        ),
        pytest.param("[" * 20_000 + "]" * 20_000, "That frame is nested too deeply and was not processed.", id="nested-20000-deep"),
        pytest.param('{"a":' * 8_000 + "1" + "}" * 8_000, "That frame is nested too deeply", id="nested-objects"),
        pytest.param('"just a string"', "A frame must be a JSON object.", id="a-string"),
        pytest.param(
            '{"action": "send_message", "message": 5}', "Frame field 'message': Input should be a valid string", id="not-a-string"
        ),
    ],
)
async def test_hostile_frames_get_an_error_frame_the_socket_stays_up_and_nothing_is_written(alice, frame, expected):
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await connected(alice, conversation.pk)
    assert len(frame.encode()) < 64 * 1024  # under the frame limit: the parser itself has to cope
    await socket.send_to(text_data=frame)
    assert expected in await error_then_still_up(socket)
    # Only the proof message (and its reply) was written.
    users = await database_sync_to_async(list)(Message.objects.filter(role="user").values_list("content", flat=True))
    assert users == ["still here"]
    await socket.disconnect()


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("Atlas\u0000", NUL_MESSAGE, id="nul-in-a-typed-answer"),
        pytest.param("1z", "Option z is not one of a–c (question 1).", id="a-key-that-does-not-exist"),
        pytest.param("z", "Option z is not one of a–c (question 1).", id="a-bare-key-that-does-not-exist"),
        pytest.param("1a 2q", "There is no question 2.", id="a-second-question-that-does-not-exist"),
    ],
)
@pytest.mark.parametrize("allow_custom", [True, False], ids=["typed-answers-allowed", "options-only"])
async def test_bad_text_typed_while_a_card_waits_is_an_error_and_the_card_stays(alice, text, expected, allow_custom):
    group = await database_sync_to_async(make_group)(alice, allow_custom=allow_custom)
    socket = await connected(alice, group.conversation_id)
    before = await counts()
    await socket.send_to(text_data=form_frame(action="send_message", message=text))
    error = (await receive_until(socket, 'id="composer-error"')).replace("&#x27;", "'")
    assert expected in error
    assert await counts() == before  # no message; the question still waits
    question = await database_sync_to_async(group.questions.get)()
    assert (question.status, question.answer) == ("pending", "")
    # The socket is still up: a key that exists answers.
    await socket.send_to(text_data=form_frame(action="send_message", message="1b"))
    assert "receipt-answer" in await receive_until(socket, "receipt-answer")
    question = await database_sync_to_async(group.questions.get)()
    assert (question.status, question.answer, question.is_custom) == ("answered", "Harbor", False)
    await wait_for_running_turns()
    await socket.disconnect()


async def test_a_superscript_digit_is_not_a_key_and_does_not_break_the_socket(alice):
    # "²".isdigit() is true but int("²") fails: it used to close the socket with 1011.
    group = await database_sync_to_async(make_group)(alice)
    socket = await connected(alice, group.conversation_id)
    await socket.send_to(text_data=form_frame(action="send_message", message="\u00b2"))
    assert "receipt-answer" in await receive_until(socket, "receipt-answer")
    question = await database_sync_to_async(group.questions.get)()
    assert (question.status, question.answer, question.is_custom) == ("answered", "\u00b2", True)
    await wait_for_running_turns()
    await socket.disconnect()


def test_a_title_with_a_nul_is_refused_and_the_title_kept(client, alice):
    conversation = Conversation.objects.create(owner=alice, title="Old")
    client.force_login(alice)
    url = reverse("chat:rename", args=[conversation.pk])
    response = client.post(url, {"title": "a\u0000b"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    assert b"That title contains a NUL character (U+0000); remove it and try again." in response.content
    # A plain form post (no page script) goes back to the page, unsaved.
    assert client.post(url, {"title": "a\u0000b"}).status_code == 302
    conversation.refresh_from_db()
    assert conversation.title == "Old"


def test_a_search_with_a_nul_drops_it(client, alice):
    services.post_user_message(
        user=alice, conversation_id=services.start_conversation(user=alice).pk, content="the ab test"
    )  # fmt: skip
    client.force_login(alice)
    response = client.get(reverse("chat:search") + "?q=a%00b")
    assert response.status_code == 200 and response.content.count(b"conversation-link") == 1


HOSTILE_REPLY = (
    'Your invoice: [\u202egpj.exe](https://evil.example/invoice\u202e.exe "safe\u2067 file"), '
    "signed by \u2066admin\u2069 \u200f\u200e; see `run\u202d.sh`.\n\n```sh\u202a\nrm -rf \u202b/\n```"
)


async def test_bidirectional_controls_in_a_reply_are_shown_not_obeyed(model_endpoint, alice):
    model_endpoint.script(Reply.text(HOSTILE_REPLY))
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await connected(alice, conversation.pk)
    await socket.send_to(text_data=form_frame(action="send_message", message="where is my invoice?"))
    frames = await frames_of_turn(socket)  # streamed, then the saved message

    def marker(code: str) -> str:
        return f'<span class="bidi-control">&lt;U+{code}&gt;</span>'

    page = await database_sync_to_async(_page_html)(alice, conversation.pk)
    for html in (frames, page):
        body = html[html.rindex('<div class="message-body markdown">') :]
        # The Copy button's source shows them as the marker's text, like any attribute.
        assert 'data-copy-text="Your invoice: [&lt;U+202E&gt;gpj.exe](https://evil.example/invoice&lt;U+202E&gt;.exe' in body
        # The link's text shows the override where it stands; no control is left anywhere.
        assert '<a href="https://evil.example/invoice%E2%80%AE.exe" title="safe&lt;U+2067&gt; file"' in body
        assert f"{marker('202E')}gpj.exe</a>" in body
        assert f"signed by {marker('2066')}admin{marker('2069')} {marker('200F')}{marker('200E')}" in body
        assert f"<code>run{marker('202D')}.sh</code>" in body and f"rm -rf {marker('202B')}/" in body
        assert not any(c in body for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")
    await socket.disconnect()


def _page_html(user, conversation_id) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.get(reverse("chat:conversation", args=[conversation_id])).content.decode()


async def test_a_nul_the_model_writes_is_dropped_from_its_reply_and_refused_in_tool_arguments(model_endpoint, alice):
    # Postgres cannot store or query it: a reply with one, or a search for one, used to fail the turn.
    model_endpoint.script(Reply.tool_call("query_notes", {"search_term": "la\u0000unch"}), Reply.text("Found it: la\u0000unch."))
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="find launch")
    await agent.run_pending_turns(conversation.pk)
    rows = await database_sync_to_async(lambda: list(Message.objects.order_by("id").values_list("role", "content")))()
    assert [role for role, _ in rows] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(rows[2][1]) == {
        "error": "The arguments for query_notes contain a NUL character (\\u0000). Send them without it."
    }  # a tool error the model can correct
    assert rows[-1] == ("assistant", "Found it: launch.")


async def test_bidirectional_controls_in_tool_arguments_are_shown_in_the_activity_line(model_endpoint, alice):
    model_endpoint.script(Reply.tool_call("query_notes", {"search_term": "\u202egpj.exe"}), Reply.text("No notes match."))
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await connected(alice, conversation.pk)
    await socket.send_to(text_data=form_frame(action="send_message", message="find my invoice"))
    frames = await frames_of_turn(socket)
    assert "Searched your notes for “&lt;U+202E&gt;gpj.exe”" in frames
    assert "query_notes(search_term: &lt;U+202E&gt;gpj.exe)" in frames and "\u202e" not in frames
    await socket.disconnect()


def test_bidirectional_controls_in_a_citation_chips_title_are_shown():
    from django.utils import timezone

    from chat import rendering

    reply = Message(
        pk=1, role="assistant", content="See [1].", created_at=timezone.now(),
        metadata={"citations": [{"n": 1, "url": "/kb/sources/1/", "title": "Guide \u202egpj.exe"}]},
    )  # fmt: skip
    html = rendering.message_appended(reply)
    assert "[1] Guide &lt;U+202E&gt;gpj.exe</a>" in html and "\u202e" not in html
