"""Question cards that never block the chat, in a real Chromium: new requests pass a pending card,
typed answers everywhere they are allowed, one key scheme, keys from an empty composer, every
question of a group on the card, a countdown that survives a reload, a visible default (and none
for a weak guess), and a confirmation card that counts and lists its changes. Keyboard only
wherever a person could use it.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat.models import Conversation
from questions.models import PendingQuestion
from tests.e2e.conftest import log_in, wait_for_socket
from tests.e2e.test_questions_ui import (  # noqa: F401 (fixtures)
    PASSWORD,
    ask_user,
    bar_width,
    chat_requests,
    guessing_model_server,
    model_server,
    pending_card,
    question,
    script,
    send,
    tool_result,
    user_with_page,
)
from tests.fake_openai import Reply
from workspace.demo_content import seed_demo_workspace
from workspace.models import Task

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}


def focused(page) -> str:
    return page.evaluate("() => { const a = document.activeElement; return a.id || a.className || a.tagName; }")


def composer_is_focused(page) -> bool:
    return page.evaluate("() => document.activeElement && document.activeElement.id === 'composer-input'")


# --- 8. a new request goes through; keys and short replies answer ----------------------------------


@pytest.mark.parametrize("viewport", [pytest.param(None, id="desktop"), pytest.param(PHONE, id="phone")])
def test_a_new_request_goes_through_while_a_card_is_pending(live_url, browser, viewport):
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    try:
        user = get_user_model().objects.create_user(username=f"newreq{bool(viewport)}", password=PASSWORD)
        page = context.new_page()
        log_in(page, live_url, user.username, PASSWORD)
        # Opened directly: the phone layout keeps the conversation list in a drawer.
        page.goto(f"{live_url}/chat/{Conversation.objects.create(owner=user, title='New conversation').pk}/")
        wait_for_socket(page)
        seed_demo_workspace(user=user)
        in_progress = Task.objects.filter(owner=user, status="in_progress").count()
        send(page, "clean up my tasks")
        card = page.locator(".question-clarify")
        expect(card.locator(".question-pending .question-text")).to_contain_text("What kind of cleanup?")
        expect(card.locator(".question-hint")).to_contain_text(
            "Anything else you send goes to the chat as a new message and cancels this question."
        )

        # Clearly a new request: sent as a message and answered; the card says it was cancelled.
        send(page, "show my in-progress tasks")
        expect(page.locator(".message-user", has_text="show my in-progress tasks")).to_have_count(1)
        expect(page.locator(".message-assistant .markdown").last).to_contain_text(f"Here are your in-progress tasks ({in_progress})")
        expect(page.locator("#composer-error")).to_have_text("")
        expect(card.locator(".question-pending")).to_have_count(0)
        expect(card.locator(".question-receipt.set-aside .receipt-answer")).to_have_text(["Cancelled — you sent a new message"] * 2)
        assert set(PendingQuestion.objects.filter(conversation__owner=user).values_list("status", flat=True)) == {"cancelled"}
        # Nothing continued from the cancelled card: no clarified request was run.
        expect(page.locator(".message-derived")).to_have_count(0)

        # On the next card a key answers it (the first unanswered question), not the chat.
        send(page, "clean up my tasks")
        again = page.locator(".question-clarify.state-pending")
        expect(again.locator(".question-pending .question-text")).to_contain_text("What kind of cleanup?")
        send(page, "a")
        expect(again.locator(".question-receipt.answered .receipt-answer")).to_have_count(1)
        expect(again.locator(".question-pending .question-text")).to_contain_text("Which tasks?")
        expect(page.locator(".message-user:not(.message-derived)")).to_have_count(3)
    finally:
        context.close()


# --- 9. clarification cards take typed answers --------------------------------------------------


def test_clarification_cards_show_the_custom_field_and_take_a_typed_answer(live_url, browser_context):
    user, page = user_with_page(browser_context, live_url, "typedclar")
    seed_demo_workspace(user=user)
    send(page, "clean up my tasks")
    card = page.locator(".question-clarify")
    field = card.locator(".question-pending .custom-answer input")
    expect(field).to_be_visible()
    # Keyboard only: into the card's field, type, Enter.
    field.focus()
    page.keyboard.type("Archive finished work")
    page.keyboard.press("Enter")
    receipt = card.locator(".question-receipt.answered").first
    expect(receipt.locator(".receipt-answer")).to_have_text("Archive finished work")
    expect(receipt).to_contain_text("(typed)")
    # The second question takes a short reply typed in the chat box too.
    expect(card.locator(".question-pending .custom-answer input")).to_be_visible()
    send(page, "only Atlas")
    expect(card.locator(".question-receipt.answered .receipt-answer")).to_have_text(["Archive finished work", "only Atlas"])
    expect(page.locator(".message-derived .message-body")).to_contain_text("Archive finished work")


# --- 10 and 11. one key scheme; keys from an empty composer; focus after answering -----------------

RANKING = [
    {"index": 1, "confidence": 0.6, "reasoning": "x"},
    {"index": 2, "confidence": 0.3, "reasoning": "y"},
    {"index": 0, "confidence": 0.1, "reasoning": "z"},
]


def test_the_key_printed_on_an_option_is_the_key_that_picks_it(guessing_model_server, browser_context):
    server, fake = guessing_model_server
    script(
        fake,
        ask_user(
            question("How long should the summary be?", ["One line", "A paragraph", "A full page"], timeout_seconds=120),
            question("Who should get it?", ["Just me", "The team", "Everyone"], timeout_seconds=120),
            id="call_scheme",
        ),
        Reply.text("Sent."),
        guess=RANKING,
    )
    _, page = user_with_page(browser_context, server.url, "scheme")
    send(page, "summarise the launch")
    card = pending_card(page)
    # The guesses arrive (a default is marked) without reordering: the keys read a, b, c down the card.
    expect(card.locator(".option.is-default .label")).to_have_text("A paragraph")
    expect(card.locator(".options .option .label")).to_have_text(["One line", "A paragraph", "A full page"])
    expect(card.locator(".options .option .key")).to_have_text(["a", "b", "c"])
    expect(card.locator(".question-hint")).to_contain_text("Press a–c (or 1–3) to pick")
    upcoming = page.locator(".question-upcoming .upcoming-options .key")
    expect(upcoming).to_have_text(["2a", "2b", "2c"])

    # A key that is not on the card: the error names the keys that are.
    send(page, "1e")
    expect(page.locator("#composer-error")).to_have_text("Option e is not one of a–c (question 1).")

    # The letter on the card, pressed outside the chat box, picks that option.
    page.locator("#composer-input").fill("")
    card.locator(".question-text").click()
    page.keyboard.press("b")
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text(["A paragraph"])
    # The same letter in the shorthand picks the option printed with it on question 2.
    expect(pending_card(page).locator(".options .option[data-key='b'] .label")).to_have_text("The team")
    send(page, "2b")
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text(["A paragraph", "The team"])
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Sent.")
    rows = tool_result(fake, "call_scheme")["answers"]
    assert [r["selected_indexes"] for r in rows] == [[1], [1]]


def test_digits_pick_from_an_empty_composer_and_focus_returns_where_it_was(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which day?", ["Monday", "Tuesday"]), id="call_day"),
        ask_user(question("Which time?", ["Morning", "Afternoon"]), question("Which room?", ["Lab", "Hall"]), id="call_time"),
        Reply.text("Booked."),
    )
    _, page = user_with_page(browser_context, server.url, "digits")
    send(page, "book a meeting")
    card = pending_card(page)
    expect(card.locator(".question-text")).to_have_text("Which day?")
    # The composer has the focus and is empty: "2" picks, and is not typed.
    assert composer_is_focused(page)
    page.keyboard.press("2")
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text(["Tuesday"])
    expect(page.locator("#composer-input")).to_have_value("")
    # Focus is back in the composer, where the person was.
    expect(pending_card(page).locator(".question-text")).to_contain_text("Which time?")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'composer-input'")

    # With text in the composer, digits are typed as text.
    page.keyboard.type("call 3")
    expect(page.locator("#composer-input")).to_have_value("call 3")
    page.locator("#composer-input").fill("")

    # Picked with the keyboard inside the card: focus moves on to the next question's options.
    pending_card(page).locator(".option").first.focus()
    page.keyboard.press("a")
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text(["Tuesday", "Morning"])
    expect(pending_card(page).locator(".question-text")).to_contain_text("Which room?")
    page.wait_for_function("() => document.activeElement && document.activeElement.closest('.question-pending') !== null")
    page.keyboard.press("b")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Booked.")
    assert [r["answers"] for r in tool_result(fake, "call_time")["answers"]] == [["Morning"], ["Hall"]]


# --- 12. every question of a group, with progress ----------------------------------------------


def test_a_multi_question_card_shows_every_question_with_progress(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(
            question("Which project?", ["Atlas", "Harbor"]),
            question("Which format?", ["PDF", "Slides", "Doc"]),
            question("Who reviews it?", ["Ann", "Bo"]),
            id="call_three",
        ),
        Reply.text("All set."),
    )
    _, page = user_with_page(browser_context, server.url, "threeq")
    send(page, "prepare the report")
    card = page.locator(".question-card.state-pending")
    expect(card.locator(".question-progress")).to_have_text("Question 1 of 3")
    expect(card.locator(".question-pending .question-text")).to_have_text("1. Which project?")
    upcoming = card.locator(".question-upcoming")
    expect(upcoming.locator(".question-text")).to_have_text(["2. Which format?", "3. Who reviews it?"])
    expect(upcoming.nth(0).locator("li")).to_have_text(["2a PDF", "2b Slides", "2c Doc"])
    expect(upcoming.nth(1).locator("li")).to_have_text(["3a Ann", "3b Bo"])
    expect(card.locator(".question-hint")).to_contain_text("“1a 2a”")

    send(page, "2c")
    expect(card.locator(".question-progress")).to_have_text("Question 1 of 3 · 1 answered")
    expect(card.locator(".question-receipt.answered")).to_contain_text("2. Which format?")
    expect(card.locator(".question-upcoming .question-text")).to_have_text(["3. Who reviews it?"])
    send(page, "1b 3a")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("All set.")
    assert [r["answers"] for r in tool_result(fake, "call_three")["answers"]] == [["Harbor"], ["Doc"], ["Ann"]]


# --- 13. a reload with an empty composer resumes the countdown -----------------------------------


def test_a_reload_with_an_empty_composer_resumes_a_paused_countdown(model_server, browser_context):
    server, fake = model_server
    script(fake, ask_user(question("Which format?", ["PDF", "Slides"], timeout_seconds=60), id="call_resume"))
    _, page = user_with_page(browser_context, server.url, "resumer")
    send(page, "export the plan")
    card = pending_card(page)
    expect(card).to_have_attribute("data-paused", "0")

    page.locator("#composer-input").press_sequentially("hmm")
    expect(card).to_have_attribute("data-paused", "1")
    row = PendingQuestion.objects.get(conversation__owner__username="resumer")
    assert row.paused_at is not None

    # The reloaded page's socket does not open (as if it opened only after the broadcast of the
    # running clock): the card must come back from the resume request itself. A socket that
    # opened would be sent the broadcast; refusing it keeps the page on the request.
    page.route_web_socket(re.compile(r"/ws/conversations/"), lambda ws: ws.close(code=1012, reason="not yet"))
    page.reload()  # within the 5 s idle window: the tab that paused it is gone
    # The text comes back as the conversation's draft; a kept draft is not typing.
    expect(page.locator("#composer-input")).to_have_value("hmm")
    expect(pending_card(page)).to_have_attribute("data-paused", "0")
    expect(pending_card(page).locator(".countdown-label")).not_to_have_text("Paused while you type")
    row.refresh_from_db()
    assert row.paused_at is None and row.deadline is not None
    before = bar_width(page)
    page.wait_for_function("w => parseFloat(document.querySelector('.countdown-bar').style.width) < w - 0.5", arg=before, timeout=10_000)


# --- 14. the default is visible; a weak guess is not applied ------------------------------------


def test_the_default_is_marked_and_named_in_the_countdown(guessing_model_server, browser_context):
    server, fake = guessing_model_server
    script(
        fake,
        ask_user(question("Which launch?", ["Atlas", "Harbor"], timeout_seconds=60), id="call_default"),
        guess=[{"index": 1, "confidence": 0.8, "reasoning": "x"}, {"index": 0, "confidence": 0.2, "reasoning": "y"}],
    )
    _, page = user_with_page(browser_context, server.url, "defaulted")
    send(page, "summarise the launch")
    card = pending_card(page)
    default = card.locator(".option.is-default")
    expect(default.locator(".label")).to_have_text("Harbor")
    expect(default.locator(".default-tag")).to_have_text("Default")
    expect(card.locator(".countdown")).to_have_text(re.compile(r"^\s*Default b · Harbor applies in\s+\d+ s\s*$"))


@pytest.mark.parametrize("viewport", [pytest.param({"width": 1280, "height": 800}, id="desktop"), pytest.param(PHONE, id="phone")])
def test_the_countdown_label_is_read_whole_on_a_phone_too(model_server, browser, viewport):
    """Its longest label wraps inside the bar, which grows with it, instead of being cut off."""
    server, fake = model_server
    script(fake, ask_user(question("Which launch?", ["Atlas", "Harbor"], timeout_seconds=60), id="call_nodefault"))
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(10_000)
    try:
        user = get_user_model().objects.create_user(username=f"nodefault{viewport['width']}", password=PASSWORD)
        page = context.new_page()
        log_in(page, server.url, user.username, PASSWORD)
        # Opened directly: the phone layout keeps the conversation list in a drawer.
        page.goto(f"{server.url}/chat/{Conversation.objects.create(owner=user, title='New conversation').pk}/")
        wait_for_socket(page)
        send(page, "summarise the launch")
        countdown = pending_card(page).locator(".countdown")
        expect(countdown).to_contain_text(re.compile(r"^\s*No default — nothing is chosen when time runs out\s+\d+ s\s*$"))
        inside = countdown.evaluate(
            """c => { const l = c.querySelector('.countdown-label').getBoundingClientRect(), b = c.getBoundingClientRect();
                      return l.top >= b.top - 0.5 && l.bottom <= b.bottom + 0.5 && l.right <= b.right + 0.5; }"""
        )
        assert inside, "the countdown's label sticks out of its bar, which cuts it off"
    finally:
        context.close()


def test_a_weak_guess_is_shown_but_never_applied(guessing_model_server, browser_context):
    server, fake = guessing_model_server
    script(
        fake,
        ask_user(question("Which launch?", ["Atlas", "Harbor", "Home"], timeout_seconds=6), id="call_weak"),
        Reply.text("No launch picked, so I summarised nothing."),
        guess=[
            {"index": 2, "confidence": 0.34, "reasoning": "x"},
            {"index": 0, "confidence": 0.33, "reasoning": "y"},
            {"index": 1, "confidence": 0.33, "reasoning": "z"},
        ],
    )
    _, page = user_with_page(browser_context, server.url, "weakguess")
    send(page, "summarise the launch")
    card = pending_card(page)
    expect(card.locator(".options .option[data-key='c'] .confidence")).to_have_text("34%")
    expect(card.locator(".option.is-default")).to_have_count(0)
    expect(card.locator(".countdown-label")).to_have_text("No default — nothing is chosen when time runs out")
    receipt = page.locator(".question-receipt.timed-out")
    expect(receipt).to_contain_text("Timed out — no answer", timeout=20_000)
    # The continuation's model call follows the receipt; its reply shows once the model has the result.
    expect(page.locator(".message-assistant").last).to_contain_text("No launch picked", timeout=20_000)
    row = tool_result(fake, "call_weak")["answers"][0]
    assert (row["status"], row["default_applied"], row["answers"]) == ("timed_out", False, [])


# --- 15. the confirmation card -------------------------------------------------------------------


def test_a_confirmation_counts_lists_and_cancels_with_a_clear_receipt(live_url, browser_context):
    user, page = user_with_page(browser_context, live_url, "confirm16")
    Task.objects.bulk_create(Task(owner=user, title=f"Old chore {n:02d}", status="completed") for n in range(1, 17))
    send(page, "delete all my completed tasks")
    confirm = page.locator(".question-confirm")
    expect(confirm.locator(".operations-count")).to_contain_text("16 changes")
    shown = confirm.locator(".operations > .operation-list li")
    expect(shown).to_have_count(10)
    more = confirm.locator(".operations-more")
    expect(more.locator("summary")).to_have_text("6 more")
    expect(more.locator("li").first).to_be_hidden()
    more.locator("summary").click()
    expect(more.locator("li")).to_have_count(6)
    expect(more.locator("li").first).to_be_visible()
    for n in range(1, 17):
        expect(confirm.locator(".operation-list li", has_text=f"Old chore {n:02d}")).to_have_count(1)
    # The summary is said once.
    summary = confirm.locator(".question-text").inner_text().split(" — ")[0]
    assert confirm.inner_text().count(summary) == 1, confirm.inner_text()
    expect(confirm.locator(".option.apply small")).to_have_text("Make all 16 changes listed above")

    # Keyboard only: "b" is Cancel.
    confirm.locator(".question-text").click()
    page.keyboard.press("b")
    expect(confirm.locator(".question-receipt")).to_have_text("Cancelled — nothing changed")
    expect(confirm.locator(".receipt-mark")).to_have_count(0)
    assert "✓" not in confirm.inner_text()
    assert Task.objects.filter(owner=user).count() == 16


def test_a_single_change_is_singular_and_applies_from_the_keyboard(live_url, browser_context):
    user, page = user_with_page(browser_context, live_url, "confirm1")
    Task.objects.create(owner=user, title="Only chore", status="completed")
    send(page, "delete all my completed tasks")
    confirm = page.locator(".question-confirm")
    expect(confirm.locator(".operations-count")).to_contain_text("1 change —")
    expect(confirm.locator(".option.apply small")).to_have_text("Make 1 change listed above")
    expect(confirm.locator(".operations-more")).to_have_count(0)
    confirm.locator(".question-text").click()
    page.keyboard.press("a")
    expect(confirm.locator(".question-receipt.answered")).to_have_text(re.compile(r"Applied — 1 change confirmed"))
    expect(page.locator(".message-assistant .markdown").last).to_contain_text("Done", timeout=15_000)
    assert Task.objects.filter(owner=user).count() == 0


def test_on_a_phone_a_confirmation_after_tool_activity_fits_and_its_apply_option_reads(live_url, browser):
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(15_000)
    try:
        user = get_user_model().objects.create_user(username="confirmphone", password=PASSWORD)
        seed_demo_workspace(user=user)
        page = context.new_page()
        log_in(page, live_url, user.username, PASSWORD)
        page.goto(f"{live_url}/chat/{Conversation.objects.create(owner=user, title='New conversation').pk}/")
        wait_for_socket(page)
        send(page, "what is in progress?")  # a reply with its tool activity (a long call line)
        expect(page.locator(".tool-activity").first).to_be_visible()
        send(page, "delete all my completed tasks")
        expect(page.locator(".question-confirm .option.apply .label")).to_have_text("Apply")
        page.reload()  # the thread as the page renders it
        wait_for_socket(page)
        apply = page.locator(".question-confirm .option.apply")
        expect(apply.locator(".label")).to_have_text("Apply")

        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways scrolling
        label, background = apply.evaluate(
            "el => [getComputedStyle(el.querySelector('.label')).color, getComputedStyle(el).backgroundColor]"
        )
        assert label != background, (label, background)
    finally:
        context.close()
