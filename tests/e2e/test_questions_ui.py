"""Questions instead of guesses (issue 4), end to end: a real Daphne, a real headless Chromium.

Scripted-model tests run on a second Daphne wired to tests/fake_openai.py (the `start_server`
and `fake_model` fixtures of conftest.py); the offline-engine tests ("clean up my tasks", "delete
all my tasks") run on the default test server, or one with a changed rate limit.

    E2E_SCREENSHOTS=1 pytest tests/e2e/test_questions_ui.py -k digit   # refreshes docs/screenshot-question.png
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import re
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from questions.models import PendingQuestion
from tests.e2e.conftest import log_in, start_conversation, wait_for_socket
from tests.fake_openai import Reply
from workspace.demo_content import seed_demo_workspace
from workspace.models import Project, Task

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot-question.png"

# One configuration for every scripted-model test: no clarification, detector or rate limit in
# the way; the guesser only where a test scripts its ranking (it is a second model call).
MODEL_ENV = {"CLARIFICATION_ENABLED": "false", "QUESTION_DETECTOR_ENABLED": "false", "QUESTIONS_MIN_INTERVAL_SECONDS": "0"}


# --- the scripted model ------------------------------------------------------------------------


def question(text: str, labels: list[str], *, descriptions: list[str] | None = None, **extra) -> dict:
    descriptions = descriptions or [f"About {label}" for label in labels]
    options = [{"label": label, "description": description} for label, description in zip(labels, descriptions, strict=True)]
    return {"question": text, "options": options, **extra}


def ask_user(*questions: dict, id: str = "call_ask") -> Reply:
    return Reply.tool_call("ask_user", {"questions": list(questions)}, id=id)


def script(fake, *chat: Reply, guess: list[dict] | None = None) -> None:
    """Chat turns are served in order; the guesser's structured call (it has a response_format)
    gets `guess` as its ranking — whenever it comes, so its timing can't shift the script."""
    queue = collections.deque(chat)

    def reply(body: dict) -> Reply:
        if "response_format" in body:
            return Reply.json({"ranking": guess}) if guess is not None else Reply.error(500, "no ranking scripted")
        return queue.popleft() if queue else Reply.error(500, "FakeOpenAI: the chat script is empty")

    fake.default = reply


def chat_requests(fake) -> list[dict]:
    return [body for body in fake.requests if "response_format" not in body]


def tool_result(fake, tool_call_id: str) -> dict:
    """The tool result the model received (in its latest chat request) for that call."""
    for message in chat_requests(fake)[-1]["messages"]:
        if message.get("role") == "tool" and message.get("tool_call_id") == tool_call_id:
            return json.loads(message["content"])
    raise AssertionError(f"the model's last request has no tool result for {tool_call_id}")


# --- the browser -------------------------------------------------------------------------------


def user_with_page(browser_context, base_url: str, username: str):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    page = browser_context.new_page()
    log_in(page, base_url, username, PASSWORD)
    start_conversation(page, base_url)
    return user, page


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def pending_card(page):
    return page.locator(".question-pending")


def bar_width(page) -> float:
    """The countdown bar's width in percent, once the page's clock has drawn it."""
    drawn = "() => { const w = parseFloat(document.querySelector('.countdown-bar')?.style.width); return isNaN(w) ? null : [w]; }"
    return page.wait_for_function(drawn).json_value()[0]


@pytest.fixture
def model_server(start_server, fake_model):
    return start_server(model=fake_model, QUESTION_GUESSER_ENABLED="false", **MODEL_ENV), fake_model


@pytest.fixture
def guessing_model_server(start_server, fake_model):
    return start_server(model=fake_model, QUESTION_GUESSER_ENABLED="true", **MODEL_ENV), fake_model


# --- 1. clicking an option -----------------------------------------------------------------------


def test_clicking_an_option_answers_in_every_tab_and_continues(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which project should I plan first?", ["Atlas", "Harbor", "Home"], header="Project"), id="call_pick"),
        Reply.text("Planning **Atlas** first."),
    )
    _, page = user_with_page(browser_context, server.url, "opal")
    send(page, "plan my week")

    card = pending_card(page)
    expect(card.locator(".question-text")).to_have_text("Which project should I plan first?")
    expect(card.locator(".chip")).to_have_text("Project")
    expect(card.locator(".options .option")).to_have_count(3)

    other = browser_context.new_page()
    other.goto(page.url)
    wait_for_socket(other)
    expect(pending_card(other).locator(".question-text")).to_have_text("Which project should I plan first?")

    card.locator(".option", has_text="Atlas").click()

    for tab in (page, other):
        receipt = tab.locator(".question-receipt.answered")
        expect(receipt.locator(".receipt-answer")).to_have_text("Atlas")
        expect(receipt).to_contain_text("Project: Which project should I plan first?")
        expect(pending_card(tab)).to_have_count(0)
        expect(tab.locator(".message-assistant .markdown strong")).to_have_text("Atlas")

    (row,) = tool_result(fake, "call_pick")["answers"]
    assert row == {
        "question": "Which project should I plan first?", "status": "answered", "answers": ["Atlas"],
        "is_custom": False, "selected_indexes": [0],
    }  # fmt: skip


def answer_posts(page) -> list[str]:
    """Every answer the page sends as an HTTP request, as it sends it."""
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.method) if "/answer/" in request.url else None)
    return posts


def test_an_answer_goes_over_the_open_socket_and_a_refused_one_says_why_on_its_card(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which project should I plan first?", ["Atlas", "Harbor", "Home"]), id="call_socket"),
        Reply.text("Planning **Harbor** first."),
    )
    _, page = user_with_page(browser_context, server.url, "sock")
    posts = answer_posts(page)
    send(page, "plan my week")
    card = pending_card(page)

    # An empty typed answer is refused, on the card where it was sent; nothing was written.
    card.locator(".custom-answer button").click()
    expect(pending_card(page).locator(".question-error")).to_have_text("Type an answer first.")
    assert PendingQuestion.objects.get(tool_call_id="call_socket").status == "pending"

    pending_card(page).locator(".option", has_text="Harbor").click()
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("Harbor")
    expect(page.locator(".message-assistant .markdown strong")).to_have_text("Harbor")
    assert posts == []  # the socket carried both answers
    assert tool_result(fake, "call_socket")["answers"][0]["selected_indexes"] == [1]


def test_an_answer_whose_socket_closes_before_it_lands_is_posted_instead(model_server, browser_context):
    """The socket goes down just as the answer is sent on it (the frame is lost with it): the page
    posts the answer, and the card shows its receipt."""
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which project should I plan first?", ["Atlas", "Harbor", "Home"]), id="call_lost"),
        Reply.text("Planning **Home** first."),
    )
    dropped: list[str] = []

    def cut_on_answer(ws) -> None:
        upstream = ws.connect_to_server()

        def from_page(message) -> None:
            if isinstance(message, str) and '"action":"answer"' in message and not dropped:
                dropped.append(message)
                ws.close(code=1012, reason="cut")
            else:
                upstream.send(message)

        ws.on_message(from_page)
        upstream.on_message(lambda message: ws.send(message))

    browser_context.route_web_socket(re.compile(r"/ws/"), cut_on_answer)
    _, page = user_with_page(browser_context, server.url, "lost")
    posts = answer_posts(page)
    send(page, "plan my week")
    pending_card(page).locator(".option", has_text="Home").click()

    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("Home")
    assert len(dropped) == 1 and json.loads(dropped[0]) == {"action": "answer", "question_id": str(
        PendingQuestion.objects.get(tool_call_id="call_lost").pk), "option": 2}  # fmt: skip
    assert posts == ["POST"]
    question_row = PendingQuestion.objects.get(tool_call_id="call_lost")
    assert (question_row.status, question_row.selected_indexes) == ("answered", [2])
    wait_for_socket(page)  # back, and the reply that was saved meanwhile shows after a reload
    page.reload()
    expect(page.locator(".message-assistant .markdown strong")).to_have_text("Home")


# --- 2. custom answers ---------------------------------------------------------------------------


def test_custom_answer_in_the_card_and_in_the_chat_box(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(
            question("What should the trip be called?", ["Coast weekend", "Mountain escape"], placeholder="Name the trip…"), id="call_name"
        ),
        ask_user(question("Where should it start?", ["Home", "The office"]), id="call_where"),
        Reply.text("Booked: *Lighthouse loop* from the station."),
    )
    _, page = user_with_page(browser_context, server.url, "pia")
    send(page, "plan a trip")

    custom = pending_card(page).locator(".custom-answer input")
    expect(custom).to_have_attribute("placeholder", "Name the trip…")
    # Typing pauses the clock, and the card is re-rendered for that mid-word: nothing typed is lost.
    custom.press_sequentially("Lighthouse loop", delay=40)
    expect(pending_card(page)).to_have_attribute("data-paused", "1")
    expect(custom).to_have_value("Lighthouse loop")
    custom.press("Enter")

    first = page.locator(".question-receipt.answered").first
    expect(first.locator(".receipt-answer")).to_have_text("Lighthouse loop")
    expect(first).to_contain_text("(typed)")

    # The model asks again; this time the answer is typed in the chat box.
    expect(pending_card(page).locator(".question-text")).to_have_text("Where should it start?")
    row = tool_result(fake, "call_name")["answers"][0]
    assert (row["status"], row["answers"], row["is_custom"], row["selected_indexes"]) == ("answered", ["Lighthouse loop"], True, [])
    send(page, "from the station")

    second = page.locator(".question-receipt.answered").nth(1)
    expect(second.locator(".receipt-answer")).to_have_text("from the station")
    expect(page.locator(".message-assistant .markdown em")).to_have_text("Lighthouse loop")
    expect(page.locator("#composer-input")).to_have_value("")
    # It answered the question: no new chat message, and the model saw only the first request.
    expect(page.locator(".message-user")).to_have_count(1)
    assert tool_result(fake, "call_where")["answers"][0]["answers"] == ["from the station"]
    assert tool_result(fake, "call_where")["answers"][0]["is_custom"] is True
    users = [m["content"] for m in chat_requests(fake)[-1]["messages"] if m["role"] == "user"]
    assert users == ["plan a trip"]


# --- 2b. renders of a card that reach a tab late or while someone types ---------------------------

# Keeps the page's websockets at hand, so a test can deliver a frame exactly as the server's would.
RECORD_SOCKETS = """
window.__sockets = [];
window.WebSocket = class extends window.WebSocket {
  constructor(...args) { super(...args); window.__sockets.push(this); }
};
"""


def deliver_frame(page, html: str) -> None:
    """A frame from the server, through the ws extension's own message handler."""
    page.evaluate(
        "html => window.__sockets.filter(s => s.readyState === 1).pop().dispatchEvent(new MessageEvent('message', {data: html}))", html
    )


def card_render(card) -> str:
    """The card as the server renders it for the socket (an out-of-band swap of the whole card)."""
    return card.evaluate("el => { const c = el.cloneNode(true); c.setAttribute('hx-swap-oob', 'true'); return c.outerHTML; }")


def test_an_answer_sent_as_its_card_is_drawn_again_is_not_lost(model_server, browser_context):
    """A card can be drawn twice in a row (one change, from an HTTP response and then from the
    socket), and Enter can land on a form drawn a moment before, which htmx has not bound yet: the
    answer goes to the form that took its place, with what was typed."""
    server, fake = model_server
    script(fake, ask_user(question("What should the trip be called?", ["Coast", "Mountain"]), id="call_redrawn"), Reply.text("Booked."))
    _, page = user_with_page(browser_context, server.url, "redrawn")
    send(page, "plan a trip")
    expect(pending_card(page).locator(".custom-answer input")).to_be_visible()
    # Drawn again outside htmx (a form it has not bound), then once more, bound, while Enter's
    # submit fires; the typed text carried over as the page carries it across a render.
    page.evaluate(
        """() => {
        const card = () => document.querySelector('.question-card');
        card().outerHTML = card().outerHTML;
        document.addEventListener('submit', () => {
            const typed = card().querySelector('.custom-answer input').value;
            card().outerHTML = card().outerHTML;
            card().querySelector('.custom-answer input').value = typed;
            htmx.process(card());
        }, {capture: true, once: true});
    }"""
    )
    field = pending_card(page).locator(".custom-answer input")
    field.fill("Lighthouse loop")
    field.press("Enter")
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("Lighthouse loop")
    expect(page.locator(".message-assistant .markdown").last).to_have_text("Booked.")
    assert tool_result(fake, "call_redrawn")["answers"][0]["answers"] == ["Lighthouse loop"]


def test_a_late_render_neither_undoes_an_answer_nor_takes_the_focus_from_the_answer_field(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(
            question("Which project?", ["Atlas", "Harbor"]), question("What should it be called?", ["Draft", "Final"]), id="call_late"
        ),
        Reply.text("Report started."),
    )
    browser_context.add_init_script(RECORD_SOCKETS)
    _, page = user_with_page(browser_context, server.url, "lena")
    send(page, "start a report")
    card = page.locator(".question-card")
    expect(pending_card(page).locator(".question-text")).to_contain_text("Which project?")
    as_first_shown = card_render(card)

    # The first answer lands; then the card as it was before it (say the guesser's hints, rendered
    # just before the answer) arrives late. It is older than what the tab shows, so it is dropped.
    pending_card(page).locator(".option").first.click()
    expect(card.locator(".question-receipt.answered .receipt-answer")).to_have_text(["Atlas"])
    deliver_frame(page, as_first_shown)
    expect(card.locator(".question-receipt.answered .receipt-answer")).to_have_text(["Atlas"])
    expect(pending_card(page).locator(".question-text")).to_contain_text("What should it be called?")

    # The person is in the empty answer field when the card is re-rendered: the field keeps the
    # focus, so what they type next is their answer — "A" does not pick option a.
    field = pending_card(page).locator(".custom-answer input")
    field.focus()
    deliver_frame(page, card_render(card))
    page.keyboard.type("Annual review")
    expect(pending_card(page).locator(".custom-answer input")).to_have_value("Annual review")
    expect(card.locator(".question-receipt.answered")).to_have_count(1)
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Report started.")
    assert [r["answers"] for r in tool_result(fake, "call_late")["answers"]] == [["Atlas"], ["Annual review"]]


def test_a_card_that_comes_back_over_http_keeps_what_is_being_typed_in_it(model_server, browser_context):
    """A card whose clock starts once it is on screen comes back as the response of that start,
    and the person may be typing in its answer field by then: the field keeps their text and the
    focus (htmx gives the new field the focus before the page puts the text back)."""
    server, fake = model_server
    script(fake, ask_user(question("What should it be called?", ["Draft", "Final"]), id="call_http"), Reply.text("Named."))
    _, page = user_with_page(browser_context, server.url, "hugo")
    send(page, "start a report")
    card = page.locator(".question-card")
    field = pending_card(page).locator(".custom-answer input")
    field.focus()
    # The clock's start goes out before the first key; its response, the card as rendered then,
    # arrives after the person has typed a word.
    rendered = card.evaluate("el => el.outerHTML")
    held: list = []
    page.route("**/resume/", lambda route: held.append(route))
    page.evaluate(
        """() => {
            const el = document.querySelector(".question-pending");
            htmx.ajax("POST", el.dataset.resumeUrl, { source: el, target: "#" + el.closest(".question-card").id, swap: "outerHTML" });
        }"""
    )
    for _ in range(250):
        if held:
            break
        page.wait_for_timeout(20)
    page.keyboard.type("Annual")
    page.evaluate("() => { window.__before = document.querySelector('.question-card .custom-answer input'); }")
    held[0].fulfill(status=200, content_type="text/html", body=rendered)
    page.wait_for_function("() => !window.__before.isConnected")
    expect(field).to_have_value("Annual")
    expect(field).to_be_focused()
    page.keyboard.type(" review")
    page.keyboard.press("Enter")
    expect(card.locator(".question-receipt.answered .receipt-answer")).to_have_text("Annual review")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Named.")
    assert tool_result(fake, "call_http")["answers"][0]["answers"] == ["Annual review"]


# --- 3. multi-select -------------------------------------------------------------------------------


def test_multi_select_sends_every_checked_label(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which projects go in the report?", ["Atlas", "Harbor", "Home"], multi_select=True), id="call_multi"),
        Reply.text("Report covers Atlas and Home."),
    )
    _, page = user_with_page(browser_context, server.url, "quinn")
    send(page, "write the weekly report")

    card = pending_card(page)
    card.locator(".option-check", has_text="Atlas").locator("input[type=checkbox]").check()
    card.locator(".option-check", has_text="Home").locator("input[type=checkbox]").check()
    card.get_by_role("button", name="Confirm selection").click()

    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("Atlas, Home")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Report covers Atlas and Home.")
    row = tool_result(fake, "call_multi")["answers"][0]
    assert (row["answers"], row["selected_indexes"], row["is_custom"]) == (["Atlas", "Home"], [0, 2], False)


def test_ticked_options_survive_the_card_being_drawn_again(model_server, browser_context):
    """Typing in the chat box pauses the card's clock, and every tab gets the card again: the
    boxes ticked before that are still ticked, and they are what the answer sends."""
    server, fake = model_server
    script(
        fake,
        ask_user(
            question("Which projects go in the report?", ["Atlas", "Harbor", "Home"], multi_select=True, timeout_seconds=60),
            id="call_ticks",
        ),
        Reply.text("Report covers Atlas and Home."),
    )
    _, page = user_with_page(browser_context, server.url, "tess")
    send(page, "write the weekly report")
    card = pending_card(page)
    expect(card).to_have_attribute("data-paused", "0")
    box = {label: card.locator(".option-check", has_text=label).locator("input[type=checkbox]") for label in ("Atlas", "Harbor", "Home")}
    box["Atlas"].check()
    box["Home"].check()

    page.locator("#composer-input").press_sequentially("hmm")
    expect(card).to_have_attribute("data-paused", "1")  # the server's card, swapped in
    expect(box["Atlas"]).to_be_checked()
    expect(box["Harbor"]).not_to_be_checked()
    expect(box["Home"]).to_be_checked()

    card.get_by_role("button", name="Confirm selection").click()
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("Atlas, Home")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Report covers Atlas and Home.")
    assert tool_result(fake, "call_ticks")["answers"][0]["selected_indexes"] == [0, 2]


# --- 4. "1a 2b" in the chat box (offline clarification) ---------------------------------------------


def test_shorthand_in_the_chat_box_answers_the_offline_clarification(live_url, browser_context):
    user, page = user_with_page(browser_context, live_url, "rosa")
    seed_demo_workspace(user=user)
    send(page, "clean up my tasks")

    card = page.locator(".question-clarify")
    expect(card.locator(".question-progress")).to_have_text("Question 1 of 2")
    expect(card.locator(".question-pending .question-text")).to_have_text("1. What kind of cleanup?")
    expect(card.locator(".question-hint")).to_contain_text("“1a 2a”")

    # A question number that doesn't exist: a clear error under the composer, the text kept.
    send(page, "3a")
    expect(page.locator("#composer-error")).to_have_text("There is no question 3.")
    expect(page.locator("#composer-input")).to_have_value("3a")
    expect(card.locator(".question-pending")).to_have_count(1)

    send(page, "1a 2b")
    clarified = page.locator(".message-derived")
    expect(clarified.locator(".message-meta")).to_contain_text("Clarified request")
    expect(clarified.locator(".message-body")).to_have_text("delete all my completed tasks in Atlas")
    expect(page.locator("#composer-error")).to_have_text("")
    expect(page.locator("#composer-input")).to_have_value("")
    expect(card.locator(".question-receipt.answered .receipt-answer")).to_have_text(["Delete completed tasks", "Atlas"])
    # "3a" and "1a 2b" were answers, not messages.
    expect(page.locator(".message-user:not(.message-derived)")).to_have_count(1)


# Regression (fixed): questions.services._check_limits counts the just-answered clarification as a
# recent ask, so the confirmation proposed within 5 s of it is rejected as a tool error ('A
# question was asked in this conversation less than 5 s ago') and the offline engine replies 'I
# couldn't look that up'


@pytest.mark.parametrize(
    "min_interval",
    [
        pytest.param("5", id="default-rate-limit"),
        pytest.param("0", id="no-rate-limit"),
    ],
)
def test_answered_clarification_leads_to_a_confirmation_card(start_server, browser_context, min_interval):
    server = start_server(QUESTIONS_MIN_INTERVAL_SECONDS=min_interval)
    user, page = user_with_page(browser_context, server.url, f"rosa{min_interval}")
    seed_demo_workspace(user=user)
    atlas = Project.objects.get(owner=user, name="Atlas")
    completed = list(Task.objects.filter(owner=user, project=atlas, status="completed").values_list("title", flat=True))
    send(page, "clean up my tasks")
    expect(page.locator(".question-clarify .question-pending .question-text")).to_have_text("1. What kind of cleanup?")
    send(page, "1a 2b")  # at once, as a person who knows what they want would

    # Whatever comes first after the clarified request: the confirmation, or a reply instead of it.
    page.locator(".question-confirm, .message-assistant .markdown").first.wait_for()
    confirm = page.locator(".question-confirm")
    expect(confirm.locator(".operation-list li")).to_have_count(len(completed), timeout=1_000)
    expect(confirm.locator(".question-text")).to_contain_text(f"Delete {len(completed)} completed tasks in Atlas")
    for title in completed:
        expect(confirm.locator(".operation-list li", has_text=title)).to_have_count(1)
    expect(confirm.locator(".option.apply.danger")).to_be_visible()


# --- 5. countdown auto-submit ------------------------------------------------------------------------


def test_countdown_flashes_the_default_and_submits_it(guessing_model_server, browser_context):
    server, fake = guessing_model_server
    script(
        fake,
        ask_user(question("Which launch should I summarise?", ["Atlas", "Harbor"], timeout_seconds=5), id="call_timed"),
        Reply.text("Here is the Harbor summary."),
        guess=[
            {"index": 1, "confidence": 0.8, "reasoning": "Harbor was discussed last."},
            {"index": 0, "confidence": 0.2, "reasoning": "Less recent."},
        ],
    )
    _, page = user_with_page(browser_context, server.url, "sven")
    send(page, "summarise the launch")

    card = pending_card(page)
    # The guess swaps in: the most likely option, with its confidence, marked as the default.
    default = card.locator(".option.is-default")
    expect(default.locator(".label")).to_have_text("Harbor")
    expect(default.locator(".confidence")).to_have_text("80%")
    expect(card.locator(".options .option").nth(1)).to_have_class(re.compile(r"\bis-default\b"))
    # Record when the flash starts and when the receipt replaces the card.
    page.evaluate(
        """() => {
          window.__flash = null; window.__receipt = null;
          new MutationObserver(() => {
            const now = performance.now();
            if (window.__flash === null && document.querySelector('.option.is-default.flash')) window.__flash = now;
            if (window.__receipt === null && document.querySelector('.question-receipt.timed-out')) window.__receipt = now;
          }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['class']});
        }"""
    )
    start = bar_width(page)
    page.wait_for_function("w => parseFloat(document.querySelector('.countdown-bar').style.width) < w - 10", arg=start)

    receipt = page.locator(".question-receipt.timed-out")
    expect(receipt.locator(".receipt-answer")).to_have_text("Harbor", timeout=10_000)
    expect(receipt).to_contain_text("No answer — default applied: Harbor")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Here is the Harbor summary.")
    flash, shown = page.evaluate("[window.__flash, window.__receipt]")
    assert flash is not None, "the default option never flashed"
    assert shown - flash >= 350, f"the flash was cut short after {shown - flash:.0f} ms (500 ms expected)"

    row = tool_result(fake, "call_timed")["answers"][0]
    assert (row["status"], row["answers"], row["default_applied"]) == ("timed_out", ["Harbor"], True)


# --- 6. pause while typing -----------------------------------------------------------------------------


def clock_requests(page) -> list[str]:
    """Every pause, resume or expiry the page sends as an HTTP request."""
    sent: list[str] = []
    page.on(
        "request", lambda request: sent.append(request.url.split("/")[-2]) if re.search(r"/(pause|resume|expire)/$", request.url) else None
    )
    return sent


def frames_from_the_page(context) -> list[dict]:
    """Every frame the context's pages send on their sockets, in order (passed on unchanged)."""
    frames: list[dict] = []

    def record(ws) -> None:
        upstream = ws.connect_to_server()

        def from_page(message) -> None:
            frames.append(json.loads(message))
            upstream.send(message)

        ws.on_message(from_page)
        upstream.on_message(lambda message: ws.send(message))

    context.route_web_socket(re.compile(r"/ws/"), record)
    return frames


def card_with_a_running_clock(browser_context, server_url: str, username: str):
    """A new user's page, its clock requests recorded, with the card "tidy my lists" asks for shown
    and its clock running: (page, clock requests, the card, its question's row)."""
    _, page = user_with_page(browser_context, server_url, username)
    requests = clock_requests(page)
    send(page, "tidy my lists")
    card = pending_card(page)
    expect(card).to_have_attribute("data-paused", "0")
    return page, requests, card, PendingQuestion.objects.get(conversation__owner__username=username)


def test_typing_pauses_the_countdown_and_idling_resumes_it(model_server, browser_context):
    """The pause and the resume go over the page's open socket, not as requests of their own."""
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which list should I tidy?", ["Today", "This week"], timeout_seconds=6), id="call_pause"),
        Reply.text("Nothing was picked, so I left both lists alone."),
    )
    frames = frames_from_the_page(browser_context)
    page, requests, card, question_row = card_with_a_running_clock(browser_context, server.url, "tara")
    asked_deadline = question_row.deadline

    page.locator("#composer-input").press_sequentially("hmm, maybe")
    typed_at = time.monotonic()
    expect(card).to_have_attribute("data-paused", "1")
    expect(card.locator(".countdown.paused .countdown-label")).to_have_text("Paused while you type")
    question_row.refresh_from_db()
    assert question_row.paused_at is not None and question_row.deadline > asked_deadline + dt.timedelta(seconds=30)
    stopped = bar_width(page)
    page.wait_for_timeout(1_000)  # the behaviour under test is that time passes and the bar doesn't move
    assert bar_width(page) == stopped

    # 5 s without typing: the clock runs again from where it stopped, and then times out.
    expect(card).to_have_attribute("data-paused", "0", timeout=15_000)
    assert time.monotonic() - typed_at >= 4.5
    page.wait_for_function("w => parseFloat(document.querySelector('.countdown-bar').style.width) < w - 5", arg=stopped)
    receipt = page.locator(".question-receipt.timed-out")
    expect(receipt).to_contain_text("Timed out — no answer", timeout=10_000)
    question_row.refresh_from_db()
    assert question_row.status == "timed_out" and question_row.resolved_at > asked_deadline + dt.timedelta(seconds=4)
    expect(page.locator(".message-assistant .markdown")).to_contain_text("left both lists alone")
    row = tool_result(fake, "call_pause")["answers"][0]
    assert (row["status"], row["default_applied"]) == ("timed_out", False)
    clock = [(f["action"], f["question_id"]) for f in frames if f.get("action") in ("pause", "resume")]
    assert clock == [("pause", str(question_row.pk)), ("resume", str(question_row.pk))]
    assert requests == []


def press(page, target, pointer: str):
    """Press `target` with a mouse button or a finger and hold it there; returns the release."""
    at = target.bounding_box()
    x, y = at["x"] + at["width"] / 2, at["y"] + at["height"] / 2
    if pointer == "mouse":
        page.mouse.move(x, y)
        page.mouse.down()
        return page.mouse.up
    touch = page.context.new_cdp_session(page)
    touch.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    return lambda: touch.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


@pytest.mark.parametrize("pointer", ["mouse", "touch"])
def test_a_press_on_an_option_as_its_card_is_drawn_again_still_answers_once(model_server, browser, pointer):
    """The card is swapped for a new one between the press and the release (another tab pauses
    its clock): the release still answers, once, with the option that was pressed."""
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which list should I tidy?", ["Today", "This week"], timeout_seconds=60), id="call_press"),
        Reply.text("Tidied this week's list."),
    )
    context = browser.new_context(viewport={"width": 1280, "height": 860}, has_touch=pointer == "touch")
    context.set_default_timeout(10_000)
    try:
        frames = frames_from_the_page(context)
        page, _, card, _ = card_with_a_running_clock(context, server.url, f"uma-{pointer}")
        release = press(page, card.get_by_role("button", name=re.compile("This week")), pointer)
        csrf = next(cookie["value"] for cookie in context.cookies() if cookie["name"] == "csrftoken")
        paused = page.request.post(server.url + card.get_attribute("data-pause-url"), headers={"X-CSRFToken": csrf})
        assert paused.status == 204, paused.text()
        expect(card).to_have_attribute("data-paused", "1")  # the server's new card has replaced the pressed one
        release()

        expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("This week")
        expect(page.locator(".message-assistant .markdown")).to_contain_text("Tidied this week's list.")
        assert tool_result(fake, "call_press")["answers"][0]["answers"] == ["This week"]
        page.wait_for_timeout(500)  # a second answer, if one went, has gone by now
        assert [f["option"] for f in frames if f.get("action") == "answer"] == [1]
    finally:
        context.close()


def test_with_the_socket_down_typing_pauses_the_countdown_by_request(model_server, browser_context):
    """The socket drops and stays down: the pause that typing starts goes as the card's request,
    and the server's clock stops all the same."""
    server, fake = model_server
    script(fake, ask_user(question("Which list should I tidy?", ["Today", "This week"], timeout_seconds=60), id="call_down"))
    sockets: list = []
    browser_context.route_web_socket(re.compile(r"/ws/"), lambda ws: (sockets.append(ws), ws.connect_to_server()))
    page, requests, _, question_row = card_with_a_running_clock(browser_context, server.url, "tom")
    assert question_row.paused_at is None

    # From now on every socket is refused as it opens; the open one is cut.
    browser_context.route_web_socket(re.compile(r"/ws/"), lambda ws: ws.close(code=1012, reason="down"))
    sockets[-1].close(code=1012, reason="down")
    page.wait_for_function("() => document.body.dataset.ws === 'closed'")
    with page.expect_response(re.compile(r"/pause/$")) as paused:
        page.locator("#composer-input").press_sequentially("hmm")
    assert paused.value.status == 204
    question_row.refresh_from_db()
    assert question_row.paused_at is not None
    assert requests == ["pause"]


# --- 7. a reload keeps the deadline ---------------------------------------------------------------------


def test_reload_shows_the_remaining_time_not_a_fresh_countdown(model_server, browser_context):
    server, fake = model_server
    script(fake, ask_user(question("Which format?", ["PDF", "Slides"], timeout_seconds=60), id="call_reload"))
    _, page = user_with_page(browser_context, server.url, "uma")
    sent_at = time.monotonic()  # the first render comes after this
    send(page, "export the plan")

    card = pending_card(page)
    expect(card).to_have_attribute("data-remaining", re.compile(r"^\d+\.\d+$"))
    before = float(card.get_attribute("data-remaining"))
    assert 55 < before <= 60
    page.wait_for_timeout(2_000)  # the behaviour under test is the passing of time
    page.reload()
    reloaded_by = time.monotonic()  # the second render, at least 2 s after the first, comes before this
    wait_for_socket(page)
    after = float(pending_card(page).get_attribute("data-remaining"))
    # The deadline is stored: the remaining time went down by the time between the two renders.
    assert 2.0 - 0.05 <= before - after <= reloaded_by - sent_at + 0.05, (before, after, reloaded_by - sent_at)
    expect(page.locator(".countdown-time")).to_have_text(re.compile(r"^(5\d|4\d) s$"))


# --- 8. confirming "delete all my tasks" (offline engine) ------------------------------------------------


def test_confirming_delete_all_my_tasks_deletes_exactly_those_fifty(live_url, browser_context):
    user, page = user_with_page(browser_context, live_url, "vera")
    Task.objects.bulk_create(Task(owner=user, title=f"Chore number {n:02d}") for n in range(1, 51))
    bystander = get_user_model().objects.create_user(username="walt", password=PASSWORD)
    Task.objects.create(owner=bystander, title="Walt's own task")
    send(page, "delete all my tasks")

    confirm = page.locator(".question-confirm")
    expect(confirm.locator(".operation-list li")).to_have_count(50, timeout=15_000)
    expect(confirm.locator(".operations-count")).to_contain_text("50 changes")
    expect(confirm.locator(".operations-more summary")).to_have_text("40 more")
    expect(confirm.locator(".question-text")).to_have_text("Delete 50 tasks — apply 50 changes?")
    for n in (1, 25, 50):
        expect(confirm.locator(".operation-list li", has_text=f"Chore number {n:02d}")).to_have_count(1)
    # A destructive confirmation never defaults to yes.
    expect(confirm.locator(".option.apply.danger")).not_to_have_class(re.compile(r"\bis-default\b"))
    assert Task.objects.filter(owner=user).count() == 50

    confirm.locator(".option.apply").click()
    expect(page.locator(".message-assistant .markdown").last).to_have_text("Done — deleted 50 tasks.", timeout=15_000)
    expect(confirm.locator(".question-receipt.answered .receipt-answer")).to_have_text("Applied — 50 changes confirmed")
    assert Task.objects.filter(owner=user).count() == 0
    assert list(Task.objects.filter(owner=bystander).values_list("title", flat=True)) == ["Walt's own task"]


# --- 9. keyboard -------------------------------------------------------------------------------------------


def test_pressing_a_digit_picks_the_option_shown_in_that_place(guessing_model_server, browser_context):
    server, fake = guessing_model_server
    script(
        fake,
        ask_user(
            question(
                "How detailed should the launch summary be?",
                ["One line", "A paragraph", "A full page"],
                header="Detail",
                descriptions=["Just the headline", "What shipped and what's next", "Every workstream, with owners and dates"],
                placeholder="Or describe the length you want…",
                timeout_seconds=120,
            ),
            id="call_keys",
        ),  # fmt: skip
        Reply.text("A full page it is."),
        guess=[
            {"index": 1, "confidence": 0.55, "reasoning": "You asked for paragraphs last time."},
            {"index": 2, "confidence": 0.3, "reasoning": "Big launches get a full page."},
            {"index": 0, "confidence": 0.15, "reasoning": "Rarely enough for a launch."},
        ],
    )
    _, page = user_with_page(browser_context, server.url, "xena")
    send(page, "summarise the Atlas launch")

    card = pending_card(page)
    shown = card.locator(".options .option .label")
    expect(shown).to_have_text(["One line", "A paragraph", "A full page"])  # as asked: keys never move
    expect(card.locator(".options .option .key")).to_have_text(["a", "b", "c"])
    expect(card.locator(".option.is-default .label")).to_have_text("A paragraph")  # the guess marks the default
    if os.environ.get("E2E_SCREENSHOTS"):
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.locator(".question-card").screenshot(path=str(SCREENSHOT))

    # Digits are for the card, not the composer (which has the focus at first).
    card.locator(".question-text").click()
    page.keyboard.press("3")

    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("A full page")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("A full page it is.")
    row = tool_result(fake, "call_keys")["answers"][0]
    assert (row["answers"], row["selected_indexes"]) == (["A full page"], [2])


def test_digits_toggle_checkboxes_and_enter_confirms_a_multi_select(model_server, browser_context):
    server, fake = model_server
    script(
        fake,
        ask_user(question("Which reminders do you want?", ["Morning", "Noon", "Evening"], multi_select=True), id="call_multi_keys"),
        Reply.text("Reminders set."),
    )
    _, page = user_with_page(browser_context, server.url, "yves")
    send(page, "set up reminders")

    card = pending_card(page)
    card.locator(".question-text").click()
    for key in ("1", "3", "2", "2"):  # the second "2" unticks it again
        page.keyboard.press(key)
    expect(card.locator("input[type=checkbox]:checked")).to_have_count(2)
    page.keyboard.press("Enter")

    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("Morning, Evening")
    expect(page.locator(".message-assistant .markdown")).to_contain_text("Reminders set.")
    assert tool_result(fake, "call_multi_keys")["answers"][0]["selected_indexes"] == [0, 2]
