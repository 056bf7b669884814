"""Adding a knowledge source in the admin, in a real Chromium at desktop and phone sizes: upload a
file, watch the rebuild's progress on the index page, see the source indexed; a bad file is
refused on the form with its reason."""

from __future__ import annotations

import re
import threading

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from knowledge.models import AddedSource, KnowledgeSource
from tests.e2e.conftest import log_in
from tests.fake_openai import Reply

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
CRANE = b"# Zorblax tuning\n\nThe zorblax dial sets how fast the harbour crane turns.\n"


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_upload_shows_the_rebuild_progress_and_the_source_indexed(start_server, fake_model, browser, viewport):
    # Summaries come from the scripted model: the first at once, the rest held until the test has
    # seen the progress bar, so the running state is observed rather than raced.
    release = threading.Event()
    calls = []

    def summary(body):
        calls.append(body)
        if len(calls) > 1:
            release.wait(30)
        return Reply.text("What this page covers, for the index.")

    fake_model.default = summary
    server = start_server(model=fake_model, KNOWLEDGE_REBUILD_CONCURRENCY="1", CLARIFICATION_ENABLED="false")
    get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    context.set_default_timeout(15_000)
    try:
        page = context.new_page()
        log_in(page, server.url, "root", PASSWORD)
        page.goto(f"{server.url}/admin/knowledge/knowledgeindex/")
        page.locator("a.kb-add-source-link").click()

        # A binary file: refused with its reason, nothing stored.
        page.set_input_files("#id_file", files=[{"name": "logo.md", "mimeType": "text/markdown", "buffer": b"\x89PNG\x00\x00"}])
        page.get_by_role("button", name="Add and index").click()
        expect(page.locator(".messagelist .error")).to_contain_text("“logo.md” is not readable text")
        assert not AddedSource.objects.exists()

        page.set_input_files("#id_file", files=[{"name": "crane.md", "mimeType": "text/markdown", "buffer": CRANE}])
        page.get_by_role("button", name="Add and index").click()
        page.wait_for_url(f"{server.url}/admin/knowledge/knowledgeindex/")
        expect(page.locator(".messagelist")).to_contain_text("Added “crane.md” (uploaded file).")

        status = page.locator("#kb-rebuild-status")
        expect(status.locator("progress")).to_be_visible()
        # A step is written at once or, when it follows the last write closely, by the next heartbeat.
        expect(status).to_contain_text(re.compile(r"1 of \d+ sources summarised"), timeout=30_000)
        box = status.locator("progress").bounding_box()
        assert box is not None and box["x"] + box["width"] <= viewport[0]
        release.set()

        # htmx polls the status until the rebuild ends; then the new index is one reload away.
        expect(status).to_contain_text("finished", timeout=30_000)
        status.get_by_role("link", name="Reload to see the new index.").click()
        expect(page.locator(".kb-index-text")).to_contain_text("uploads/crane.md — Zorblax tuning")
        assert KnowledgeSource.objects.get(source_id="uploads/crane.md").origin == AddedSource.objects.get()

        page.goto(f"{server.url}/admin/knowledge/addedsource/")
        expect(page.locator(".kb-configured-sources")).to_contain_text("docs/user-guide")
        row = page.locator("#result_list tbody tr", has_text="crane.md")
        expect(row.locator("td.field-page_count")).to_have_text("1")
    finally:
        release.set()
        context.close()
