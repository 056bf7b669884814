"""A question's clock in a real Chromium, at 1280×800 and 390×844, with no console error: it starts
when the card can be seen, pauses while the tab is hidden, says "reconnecting" while the server is
unreachable, and a default applied for the person is recorded as no answer. A pause that loses the
race with the answer it was typing is not an error either."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from chat.models import Message
from questions.models import PendingQuestion
from tests.e2e import conftest
from tests.e2e.conftest import DaphneServer, wait_for_socket
from tests.e2e.test_questions_ui import MODEL_ENV, PASSWORD, chat_requests, pending_card, send
from tests.fake_openai import Reply
from workspace.models import Task

pytestmark = pytest.mark.e2e

VIEWPORTS = [pytest.param({"width": 1280, "height": 800}, id="desktop"), pytest.param({"width": 390, "height": 844}, id="phone")]

# The page's visibility, under the test's control (a headless page is always "visible").
VISIBILITY = """() => {
  window.__hidden = false;
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => window.__hidden ? 'hidden' : 'visible'});
  Object.defineProperty(document, 'hidden', {configurable: true, get: () => window.__hidden});
}"""


def set_hidden(page, hidden: bool) -> None:
    page.evaluate("h => { window.__hidden = h; document.dispatchEvent(new Event('visibilitychange')); }", hidden)


def open_chat(browser, base_url, viewport, username):
    return conftest.open_chat(browser, base_url, viewport, username, PASSWORD)


@pytest.fixture
def detector_server(start_server, fake_model):
    env = {**MODEL_ENV, "QUESTION_DETECTOR_ENABLED": "true", "QUESTION_GUESSER_ENABLED": "true"}
    return start_server(model=fake_model, **env), fake_model


def script_detected_yes_no(fake) -> None:
    """A reply that ends with a yes/no question; the detector finds it, the guesser says Yes
    (80 %); after the timeout, the model's next reply."""
    chat = [Reply.text("Harbor has had no activity for months. Shall I archive it?"), Reply.text("Archived Harbor.")]

    def reply(body: dict) -> Reply:
        if "response_format" in body:
            if "Detection" in json.dumps(body["response_format"]):
                return Reply.json({"questions": [{"question": "Shall I archive it?", "options": ["Yes", "No"], "complexity": "low"}]})
            return Reply.json(
                {"ranking": [{"index": 0, "confidence": 0.8, "reasoning": "x"}, {"index": 1, "confidence": 0.2, "reasoning": "y"}]}
            )
        return chat.pop(0) if chat else Reply.error(500, "the chat script is empty")

    fake.default = reply


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_clock_starts_when_seen_pauses_while_hidden_and_the_record_says_no_answer(detector_server, browser, viewport):
    server, fake = detector_server
    script_detected_yes_no(fake)
    context, user, page, errors = open_chat(browser, server.url, viewport, f"unseen{viewport['width']}")
    try:
        page.evaluate(VISIBILITY)
        set_hidden(page, True)
        send(page, "anything stale in Harbor?")
        card = pending_card(page)
        # The guess has swapped in (a later render of the card): still nobody has seen it.
        expect(card.locator(".option.is-default .label")).to_have_text("Yes")
        question = PendingQuestion.objects.get(conversation__owner=user)
        assert question.paused_at is not None and question.remaining_at_pause == question.timeout_seconds == 8
        expect(card).to_have_attribute("data-paused", "1")
        expect(card.locator(".countdown-time")).to_have_text("8 s")

        set_hidden(page, False)  # seen: the clock starts from its full time
        expect(card).to_have_attribute("data-paused", "0")
        question.refresh_from_db()
        assert question.paused_at is None and question.deadline - timezone.now() <= dt.timedelta(seconds=8)

        set_hidden(page, True)  # hidden: the server's clock stops too
        expect(card).to_have_attribute("data-paused", "1")
        question.refresh_from_db()
        assert question.paused_at is not None and 0 < question.remaining_at_pause <= 8

        set_hidden(page, False)
        expect(card).to_have_attribute("data-paused", "0")
        receipt = page.locator(".question-receipt.timed-out")
        expect(receipt).to_contain_text("No answer — default applied: Yes", timeout=15_000)
        derived = page.locator(".message-derived")
        expect(derived.locator(".message-body")).to_have_text("No answer — default applied: Yes")
        expect(derived.locator(".message-meta")).to_contain_text("Timed out")
        expect(page.locator(".message-assistant .markdown").last).to_have_text("Archived Harbor.")
        assert "Your answer" not in page.locator("#message-list").inner_text()
        # The model reads the same record.
        last_user = [m for m in chat_requests(fake)[-1]["messages"] if m["role"] == "user"][-1]
        assert last_user["content"] == "No answer — default applied: Yes"
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_clock_waits_while_a_reply_above_the_card_is_still_streaming(detector_server, browser, viewport):
    server, fake = detector_server
    script_detected_yes_no(fake)
    context, user, page, errors = open_chat(browser, server.url, viewport, f"streaming{viewport['width']}")
    try:
        # A reply above the card that is still streaming (as a stream's placeholder is on the page).
        page.evaluate(
            """() => {
              const article = document.createElement('article');
              article.className = 'message message-assistant streaming';
              article.id = 'stream-still-running';
              document.getElementById('message-list').prepend(article);
            }"""
        )
        send(page, "anything stale in Harbor?")
        card = pending_card(page)
        expect(card.locator(".option.is-default .label")).to_have_text("Yes")  # a later render of the card
        expect(card).to_have_attribute("data-paused", "1")
        assert PendingQuestion.objects.get(conversation__owner=user).paused_at is not None
        # The stream finishes: its message is swapped in (htmx:load), and the clock starts.
        page.evaluate(
            """() => {
              const stream = document.getElementById('stream-still-running');
              stream.classList.remove('streaming');
              htmx.trigger(stream, 'htmx:load');
            }"""
        )
        expect(card).to_have_attribute("data-paused", "0")
        assert PendingQuestion.objects.get(conversation__owner=user).paused_at is None
        expect(page.locator(".question-receipt.timed-out")).to_contain_text("No answer — default applied: Yes", timeout=15_000)
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_countdown_says_reconnecting_while_the_server_is_unreachable(daphne_server, transactional_db, browser, viewport):
    server = DaphneServer(database_name=daphne_server.env["DATABASE_NAME"], extra_env={"QUESTION_SWEEP_SECONDS": "3600"}).start()
    try:
        context, user, page, errors = open_chat(browser, server.url, viewport, f"reconnect{viewport['width']}")
        try:
            # A confirmation's five minutes: the countdown cannot run out while the server is down.
            Task.objects.create(owner=user, title="Old chore", status="completed")
            send(page, "delete all my completed tasks")
            card = pending_card(page)
            expect(card).to_have_attribute("data-paused", "0")
            reconnecting = card.locator(".countdown-reconnecting")
            expect(reconnecting).to_have_count(0)
            server.stop()
            page.wait_for_selector("body[data-ws='closed']")
            expect(reconnecting).to_be_visible()
            expect(reconnecting).to_have_text("Reconnecting…")
            expect(card.locator(".countdown-label")).to_be_hidden()
            server.start()  # same port: the page reconnects by itself
            wait_for_socket(page)
            expect(reconnecting).to_have_count(0)
            expect(card.locator(".countdown-label")).to_be_visible()
            # While the server was down the browser reports each refused connection, and the ws
            # extension each socket error event (htmx logs error events); nothing else.
            outage = r"WebSocket connection to .* failed|ERR_CONNECTION_REFUSED|^\[object Event\]$"
            assert [e for e in errors if not re.search(outage, e)] == [], errors
        finally:
            context.close()
    finally:
        server.stop()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_text_pasted_and_sent_at_once_answers_without_a_console_error(live_url, browser, viewport):
    context, user, page, errors = open_chat(browser, live_url, viewport, f"pasted{viewport['width']}")
    try:
        send(page, "clean up my tasks")
        card = page.locator(".question-clarify")
        expect(card.locator(".question-pending .question-text")).to_contain_text("What kind of cleanup?")
        expect(card.locator(".question-pending")).to_have_attribute("data-paused", "0")  # seen: its clock runs
        # The pause the paste starts and the answer go out together on the socket, in that order.
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url) if "/questions/" in request.url else None)
        page.locator("#composer-input").focus()
        page.keyboard.insert_text("b")
        page.keyboard.press("Enter")
        expect(card.locator(".question-receipt.answered .receipt-answer")).to_have_text("Review open tasks")
        expect(page.locator(".message-derived .message-body")).to_have_text("show my to-do tasks")
        assert errors == [] and requests == []
        assert Message.objects.filter(conversation__owner=user, role="user").count() == 2  # the request and the clarified one
    finally:
        context.close()
