"""The offline engine's answers in a real Chromium, at 1280×800 and 390×844, with no console error:
a typed answer to the cleanup card is not asked again, and due-date questions list the tasks due
in the person's calendar (the browser's time zone)."""

from __future__ import annotations

import datetime as dt

import pytest
from playwright.sync_api import expect

from chat.models import Message
from tests.conftest import zone_whose_date_is_not_utcs
from tests.e2e import conftest
from tests.e2e.test_questions_ui import PASSWORD, send
from workspace import services as workspace_services
from workspace.demo_content import seed_demo_workspace

pytestmark = pytest.mark.e2e

VIEWPORTS = [pytest.param({"width": 1280, "height": 800}, id="desktop"), pytest.param({"width": 390, "height": 844}, id="phone")]


def open_chat(browser, live_url, viewport, username, *, timezone_id: str | None = None):
    return conftest.open_chat(browser, live_url, viewport, username, PASSWORD, timezone_id=timezone_id)


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_typed_answer_to_the_cleanup_card_acts_or_says_what_it_cannot_do_never_the_same_card(live_url, browser, viewport):
    context, user, page, errors = open_chat(browser, live_url, viewport, f"stale{viewport['width']}")
    try:
        seed_demo_workspace(user=user)
        send(page, "clean up my tasks")
        card = page.locator(".question-clarify")
        field = card.locator(".question-pending .custom-answer input")
        field.fill("only the stale ones")
        field.press("Enter")
        expect(card.locator(".question-pending .question-text")).to_contain_text("Which tasks?")
        card.locator(".question-pending .option", has_text="Atlas").click()
        expect(page.locator(".message-derived .message-body")).to_have_text("clean up my tasks only the stale ones in Atlas")
        reply = page.locator(".message-assistant .markdown").last
        expect(reply).to_contain_text("Offline I can't tell which tasks a cleanup should touch, so I haven't changed anything.")
        expect(reply).to_contain_text("Here are your tasks in Atlas")
        expect(page.locator(".question-card")).to_have_count(1)  # never the same card twice
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
@pytest.mark.parametrize("question", ["What's due this week?", "list everything due this week"])
def test_whats_due_this_week_lists_the_tasks_due_in_the_browsers_week(live_url, browser, viewport, question):
    zone, today = zone_whose_date_is_not_utcs()
    slug = f"due{viewport['width']}{len(question)}"
    context, user, page, errors = open_chat(browser, live_url, viewport, slug, timezone_id=zone)
    try:
        monday = today - dt.timedelta(days=today.weekday())
        for title, due in [("Send the invoice", monday), ("Book the venue", monday + dt.timedelta(days=6))]:
            workspace_services.create_task(user=user, title=title, due_date=due)
        workspace_services.create_task(user=user, title="Next week's review", due_date=monday + dt.timedelta(days=7))
        workspace_services.create_task(user=user, title="Someday", due_date=None)
        send(page, question)
        reply = page.locator(".message-assistant .markdown").last
        expect(reply).to_contain_text("Here are your tasks due this week")
        expect(reply.locator("li")).to_have_count(2)
        expect(reply).to_contain_text("Send the invoice")
        expect(reply).to_contain_text("Book the venue")
        expect(reply).not_to_contain_text("Next week's review")
        assert Message.objects.get(conversation__owner=user, role="user").metadata == {"time_zone": zone}
        assert errors == []
    finally:
        context.close()
