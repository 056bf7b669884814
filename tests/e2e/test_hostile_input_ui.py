"""Hostile or mistaken input, as a person sees it in a real Chromium, on a desktop and on a phone:
a mistyped shorthand key is an error under the composer (nothing answered, the card stays), and
a reply's bidirectional controls are shown as marked code points instead of reordering its text.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat.models import Conversation, Message
from questions.models import PendingQuestion
from tests.e2e.conftest import log_in, wait_for_socket
from tests.e2e.test_questions_ui import PASSWORD, model_server, script, send  # noqa: F401 (fixtures)
from tests.fake_openai import Reply
from workspace.demo_content import seed_demo_workspace

pytestmark = pytest.mark.e2e

VIEWPORTS = [
    pytest.param({"width": 1280, "height": 800}, id="desktop"),
    pytest.param({"width": 390, "height": 844}, id="phone"),
]


def open_conversation(browser, base_url: str, username: str, viewport: dict):
    """A logged-in page on a conversation of its own (opened directly: on a phone the list is a
    drawer)."""
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(15_000)
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    page = context.new_page()
    log_in(page, base_url, username, PASSWORD)
    page.goto(f"{base_url}/chat/{Conversation.objects.create(owner=user, title='New conversation').pk}/")
    wait_for_socket(page)
    return context, user, page


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_mistyped_shorthand_key_is_an_error_under_the_composer_and_the_card_stays(live_url, browser, viewport):
    context, user, page = open_conversation(browser, live_url, f"typo{viewport['width']}", viewport)
    try:
        seed_demo_workspace(user=user)
        send(page, "clean up my tasks")
        card = page.locator(".question-clarify")
        expect(card.locator(".question-pending .question-text")).to_contain_text("What kind of cleanup?")

        send(page, "1z")
        error = page.locator("#composer-error")
        expect(error).to_have_text("Option z is not one of a–c (question 1).")
        expect(error).to_be_in_viewport()
        # Nothing was answered: the text is handed back, the card still asks, no receipt, no message.
        expect(page.locator("#composer-input")).to_have_value("1z")
        expect(card.locator(".question-pending")).to_have_count(1)
        expect(card.locator(".question-receipt")).to_have_count(0)
        expect(page.locator(".message-user")).to_have_count(1)
        assert set(PendingQuestion.objects.filter(user=user).values_list("status", flat=True)) == {"pending"}
        assert list(Message.objects.filter(conversation__owner=user, role="user").values_list("content", flat=True)) == [
            "clean up my tasks"
        ]

        # The key that exists answers, and the error goes away.
        send(page, "1a")
        expect(card.locator(".question-receipt.answered .receipt-answer")).to_have_count(1)
        expect(error).to_have_text("")
        expect(page.locator("#composer-input")).to_have_value("")
    finally:
        context.close()


HOSTILE_REPLY = "Your invoice is ready: [\u202egpj.exe](https://evil.example/invoice.exe), from \u2066billing\u2069."


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_replys_bidirectional_controls_are_shown_not_obeyed(model_server, browser, viewport):
    server, fake = model_server
    script(fake, Reply.text(HOSTILE_REPLY))
    context, _, page = open_conversation(browser, server.url, f"bidi{viewport['width']}", viewport)
    try:
        send(page, "where is my invoice?")
        reply = page.locator(".message-assistant .markdown").last
        link = reply.locator("a")
        # The link reads as written, the override visible in front of the reversed name.
        expect(link).to_have_text("<U+202E>gpj.exe")
        expect(reply).to_contain_text("from <U+2066>billing<U+2069>.")
        marker = link.locator(".bidi-control")
        expect(marker).to_be_visible()
        expect(marker).to_be_in_viewport()
        # Styled apart from the text around it, so it reads as a warning rather than as part of a name.
        assert marker.evaluate("el => getComputedStyle(el).backgroundColor") != link.evaluate("el => getComputedStyle(el).backgroundColor")
        # Shown in its place, left to right: the marker starts the link, the name follows it.
        assert abs(marker.bounding_box()["x"] - link.bounding_box()["x"]) < 1
        assert page.evaluate("() => !/[\\u202a-\\u202e\\u2066-\\u2069]/.test(document.body.innerText)")
    finally:
        context.close()
