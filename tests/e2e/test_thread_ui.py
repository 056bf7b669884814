"""The thread as people read it, in a real Chromium at 1280×800 and 390×844: it follows the newest
reply, opens at the latest message, renders Markdown while it streams, says what the assistant
looked up in words, links citation markers, and shows messages sent while offline as queued.
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from chat.models import Conversation, Message
from questions import services as question_services
from questions.schemas import OptionSpec, QuestionSpec
from tests.e2e.conftest import DaphneServer, log_in, start_conversation, wait_for_socket
from tests.fake_openai import Reply
from workspace.demo_content import seed_demo_workspace

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
MODEL_ENV = {"CLARIFICATION_ENABLED": "false", "QUESTION_DETECTOR_ENABLED": "false", "QUESTION_GUESSER_ENABLED": "false"}
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]


@pytest.fixture
def model_server(start_server, fake_model):
    return start_server(model=fake_model, **MODEL_ENV), fake_model


def new_page(browser, viewport):
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE, has_touch=viewport is PHONE)
    context.set_default_timeout(15_000)
    return context, context.new_page()


def signed_in(browser, viewport, base_url: str, username: str):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    context, page = new_page(browser, viewport)
    log_in(page, base_url, username, PASSWORD)
    return user, context, page


def open_new_conversation(page, base_url: str, user) -> Conversation:
    """A fresh conversation, opened directly (the phone layout hides the sidebar's button)."""
    conversation = Conversation.objects.create(owner=user, title="New conversation")
    page.goto(f"{base_url}/chat/{conversation.pk}/")
    wait_for_socket(page)
    return conversation


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def distance_from_bottom(page) -> float:
    return page.locator("#message-list").evaluate("l => l.scrollHeight - l.scrollTop - l.clientHeight")


def long_reply(paragraphs: int = 40) -> str:
    return "\n\n".join(f"Paragraph {i}: the venue, the catering and the speakers are on track for the launch." for i in range(paragraphs))


# --- 1. following the stream --------------------------------------------------------------------


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_thread_follows_a_growing_reply_until_the_reader_scrolls_up(model_server, browser, viewport):
    server, fake = model_server
    fake.script(Reply.text(long_reply(), chunk_delay=0.025))
    user, context, page = signed_in(browser, viewport, server.url, f"follow{viewport['width']}")
    try:
        open_new_conversation(page, server.url, user)
        # Record, on every change to the thread, how far its end is below the view.
        page.evaluate(
            """() => {
              const list = document.getElementById('message-list');
              window.__gaps = [];
              new MutationObserver(() => window.__gaps.push(
                [list.scrollHeight - list.scrollTop - list.clientHeight, list.scrollHeight > list.clientHeight]
              )).observe(list, {childList: true, subtree: true, characterData: true});
            }"""
        )
        send(page, "how is the launch going?")
        body = page.locator(".message-assistant.streaming .markdown")
        # Grown well past one screen while still streaming…
        page.wait_for_function(
            "() => { const l = document.getElementById('message-list'); const s = document.querySelector('.streaming');"
            " return s && l.scrollHeight > 2 * l.clientHeight; }"
        )
        expect(body).to_be_visible()
        # …and every growth was followed: the newest line was never left below the view.
        gaps = page.evaluate("window.__gaps.filter(([gap, overflowing]) => overflowing).map(([gap]) => gap)")
        assert len(gaps) > 5 and max(gaps) <= 48, gaps
        expect(page.locator("#jump-latest")).to_be_hidden()

        # The reader scrolls up: the view stays where they put it, and offers a way back.
        list_box = page.locator("#message-list").bounding_box()
        page.mouse.move(list_box["x"] + list_box["width"] / 2, list_box["y"] + list_box["height"] / 2)
        page.mouse.wheel(0, -1500)
        jump = page.get_by_role("button", name="Jump to latest")
        expect(jump).to_be_visible()
        top = page.locator("#message-list").evaluate("l => l.scrollTop")
        height = page.locator("#message-list").evaluate("l => l.scrollHeight")
        page.wait_for_function(f"() => document.getElementById('message-list').scrollHeight > {height} + 200")
        assert page.locator("#message-list").evaluate("l => l.scrollTop") == top
        assert distance_from_bottom(page) > 200
        expect(jump).to_be_visible()

        jump.click()
        expect(jump).to_be_hidden()
        assert distance_from_bottom(page) <= 48
        # Following again: the rest of the reply stays in view until it is complete.
        expect(page.locator(".message-assistant.streaming")).to_have_count(0, timeout=30_000)
        expect(page.locator(".message-assistant .markdown").last).to_contain_text("Paragraph 39")
        assert distance_from_bottom(page) <= 48
    finally:
        context.close()


# --- 2. opening at the latest message or the pending card ---------------------------------------


def conversation_with_history(user, turns: int = 30) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="A long conversation")
    start = timezone.now() - dt.timedelta(hours=1)
    for i in range(turns):
        asked = Message.objects.create(conversation=conversation, role="user", content=f"Question number {i}")
        Message.objects.create(
            conversation=conversation, role="assistant", in_reply_to=asked, content=f"Answer number {i}.\n\n" + long_reply(2)
        )
    Message.objects.filter(conversation=conversation).update(created_at=start)
    return conversation


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_opening_and_reloading_a_conversation_shows_the_latest_message(live_url, browser, viewport):
    user, context, page = signed_in(browser, viewport, live_url, f"latest{viewport['width']}")
    try:
        conversation = conversation_with_history(user)
        page.goto(f"{live_url}/chat/{conversation.pk}/")
        wait_for_socket(page)
        last = page.locator(".message-assistant").last
        expect(last).to_contain_text("Answer number 29")
        expect(last).to_be_in_viewport()
        assert distance_from_bottom(page) <= 48
        page.reload()
        wait_for_socket(page)
        expect(page.locator(".message-assistant").last).to_be_in_viewport()
        assert distance_from_bottom(page) <= 48
        expect(page.get_by_role("button", name="Jump to latest")).to_be_hidden()
    finally:
        context.close()


def test_a_pending_card_taller_than_the_phone_screen_opens_at_its_question(live_url, browser):
    user, context, page = signed_in(browser, PHONE, live_url, "tallcard")
    try:
        conversation = conversation_with_history(user, turns=10)
        specs = [
            QuestionSpec(
                question=f"Question {n}: which project should the {topic} go to?",
                options=[OptionSpec(label=name, description=f"Everything about {name} and its {topic}") for name in ("Atlas", "Harbor", "Home", "Garden")],
            )
            for n, topic in enumerate(["venue", "catering", "speakers", "budget"], start=1)
        ]  # fmt: skip
        question_services.ask(user=user, conversation_id=conversation.pk, kind="ask", specs=specs)
        page.goto(f"{live_url}/chat/{conversation.pk}/")
        wait_for_socket(page)
        current = page.locator(".question-pending")
        expect(current.locator(".question-text")).to_contain_text("Question 1: which project should the venue go to?")
        expect(current.locator(".question-text")).to_be_in_viewport()
        expect(current.locator(".option").first).to_be_in_viewport()
    finally:
        context.close()


# --- 3 and 4. Markdown while streaming, CommonMark when done -------------------------------------

PLAN = "Here is the plan:\n\n- **Prepare** the venue\n  - book the hall\n  - order chairs\n- Ship the *invitations*\n\n" + long_reply(30)


# Read in one go inside the page: each streamed frame replaces the reply's elements.
OFFSET_OF_ORDER_CHAIRS = """selector => {
  const article = [...document.querySelectorAll(selector)].pop();
  const li = article && [...article.querySelectorAll('.markdown ul ul li')].find(l => l.textContent.includes('order chairs'));
  return li ? li.getBoundingClientRect().top - article.getBoundingClientRect().top : null;
}"""


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_streamed_reply_is_rendered_markdown_while_it_streams_and_does_not_jump_at_the_end(model_server, browser, viewport):
    server, fake = model_server
    fake.script(Reply.text(PLAN, chunk_delay=0.03))
    user, context, page = signed_in(browser, viewport, server.url, f"stream{viewport['width']}")
    try:
        open_new_conversation(page, server.url, user)
        send(page, "plan the launch")
        streaming = page.locator(".message-assistant.streaming .markdown")
        # While it streams: a bold word and a nested list, never the raw asterisks.
        expect(streaming.locator("strong", has_text="Prepare")).to_be_visible()
        expect(streaming.locator("ul ul li", has_text="book the hall")).to_be_visible()
        expect(page.locator(".message-assistant.streaming")).to_have_count(1)
        assert "**" not in streaming.inner_text() and "- book" not in streaming.inner_text()
        offset = page.wait_for_function(f"() => ({OFFSET_OF_ORDER_CHAIRS})('.message-assistant.streaming')").json_value()

        expect(page.locator(".message-assistant.streaming")).to_have_count(0, timeout=30_000)
        final = page.locator(".message-assistant .markdown").last
        expect(final.locator("ul ul li")).to_have_text(["book the hall", "order chairs"])
        after = page.evaluate(OFFSET_OF_ORDER_CHAIRS, ".message-assistant:not(.streaming)")
        # The saved reply is laid out as it streamed: the list line moves by at most the meta line's height change.
        assert abs(after - offset) <= 4, (offset, after)
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_page_loaded_while_a_reply_streams_shows_the_saved_reply_without_console_errors(model_server, browser, viewport):
    server, fake = model_server
    fake.script(Reply.text(PLAN, chunk_delay=0.02))  # about 9 s of streaming
    user, context, page = signed_in(browser, viewport, server.url, f"reload{viewport['width']}")
    try:
        open_new_conversation(page, server.url, user)
        send(page, "plan the launch")
        expect(page.locator(".message-assistant.streaming .markdown strong", has_text="Prepare")).to_be_visible()
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.reload()
        wait_for_socket(page)
        # The reloaded page has no bubble for the stream still running; its pieces are dropped and
        # the saved reply joins the thread once it is complete.
        final = page.locator(".message-assistant:not(.streaming) .markdown", has_text="order chairs")
        expect(final).to_be_visible(timeout=30_000)
        expect(page.locator(".message-assistant")).to_have_count(1)
        assert errors == []
    finally:
        context.close()


SHAPES = """Status by project:

- Atlas
  - design review on Friday
  - build the prototype
- Harbor

```python
def launch(day: str) -> bool:
    return day < "friday"
```

| Task | Due |
| :-- | --: |
| Book the venue | Fri |
| Order chairs | Mon |

See [the launch checklist](https://example.com/launch) for details."""


def test_the_shapes_models_emit_render_as_commonmark(model_server, browser_context):
    server, fake = model_server
    fake.script(Reply.text(SHAPES, chunks=5))
    get_user_model().objects.create_user(username="shapes", password=PASSWORD)
    page = browser_context.new_page()
    log_in(page, server.url, "shapes", PASSWORD)
    start_conversation(page, server.url)
    send(page, "status?")
    expect(page.locator(".message-assistant.streaming")).to_have_count(0, timeout=20_000)
    reply = page.locator(".message-assistant .markdown").last
    expect(reply.locator("> ul > li")).to_have_count(2)
    expect(reply.locator("ul ul li")).to_have_text(["design review on Friday", "build the prototype"])
    expect(reply.locator("pre code.language-python")).to_contain_text('def launch(day: str) -> bool:\n    return day < "friday"')
    expect(reply.locator("table th")).to_have_text(["Task", "Due"])
    expect(reply.locator("table tbody tr")).to_have_count(2)
    expect(reply.locator("table tbody tr").first.locator("td")).to_have_text(["Book the venue", "Fri"])
    link = reply.get_by_role("link", name="the launch checklist")
    expect(link).to_have_attribute("href", "https://example.com/launch")
    expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")


# --- 5. what the assistant looked up, in words ----------------------------------------------------


def test_lookups_and_clarifications_are_described_in_words_with_details_on_request(live_url, browser_context):
    user = get_user_model().objects.create_user(username="words", password=PASSWORD)
    seed_demo_workspace(user=user)
    page = browser_context.new_page()
    log_in(page, live_url, "words", PASSWORD)
    start_conversation(page, live_url)

    send(page, "show my in-progress tasks")
    activity = page.locator(".tool-activity").first
    expect(activity.locator("summary")).to_have_text("Looked at up to 50 in-progress tasks")
    raw = activity.locator("code")
    expect(raw).to_be_hidden()
    activity.locator("summary").click()
    expect(raw).to_be_visible()
    expect(raw).to_contain_text("query_tasks(status: in_progress")

    send(page, "clean up my tasks")
    card = page.locator(".question-card.state-pending")
    expect(card.locator(".question-pending .question-text")).to_contain_text("What kind of cleanup?")
    text = card.inner_text()
    for internal in ("Confidence", "0.35", "(action)", "Round"):
        assert internal not in text, internal
    expect(card.locator("[title*='Matches']")).to_have_count(0)
    # The reasoning is there for whoever opens it, in words first, the raw numbers one level down.
    card.get_by_text("Why I'm asking").click()
    expect(card.locator(".reasoning")).to_contain_text("You want to tidy up your task list.")
    expect(card.locator(".raw-details dd").first).to_be_hidden()


# --- 6. citation markers link to their sources ------------------------------------------------


def _rebuild():
    from django.db import connection

    from knowledge import services as knowledge_services

    try:
        return knowledge_services.rebuild_kb_index()
    finally:
        connection.close()


def test_citation_markers_in_an_answer_open_the_same_source_as_the_chip(live_url, browser_context):
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(_rebuild).result().ok
    get_user_model().objects.create_user(username="marker", password=PASSWORD)
    page = browser_context.new_page()
    log_in(page, live_url, "marker", PASSWORD)
    start_conversation(page, live_url)
    send(page, "How do I connect my own model?")

    answer = page.locator(".message-assistant").last
    marker = answer.locator(".markdown a.citation-ref", has_text="[1]").first
    expect(marker).to_be_visible(timeout=20_000)
    chip = answer.locator(".citation-chip[data-citation='1']")
    assert marker.get_attribute("href") == chip.get_attribute("href")
    with page.context.expect_page() as opened:
        marker.click()
    source = opened.value
    source.wait_for_load_state()
    assert "/kb/sources/" in source.url
    expect(source.locator("main")).to_contain_text("LLM_BASE_URL")


# --- 21. a message sent while the socket is down ----------------------------------------------


def test_a_message_sent_while_disconnected_shows_as_queued_until_delivered(daphne_server, transactional_db, browser_context):
    user = get_user_model().objects.create_user(username="queued", password=PASSWORD)
    seed_demo_workspace(user=user)
    server = DaphneServer(database_name=daphne_server.env["DATABASE_NAME"], extra_env={"QUESTION_SWEEP_SECONDS": "3600"}).start()
    try:
        page = browser_context.new_page()
        log_in(page, server.url, "queued", PASSWORD)
        start_conversation(page, server.url)

        server.stop()
        page.wait_for_selector("body[data-ws='closed']")
        expect(page.locator(".connection-banner")).to_be_visible()
        send(page, "show my in-progress tasks")
        queued = page.locator(".message-queued")
        expect(queued).to_have_count(1)
        expect(queued).to_contain_text("show my in-progress tasks")
        expect(queued.locator(".queued-status")).to_have_text("Queued — sends when the connection is back")
        expect(page.locator("#composer-input")).to_have_value("")
        assert Message.objects.filter(conversation__owner=user, role="user").count() == 0

        server.start()  # same port: the page reconnects by itself and sends what it kept
        wait_for_socket(page)
        delivered = page.locator(".message-user:not(.message-queued)", has_text="show my in-progress tasks")
        expect(delivered).to_have_count(1, timeout=30_000)
        expect(queued).to_have_count(0)
        expect(page.locator(".message-assistant .markdown").last).to_contain_text("Here are your in-progress tasks", timeout=20_000)
        assert Message.objects.filter(conversation__owner=user, role="user", content="show my in-progress tasks").count() == 1
    finally:
        server.stop()
