"""Choosing which changes a confirmation applies, and a long list on a phone: in a real Chromium at
1280×800 and 390×844, with no console error (CSP included)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e import conftest
from tests.e2e.test_questions_ui import PASSWORD, send
from workspace.models import Task

pytestmark = pytest.mark.e2e

VIEWPORTS = [pytest.param({"width": 1280, "height": 800}, id="desktop"), pytest.param({"width": 390, "height": 844}, id="phone")]


def open_chat(browser, live_url, viewport, username):
    return conftest.open_chat(browser, live_url, viewport, username, PASSWORD)


def inner_scrollers(page) -> list[str]:
    """Elements of the card that scroll on their own (content taller than their box)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('.question-card *')].filter(el => {
            const y = getComputedStyle(el).overflowY;
            return (y === 'auto' || y === 'scroll') && el.scrollHeight > el.clientHeight + 1;
        }).map(el => el.className || el.tagName)"""
    )


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_untick_changes_then_apply_only_the_ticked_ones(live_url, browser, viewport):
    context, user, page, errors = open_chat(browser, live_url, viewport, f"choose{viewport['width']}")
    try:
        Task.objects.bulk_create(
            Task(owner=user, title=f"Old chore {n:02d} from the spring clean of the shared storage room", status="completed")
            for n in range(1, 17)
        )
        send(page, "delete all my completed tasks")
        confirm = page.locator(".question-confirm")
        boxes = confirm.locator(".operation-list input[type=checkbox]")
        expect(boxes).to_have_count(16)
        apply_note = confirm.locator(".option.apply small")
        expect(apply_note).to_have_text("Make all 16 changes listed above")

        # One scroll: items 9 and 10 are not hidden behind an inner scroll above "6 more".
        assert inner_scrollers(page) == []
        confirm.locator(".operations-more summary").click()
        assert inner_scrollers(page) == []
        for n in (9, 10, 11, 16):
            item = confirm.locator(".operation-list li", has_text=f"Old chore {n:02d}")
            item.scroll_into_view_if_needed()
            expect(item).to_be_in_viewport()

        for n in (2, 6, 10, 16):
            confirm.locator(".operation-list label", has_text=f"Old chore {n:02d}").click()
        expect(apply_note).to_have_text("Apply 12 of 16 changes")
        confirm.locator(".option.apply").click()
        expect(confirm.locator(".question-receipt.answered")).to_contain_text("Applied — 12 of 16 changes confirmed")
        expect(page.locator(".message-assistant .markdown").last).to_contain_text("You left out 4 of the 16 proposed changes")
        assert sorted(Task.objects.filter(owner=user).values_list("title", flat=True)) == [
            f"Old chore {n:02d} from the spring clean of the shared storage room" for n in (2, 6, 10, 16)
        ]
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_no_change_ticked_disables_apply_and_cancel_still_works(live_url, browser, viewport):
    context, user, page, errors = open_chat(browser, live_url, viewport, f"untickall{viewport['width']}")
    try:
        Task.objects.bulk_create(Task(owner=user, title=f"Chore {n}", status="completed") for n in range(1, 4))
        send(page, "delete all my completed tasks")
        confirm = page.locator(".question-confirm")
        for n in range(1, 4):
            confirm.locator(".operation-list label", has_text=f"Chore {n}").click()
        expect(confirm.locator(".option.apply small")).to_have_text("Tick at least one change to apply")
        expect(confirm.locator(".option.apply")).to_be_disabled()
        confirm.locator(".operation-list label", has_text="Chore 2").click()
        expect(confirm.locator(".option.apply small")).to_have_text("Apply 1 of 3 changes")
        confirm.locator(".option", has_text="Cancel").click()
        expect(confirm.locator(".question-receipt")).to_have_text("Cancelled — nothing changed")
        assert Task.objects.filter(owner=user).count() == 3
        assert errors == []
    finally:
        context.close()
