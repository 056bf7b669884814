from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from knowledge import services as knowledge_services
from tests.e2e.conftest import log_in, start_conversation

pytestmark = pytest.mark.e2e


def _rebuild():
    from django.db import connection

    try:
        return knowledge_services.rebuild_kb_index()
    finally:
        connection.close()


def test_a_question_about_the_user_guide_gets_a_cited_answer_whose_citation_opens_the_source(live_url, browser_context):
    # The e2e server runs on the test database, so the index is built here, from docs/user-guide/
    # (in a thread of its own, as the management command would: Playwright owns this one's loop).
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(_rebuild).result().ok
    get_user_model().objects.create_user(username="ivy", password="correct-horse")
    page = browser_context.new_page()
    log_in(page, live_url, "ivy", "correct-horse")
    start_conversation(page, live_url)

    page.fill("#composer-input", "How do I connect my own model?")
    page.keyboard.press("Enter")

    answer = page.locator(".message-assistant .markdown").last
    expect(answer).to_contain_text("LLM_BASE_URL", timeout=15_000)
    expect(answer).to_contain_text("[1]")
    chip = page.locator(".message-assistant .citation-chip").first
    expect(chip).to_contain_text("[1]")
    with browser_context.expect_page() as opened:
        chip.click()
    source = opened.value
    source.wait_for_load_state()
    assert "/kb/sources/" in source.url
    expect(source.locator("main")).to_contain_text("LLM_BASE_URL")
