"""A long conversation and a long conversation list, in a real Chromium at 1280×800 and 390×844:
the thread opens on its newest page and loads earlier pages as the reader scrolls up without moving
what they read; streaming, cards, Regenerate, Retry and links to old messages work with the older
pages not loaded; the list loads more as it scrolls, each day heading once."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat.models import Conversation, Message
from tests.conftest import moments_over_days
from tests.e2e.conftest import log_in, wait_for_socket
from tests.fake_openai import Reply
from workspace.demo_content import seed_demo_workspace

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]
MODEL_ENV = {"CLARIFICATION_ENABLED": "false", "QUESTION_DETECTOR_ENABLED": "false", "QUESTION_GUESSER_ENABLED": "false"}


def signed_in(browser, viewport, base_url: str, username: str):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE, has_touch=viewport is PHONE)
    context.set_default_timeout(15_000)
    # Every Content-Security-Policy violation the page reports (none is expected).
    context.add_init_script(
        'window.__violations = []; document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.violatedDirective));'
    )
    page = context.new_page()
    log_in(page, base_url, username, PASSWORD)
    return user, context, page


def long_conversation(user, n: int = 2000) -> Conversation:
    """`n` messages, asked and answered in turn; the last answer says which request it answers,
    so no turn is left to resume."""
    conversation = Conversation.objects.create(owner=user, title="A long conversation")
    made = Message.objects.bulk_create(
        Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"Message number {i}: the venue and the catering.")
        for i in range(n)
    )  # fmt: skip
    Message.objects.filter(pk=made[-1].pk).update(in_reply_to=made[-2])
    return conversation


def message_count(page) -> int:
    return page.locator("#message-list .message").count()


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_long_thread_opens_at_its_newest_page_and_loads_earlier_ones_without_a_jump(live_url, browser, viewport):
    user, context, page = signed_in(browser, viewport, live_url, f"long{viewport['width']}")
    try:
        conversation = long_conversation(user)
        page.goto(f"{live_url}/chat/{conversation.pk}/")
        wait_for_socket(page)
        expect(page.locator(".message").last).to_contain_text("Message number 1999")
        expect(page.locator(".message").last).to_be_in_viewport()
        assert message_count(page) <= 60

        # Scrolled to the top: the page before loads above, and what the reader saw stays put.
        oldest = page.locator("#message-list .message").first
        oldest_id = oldest.get_attribute("id")
        page.locator("#message-list").evaluate("l => { l.scrollTop = 0; }")
        top_before = page.locator(f"#{oldest_id}").evaluate("el => el.getBoundingClientRect().top")
        page.wait_for_function("() => document.querySelectorAll('#message-list .message').length >= 100")
        page.wait_for_function("() => !document.querySelector('.htmx-request')")
        top_after = page.locator(f"#{oldest_id}").evaluate("el => el.getBoundingClientRect().top")
        assert abs(top_after - top_before) <= 2, (top_before, top_after)
        assert message_count(page) <= 110  # one page at a time, not the rest of the thread
        expect(page.get_by_role("button", name="Jump to latest")).to_be_visible()

        # Further up, again: every message appears once, in order.
        page.locator("#message-list").evaluate("l => { l.scrollTop = 0; }")
        page.wait_for_function("() => document.querySelectorAll('#message-list .message').length >= 150")
        texts = page.locator("#message-list .message .message-body").all_inner_texts()
        numbers = [int(t.split(":")[0].removeprefix("Message number ")) for t in texts]
        assert numbers == list(range(2000 - len(numbers), 2000))
        assert page.evaluate("window.__violations") == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_replies_cards_and_regenerate_work_with_earlier_pages_not_loaded(live_url, browser, viewport):
    user, context, page = signed_in(browser, viewport, live_url, f"longturn{viewport['width']}")
    try:
        seed_demo_workspace(user=user)
        conversation = long_conversation(user, 600)
        page.goto(f"{live_url}/chat/{conversation.pk}/")
        wait_for_socket(page)
        send(page, "What's in progress?")
        reply = page.locator(".message-assistant .message-body.markdown").last
        expect(reply).to_contain_text("in-progress tasks", timeout=20_000)
        expect(page.locator(".message-assistant.streaming")).to_have_count(0, timeout=20_000)
        expect(reply).to_be_in_viewport()

        page.locator("#message-list > .message-assistant").last.get_by_role("button", name="Regenerate").click()
        expect(page.locator(".message-user", has_text="What's in progress?")).to_have_count(1)
        expect(page.locator(".message-assistant.streaming")).to_have_count(0, timeout=20_000)
        expect(page.locator(".message-assistant .message-body.markdown").last).to_contain_text("in-progress tasks")

        send(page, "clean up my tasks")
        card = page.locator(".question-clarify .question-pending")
        expect(card).to_have_count(1, timeout=20_000)
        expect(card).to_be_in_viewport()
        # Reopened, the page reaches back to the waiting card, however many messages came before.
        page.reload()
        wait_for_socket(page)
        expect(page.locator(".question-clarify .question-pending")).to_be_in_viewport()
        page.locator(".question-clarify .question-pending .option").first.click()
        expect(page.locator(".question-clarify .question-receipt").first).to_be_visible()
        assert message_count(page) <= 70
        assert page.evaluate("window.__violations") == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_retry_works_with_earlier_pages_not_loaded(start_server, fake_model, browser, viewport):
    server = start_server(model=fake_model, **MODEL_ENV)
    user, context, page = signed_in(browser, viewport, server.url, f"longretry{viewport['width']}")
    try:
        conversation = long_conversation(user, 600)
        page.goto(f"{server.url}/chat/{conversation.pk}/")
        wait_for_socket(page)
        fake_model.script(Reply.error(500, "upstream broke"))
        send(page, "how is the launch going?")
        retry = page.locator(".message-error").last.get_by_role("button", name="Retry")
        expect(retry).to_be_visible(timeout=20_000)
        fake_model.script(Reply.text("The launch is on track."))
        retry.click()
        expect(page.locator(".message-assistant .message-body.markdown").last).to_have_text("The launch is on track.", timeout=20_000)
        expect(page.locator(".message-error")).to_have_count(0)
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_link_to_an_old_message_opens_the_thread_at_it(live_url, browser, viewport):
    user, context, page = signed_in(browser, viewport, live_url, f"longlink{viewport['width']}")
    try:
        conversation = long_conversation(user, 600)
        target = conversation.messages.get(content__startswith="Message number 3:")
        page.goto(f"{live_url}/chat/{conversation.pk}/#message-{target.pk}")
        wait_for_socket(page)
        # The thread back to it is some 600 messages to render: more than a page's wait on a busy machine.
        expect(page.locator(f"#message-{target.pk}")).to_be_in_viewport(timeout=30_000)
        expect(page.locator(f"#message-{target.pk}")).to_contain_text("Message number 3:")
    finally:
        context.close()


# --- the conversation list ------------------------------------------------------------------------


def many_conversations(user, n: int, *, days: int) -> list[Conversation]:
    made = Conversation.objects.bulk_create(Conversation(owner=user, title=f"Conversation {i:04d}") for i in range(n))
    for conversation, moment in zip(made, moments_over_days(n, days=days), strict=True):
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=moment)
    return made


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_conversation_list_loads_more_as_it_scrolls_with_each_day_heading_once(live_url, browser, viewport):
    user, context, page = signed_in(browser, viewport, live_url, f"manyconv{viewport['width']}")
    try:
        made = many_conversations(user, 160, days=3)
        page.goto(f"{live_url}/chat/{made[0].pk}/")
        if viewport is PHONE:
            page.get_by_role("button", name="Show conversations").click()
            expect(page.locator("#sidebar")).to_be_in_viewport()
        links = page.locator("#conversation-list .conversation-link")
        expect(links).to_have_count(50)
        for shown in (100, 150, 161):  # and the blank conversation the login opened
            links.last.scroll_into_view_if_needed()
            expect(links).to_have_count(shown)
        expect(links.last).to_have_text("Conversation 0159")
        expect(page.locator(".list-more")).to_have_count(0)
        assert page.evaluate("window.__violations") == []
        headings = page.locator("#conversation-list .conversation-day").all_inner_texts()
        assert len(headings) == len(set(headings)) == 4, headings
        expect(page.locator("#conversation-list .conversation-link.current")).to_have_text("Conversation 0000")
    finally:
        context.close()
