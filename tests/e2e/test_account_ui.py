"""A person changes their own password from the top bar, at desktop and phone size."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import open_chat

pytestmark = pytest.mark.e2e

OLD, NEW = "correct-horse", "battery-staple-longer"
VIEWPORTS = [pytest.param({"width": 1280, "height": 800}, id="desktop"), pytest.param({"width": 390, "height": 844}, id="phone")]


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_changing_the_password_from_the_top_bar(live_url, browser, viewport):
    context, user, page, errors = open_chat(browser, live_url, viewport, f"pat{viewport['width']}", OLD)
    try:
        page.get_by_role("link", name="Password").click()
        expect(page.get_by_role("heading", name="Change your password")).to_be_visible()
        expect(page.get_by_label("Old password")).to_be_focused()

        page.get_by_label("Old password").fill("not-my-password")
        page.get_by_label("New password", exact=True).fill(NEW)
        page.get_by_label("New password confirmation").fill(NEW)
        page.get_by_role("button", name="Change password").click()
        expect(page.get_by_text("Your old password was entered incorrectly")).to_be_visible()
        expect(page.get_by_label("Old password")).to_have_attribute("aria-invalid", "true")
        user.refresh_from_db()
        assert user.check_password(OLD)

        page.get_by_label("Old password").fill(OLD)
        page.get_by_label("New password", exact=True).fill(NEW)
        page.get_by_label("New password confirmation").fill(NEW)
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Password changed")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        user.refresh_from_db()
        assert user.check_password(NEW)
        page.get_by_role("link", name="Back to the chat").click()
        page.wait_for_url(f"{live_url}/chat/*/")
        expect(page.locator("#composer-input")).to_be_visible()
        assert errors == []
    finally:
        context.close()
