import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.e2e.conftest import log_in, wait_for_socket

pytestmark = pytest.mark.e2e


def test_message_appears_in_a_second_tab_of_the_same_conversation(live_url, browser_context):
    get_user_model().objects.create_user(username="erin", password="correct-horse")
    first = browser_context.new_page()
    log_in(first, live_url, "erin", "correct-horse")
    first.wait_for_url(f"{live_url}/chat/*/")
    wait_for_socket(first)

    second = browser_context.new_page()
    second.goto(first.url)
    wait_for_socket(second)

    first.fill("#composer-input", "Plan the launch <script>alert(1)</script>")
    first.keyboard.press("Enter")

    for tab in (first, second):
        expect(tab.locator("#message-list .message-user")).to_have_count(1)
        expect(tab.locator("#message-list .message-user .message-body")).to_have_text("Plan the launch <script>alert(1)</script>")
    # The sender's composer was cleared, the conversation got its title in both sidebars.
    expect(first.locator("#composer-input")).to_have_value("")
    expect(second.locator("#conversation-list .current")).to_have_text("Plan the launch <script>alert(1)</script>")


def test_too_long_message_shows_the_limit_and_keeps_the_text(live_url, browser_context):
    get_user_model().objects.create_user(username="finn", password="correct-horse")
    page = browser_context.new_page()
    log_in(page, live_url, "finn", "correct-horse")
    wait_for_socket(page)
    page.fill("#composer-input", "x" * 9000)
    page.keyboard.press("Enter")
    expect(page.locator("#composer-error")).to_contain_text("the limit is 8,000")
    expect(page.locator("#composer-input")).to_have_value("x" * 9000)
    expect(page.locator("#message-list .message")).to_have_count(0)


def test_shift_enter_starts_a_new_line_and_enter_sends_the_message_on_several_lines(live_url, browser_context):
    get_user_model().objects.create_user(username="gwen", password="correct-horse")
    page = browser_context.new_page()
    log_in(page, live_url, "gwen", "correct-horse")
    wait_for_socket(page)
    composer = page.locator("#composer-input")
    composer.click()
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    expect(composer).to_have_value("first line\nsecond line")
    expect(page.locator("#message-list .message-user")).to_have_count(0)  # nothing sent yet

    page.keyboard.press("Enter")
    shown = page.locator("#message-list .message-user .message-body")
    expect(shown).to_have_text("first line\nsecond line", use_inner_text=True)  # two lines, as typed
    expect(composer).to_have_value("")
