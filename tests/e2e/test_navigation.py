"""Navigation and the things every chat product has (issue 8 items 16-20), in a real Chromium:
the phone drawer, first run, rename/delete/search/dates, stop/copy/regenerate, dark mode, favicon
and a console free of errors."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from chat.models import Conversation, Message
from llm.offline import phrasing
from tests.e2e.conftest import log_in, wait_for_socket, watch_console

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
# E2E_SCREENSHOTS=1 pytest tests/e2e/test_navigation.py -k "first_run or drawer"   # refreshes README's screenshots
DOCS = Path(__file__).resolve().parents[2] / "docs"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture
def phone_context(browser):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(10_000)
    yield context
    context.close()


def new_user(username: str):
    return get_user_model().objects.create_user(username=username, password=PASSWORD)


def logged_in_page(context, base_url: str, username: str):
    user = new_user(username)
    page = context.new_page()
    log_in(page, base_url, username, PASSWORD)
    page.wait_for_url(f"{base_url}/chat/*/")
    wait_for_socket(page)
    return user, page


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def conversation_with(user, title: str, *, days_ago: int = 0, text: str = "hello") -> Conversation:
    conversation = Conversation.objects.create(owner=user, title=title)
    Message.objects.create(conversation=conversation, role=Message.Role.USER, content=text)
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - dt.timedelta(days=days_ago))
    return conversation


# --- 20. first run ---------------------------------------------------------------------------------


def test_first_run_opens_a_usable_conversation_whose_examples_get_offline_replies(live_url, browser_context):
    user, page = logged_in_page(browser_context, live_url, "fay")
    expect(page.locator("#composer-input")).to_be_visible()
    expect(page.locator("#engine-status")).to_contain_text("Offline engine")
    expect(page.get_by_role("button", name="New conversation")).to_have_count(1)
    examples = page.locator(".example-prompt")
    expect(examples).to_have_count(4)

    examples.filter(has_text="What's in progress?").click()
    expect(page.locator("#message-list .message-user .message-body")).to_have_text("What's in progress?")
    reply = page.locator("#message-list .message-assistant:not(.streaming) .message-body.markdown")
    expect(reply).to_have_count(1, timeout=20_000)
    expect(reply).not_to_have_text("")
    expect(page.locator("#thread-empty")).to_be_hidden()
    if os.environ.get("E2E_SCREENSHOTS"):
        page.screenshot(path=str(DOCS / "screenshot.png"))
    assert Message.objects.filter(conversation__owner=user, role=Message.Role.ASSISTANT).exclude(content="").count() == 1

    # Reloading /chat/ reopens the usable empty conversation flow, not a dead end.
    page.goto(f"{live_url}/chat/")
    page.wait_for_url(f"{live_url}/chat/*/")
    expect(page.locator(".example-prompt")).to_have_count(4)
    assert Conversation.objects.filter(owner=user).count() == 2


# --- 16. phone drawer ------------------------------------------------------------------------------


def test_phone_drawer_lists_conversations_and_starts_a_new_one(live_url, phone_context):
    user, page = logged_in_page(phone_context, live_url, "gus")
    older = conversation_with(user, "Atlas launch plan", days_ago=1)
    page.reload()
    wait_for_socket(page)

    sidebar = page.locator("#sidebar")
    expect(sidebar).not_to_be_in_viewport()
    expect(page.locator("#composer-input")).to_be_in_viewport()
    toggle = page.get_by_role("button", name="Show conversations")
    expect(toggle).to_have_attribute("aria-expanded", "false")

    toggle.click()
    expect(sidebar).to_be_in_viewport()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(sidebar.get_by_role("button", name="New conversation")).to_be_visible()
    # Escape closes it and gives focus back to the toggle.
    page.keyboard.press("Escape")
    expect(sidebar).not_to_be_in_viewport()
    expect(toggle).to_be_focused()

    # Switch to the older conversation from the drawer.
    toggle.click()
    if os.environ.get("E2E_SCREENSHOTS"):
        page.wait_for_timeout(300)  # the drawer's slide-in, for the picture only
        page.screenshot(path=str(DOCS / "screenshot-phone.png"))
    sidebar.get_by_role("link", name="Atlas launch plan").click()
    page.wait_for_url(f"{live_url}/chat/{older.pk}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Atlas launch plan")
    expect(sidebar).not_to_be_in_viewport()

    # And start a new one: the empty conversation is reused, never a second empty entry.
    page.get_by_role("button", name="Show conversations").click()
    sidebar.get_by_role("button", name="New conversation").click()
    page.wait_for_url(f"{live_url}/chat/*/")
    assert page.url != f"{live_url}/chat/{older.pk}/"
    wait_for_socket(page)
    expect(page.locator("#composer-input")).to_be_in_viewport()
    expect(page.locator(".example-prompt")).to_have_count(4)
    assert Conversation.objects.filter(owner=user).count() == 2

    # The backdrop closes the drawer too.
    page.get_by_role("button", name="Show conversations").click()
    page.mouse.click(380, 400)
    expect(sidebar).not_to_be_in_viewport()


# --- 17. rename, delete, dates, titles, search -----------------------------------------------------


def test_list_has_day_headings_and_short_titles(live_url, browser_context):
    user, page = logged_in_page(browser_context, live_url, "hal")
    conversation_with(user, "Budget review", days_ago=1)
    conversation_with(user, "Hiring plan", days_ago=40)
    page.reload()
    wait_for_socket(page)
    send(page, "please list every single task that is still open in the Atlas project today")
    link = page.locator("#conversation-list .conversation-link.current")
    expect(link).to_have_text("please list every single task that…")
    expect(page.get_by_role("heading", level=1)).to_have_text("please list every single task that…")
    headings = page.locator("#conversation-list .conversation-day")
    day = timezone.localdate() - dt.timedelta(days=40)
    expected_old = day.strftime("%-d %B") if day.year == timezone.localdate().year else day.strftime("%-d %B %Y")
    expect(headings).to_have_text(["Today", "Yesterday", expected_old])


def test_a_form_submitted_before_htmx_binds_it_is_still_sent_in_place(live_url, browser_context):
    # A swapped-in form is bound when the swap settles; a fast Enter can beat that. Widen the gap
    # so the submit always comes first: the page must neither navigate nor drop the submit.
    user, page = logged_in_page(browser_context, live_url, "una")
    target = conversation_with(user, "Old name")
    page.goto(f"{live_url}/chat/{target.pk}/")
    wait_for_socket(page)
    page.evaluate("htmx.config.defaultSettleDelay = 3000; window.samePage = true")
    page.get_by_role("button", name="Rename").click()
    field = page.get_by_label("Conversation title")
    field.fill("Fast typist")
    field.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Fast typist")
    assert page.evaluate("window.samePage === true"), "the submit reloaded the page"
    target.refresh_from_db()
    assert target.title == "Fast typist"


def test_rename_with_validation_and_delete_with_confirmation(live_url, browser_context):
    user, page = logged_in_page(browser_context, live_url, "ida")
    keep = conversation_with(user, "Keep me")
    target = conversation_with(user, "Old name")
    page.goto(f"{live_url}/chat/{target.pk}/")
    wait_for_socket(page)

    page.get_by_role("button", name="Rename").click()
    field = page.get_by_label("Conversation title")
    expect(field).to_be_focused()
    field.fill("   ")
    field.press("Enter")
    expect(page.locator("#rename-error")).to_have_text("A title cannot be empty.")
    target.refresh_from_db()
    assert target.title == "Old name"
    field = page.get_by_label("Conversation title")
    field.fill("x" * 121)
    expect(field).to_have_value("x" * 120)  # the field's own limit
    field.fill("Launch checklist")
    field.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Launch checklist")
    expect(page.locator(f"#conv-{target.pk}")).to_have_text("Launch checklist")
    target.refresh_from_db()
    assert target.title == "Launch checklist"

    # Cancel in the confirmation keeps everything.
    page.get_by_role("button", name="Delete", exact=True).click()
    dialog = page.get_by_role("dialog", name="Delete this conversation?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert Conversation.objects.filter(pk=target.pk).exists()

    page.get_by_role("button", name="Delete", exact=True).click()
    dialog.get_by_role("button", name="Delete").click()
    page.wait_for_url(f"{live_url}/chat/*/")
    assert not Conversation.objects.filter(pk=target.pk).exists()
    assert not Message.objects.filter(conversation_id=target.pk).exists()
    expect(page.locator(f"#conv-{target.pk}")).to_have_count(0)
    expect(page.locator(f"#conv-{keep.pk}")).to_have_count(1)


def test_search_finds_titles_and_message_text_of_this_user_only(live_url, browser_context):
    user, page = logged_in_page(browser_context, live_url, "jon")
    other = new_user("kim")
    by_title = conversation_with(user, "Quarterly budget")
    by_text = conversation_with(user, "Misc", text="remember the BUDGET spreadsheet")
    unrelated = conversation_with(user, "Holiday plans", text="beach")
    foreign = conversation_with(other, "Budget secrets", text="budget")
    page.reload()
    wait_for_socket(page)

    page.get_by_role("searchbox", name="Search conversations").fill("budget")
    links = page.locator("#conversation-list .conversation-link")
    expect(links).to_have_count(2)
    expect(page.locator(f"#conv-{by_title.pk}")).to_be_visible()
    expect(page.locator(f"#conv-{by_text.pk}")).to_be_visible()
    expect(page.locator(f"#conv-{unrelated.pk}")).to_have_count(0)
    expect(page.locator(f"#conv-{foreign.pk}")).to_have_count(0)

    page.get_by_role("searchbox", name="Search conversations").fill("zebra")
    expect(page.locator("#conversation-list")).to_contain_text("No conversations match “zebra”.")
    page.get_by_role("searchbox", name="Search conversations").fill("")
    expect(links).to_have_count(4)  # the three above and the empty one this page is showing


# --- 18. stop, copy, regenerate ------------------------------------------------------------------


def test_stop_generating_keeps_the_partial_reply_marked_stopped(start_server, browser_context):
    server = start_server(OFFLINE_STREAM_DELAY="0.3")
    user, page = logged_in_page(browser_context, server.url, "lea")
    send(page, "What can you do?")
    streaming = page.locator(".message.streaming .stream-body")
    expect(streaming).not_to_have_text("", timeout=20_000)
    stop = page.get_by_role("button", name="Stop generating")
    expect(stop).to_be_visible()
    stop.click()

    stopped = page.locator(".message-assistant", has=page.locator(".stopped-mark"))
    expect(stopped).to_have_count(1, timeout=20_000)
    expect(stopped.locator(".stopped-mark")).to_have_text("Stopped — this reply is incomplete.")
    expect(page.locator(".message.streaming")).to_have_count(0)
    expect(stop).to_be_hidden()
    reply = Message.objects.get(conversation__owner=user, role=Message.Role.ASSISTANT)
    assert reply.metadata.get("stopped") is True
    # What was streamed before the stop is kept; the rest of the reply never came.
    assert 0 < len(reply.content) < len(phrasing.CAPABILITIES)
    assert phrasing.CAPABILITIES.startswith(reply.content.split()[0])

    # The next message gets a complete reply: the stop was for that reply only.
    send(page, "How many tasks are left to do?")
    expect(page.locator(".message-assistant:not(.streaming)")).to_have_count(2, timeout=30_000)
    expect(page.locator(".stopped-mark")).to_have_count(1)


def test_copy_puts_the_reply_on_the_clipboard_and_regenerate_replaces_it(live_url, browser):
    context = browser.new_context(viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"])
    context.set_default_timeout(10_000)
    try:
        user, page = logged_in_page(context, live_url, "max")
        send(page, "What can you do?")
        reply = page.locator("#message-list .message-assistant:not(.streaming)")
        expect(reply).to_have_count(1, timeout=20_000)
        first_id = reply.get_attribute("id")
        reply.get_by_role("button", name="Copy this message").click()
        expect(reply.get_by_role("button", name="Copy this message")).to_have_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        # The Markdown as the assistant wrote it, not the page's text.
        assert copied == Message.objects.get(conversation__owner=user, role=Message.Role.ASSISTANT).content
        assert "**" in copied and "Clarion" in copied

        # Only the last reply offers Regenerate.
        regenerate = page.get_by_role("button", name="Regenerate")
        expect(regenerate).to_have_count(1)
        regenerate.click()
        expect(page.locator(f"#{first_id}")).to_have_count(0, timeout=20_000)
        expect(reply).to_have_count(1, timeout=20_000)
        assert reply.get_attribute("id") != first_id
        expect(page.locator("#message-list .message-user")).to_have_count(1)
        assert Message.objects.filter(conversation__owner=user, role=Message.Role.ASSISTANT).count() == 1
    finally:
        context.close()


# --- 19. dark mode, favicon, no console errors ---------------------------------------------------


def test_dark_mode_follows_the_system_setting(live_url, browser):
    for scheme, dark in (("dark", True), ("light", False)):
        context = browser.new_context(viewport=DESKTOP, color_scheme=scheme)
        try:
            _, page = logged_in_page(context, live_url, f"nia-{scheme}")
            background = page.evaluate("getComputedStyle(document.body).backgroundColor")
            channels = [int(c) for c in background.removeprefix("rgb(").removesuffix(")").split(",")[:3]]
            assert (sum(channels) / 3 < 60) is dark, background
        finally:
            context.close()


def test_favicon_is_served(live_url, browser_context):
    page = browser_context.new_page()
    page.goto(f"{live_url}/login/")
    href = page.locator("link[rel=icon]").get_attribute("href")
    response = page.request.get(f"{live_url}{href}")
    assert response.status == 200 and "svg" in response.headers["content-type"]


def test_a_full_flow_logs_no_console_errors(live_url, browser_context):
    new_user("ola")
    page = browser_context.new_page()
    errors = watch_console(page)
    log_in(page, live_url, "ola", PASSWORD)
    wait_for_socket(page)
    for text in ("What can you do?", "What's in progress?"):
        send(page, text)
        expect(page.locator("#message-list .message-assistant:not(.streaming)").last).to_be_visible(timeout=20_000)
    expect(page.locator("#message-list .message-assistant .message-body.markdown")).to_have_count(2, timeout=20_000)
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Conversation title").fill("Flow")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Flow")
    page.get_by_role("searchbox", name="Search conversations").fill("progress")
    expect(page.locator("#conversation-list .conversation-link")).to_have_count(1)
    page.get_by_role("button", name="New conversation").click()
    page.wait_for_url(f"{live_url}/chat/*/")
    wait_for_socket(page)
    assert errors == []
