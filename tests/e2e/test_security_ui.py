"""Hostile content runs nothing, in a real Chromium: a model reply, a question card and a
knowledge-base source page carrying `<script>`, `<img onerror>` and `javascript:` links. And the
Content-Security-Policy itself blocks inline code that slips into a page, while the app's own
scripts (the chat, htmx polling in the admin) keep working under it."""

from __future__ import annotations

import collections
import json
import time

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from knowledge.models import KnowledgeSource, content_hash
from tests.e2e.conftest import log_in, start_conversation
from tests.fake_openai import Reply

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
# Each payload would set window.__xss (or open a dialog) if anything ran it.
PAYLOAD = (
    "<script>window.__xss = 'script'</script>"
    "<img src=x onerror=\"window.__xss = 'img'; alert('img')\">"
    "<svg onload=\"window.__xss = 'svg'\"></svg>"
    " [markdown link](javascript:window.__xss='md-link') "
    "<a href=\"javascript:window.__xss='raw-link';alert('link')\">raw link</a>"
    " <iframe src=\"javascript:parent.__xss='iframe'\"></iframe>"
)
MODEL_ENV = {
    "CLARIFICATION_ENABLED": "false",
    "QUESTION_DETECTOR_ENABLED": "false",
    "QUESTION_GUESSER_ENABLED": "false",
    "QUESTIONS_MIN_INTERVAL_SECONDS": "0",
}


class Watch:
    """What a page must not do: open dialogs, break the policy, log errors."""

    def __init__(self, page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.console: list[str] = []
        page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        page.on(
            "console",
            lambda message: self.console.append(f"{message.type}: {message.text}") if message.type in ("error", "warning") else None,
        )

    @property
    def csp_violations(self) -> list[str]:
        return [line for line in self.console if "Content Security Policy" in line]

    def assert_nothing_ran(self) -> None:
        assert self.page.evaluate("window.__xss === undefined"), self.page.evaluate("window.__xss")
        assert self.dialogs == []

    def click_every_link(self, scope) -> None:
        """No link keeps a script URL; the neutralised ones (no href left) do nothing when clicked."""
        links = scope.locator("a")
        for i in range(links.count()):
            link = links.nth(i)
            href = (link.get_attribute("href") or "").strip().lower()
            assert not href.startswith(("javascript:", "data:", "vbscript:")), href
            if not href:
                link.click()

    def wait_for_violations(self, count: int, *, timeout: float = 10.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.csp_violations) < count and time.monotonic() < deadline:
            self.page.wait_for_timeout(100)  # lets Playwright deliver the console events
        return self.csp_violations


def new_user_page(browser_context, base_url: str, username: str, *, superuser: bool = False):
    make = get_user_model().objects.create_superuser if superuser else get_user_model().objects.create_user
    make(username=username, password=PASSWORD, **({"email": f"{username}@example.com"} if superuser else {}))
    page = browser_context.new_page()
    watch = Watch(page)
    log_in(page, base_url, username, PASSWORD)
    return page, watch


@pytest.fixture
def model_server(start_server, fake_model):
    return start_server(model=fake_model, **MODEL_ENV), fake_model


def test_a_model_reply_full_of_markup_runs_nothing(model_server, browser_context):
    server, fake = model_server
    fake.script(Reply.text(f"Here you go: {PAYLOAD} **done**."))
    page, watch = new_user_page(browser_context, server.url, "xena")
    start_conversation(page, server.url)

    page.fill("#composer-input", f"repeat this: {PAYLOAD}")  # the user's own message is hostile too
    page.keyboard.press("Enter")

    reply = page.locator(".message-assistant .markdown").last
    expect(reply.locator("strong")).to_have_text("done", timeout=15_000)
    expect(page.locator(".message-user").last).to_contain_text("<script>window.__xss")  # shown as text
    assert page.locator("main script, main img[src=x], main svg[onload], main iframe").count() == 0
    watch.click_every_link(reply)
    page.reload()  # the stored reply, rendered by the server this time
    expect(page.locator(".message-assistant .markdown strong").last).to_have_text("done")
    watch.click_every_link(page.locator(".message-assistant").last)
    watch.assert_nothing_ran()
    assert watch.csp_violations == []  # nothing even tried: the markup was neutralised before the browser


def test_a_question_card_full_of_markup_runs_nothing(model_server, browser_context):
    server, fake = model_server
    chat = collections.deque(
        [
            Reply.tool_call(
                "ask_user",
                {
                    "questions": [
                        {
                            "question": f"Which one? {PAYLOAD}"[:500],
                            "header": "<b onmouseover=alert(1)>Pick</b>"[:30],
                            "options": [
                                {"label": "<img src=x onerror=alert('opt')>", "description": "<script>window.__xss='desc'</script>"},
                                {"label": "javascript:alert('label')", "description": "[x](javascript:alert(1))"},
                            ],
                        }
                    ]
                },
                id="call_evil",
            ),
            Reply.text("Noted."),
        ]
    )
    fake.default = lambda body: chat.popleft() if chat else Reply.error(500, "script empty")
    page, watch = new_user_page(browser_context, server.url, "yuri")
    start_conversation(page, server.url)
    page.fill("#composer-input", "ask me something")
    page.keyboard.press("Enter")

    card = page.locator(".question-pending")
    expect(card.locator(".question-text")).to_contain_text("<script>window.__xss", timeout=15_000)  # as text
    expect(card.locator(".option")).to_have_count(2)
    card.locator(".option").first.hover()
    watch.click_every_link(card)
    card.locator(".option").first.click()
    expect(page.locator(".question-receipt.answered .receipt-answer")).to_have_text("<img src=x onerror=alert('opt')>")
    expect(page.locator(".message-assistant .markdown").last).to_have_text("Noted.")
    watch.assert_nothing_ran()
    assert watch.csp_violations == []


def test_a_knowledge_base_source_full_of_markup_runs_nothing(live_url, browser_context):
    content = f"# Evil page\n\nSome text. {PAYLOAD}\n\n<a href=\"javascript:alert('x')\">raw link</a>\n"
    source = KnowledgeSource.objects.create(
        source_id="kb/evil.md", title="Evil <script>window.__xss='title'</script>", kind="markdown",
        content=content, content_hash=content_hash(content), summary="<img src=x onerror=alert('summary')>",
    )  # fmt: skip
    page, watch = new_user_page(browser_context, live_url, "zora")
    page.goto(f"{live_url}/kb/sources/{source.pk}/")

    expect(page.locator(".kb-source-title")).to_contain_text("<script>")  # escaped, shown as text
    expect(page.locator(".kb-source-body")).to_contain_text("Some text.")
    assert page.locator("main script, main img[src=x], main svg[onload], main iframe").count() == 0
    watch.click_every_link(page.locator(".kb-source-body"))
    watch.assert_nothing_ran()
    assert watch.csp_violations == []


def test_the_policy_blocks_inline_code_that_slips_into_a_page(live_url, browser_context):
    page, watch = new_user_page(browser_context, live_url, "vera")
    start_conversation(page, live_url)  # the app's own scripts work: the websocket is open

    # Inserted the way a sanitiser bug would: an inline script, an inline handler, a javascript: link.
    # (eval can't be probed from here: DevTools-evaluated code is exempt from the policy.)
    page.evaluate(
        """() => {
            const s = document.createElement('script');
            s.textContent = "window.__xss = 'inline script'";
            document.body.append(s);
            document.body.insertAdjacentHTML('beforeend', '<img id="probe" src="data:," onload="window.__xss = \\'handler\\'">');
            const a = document.createElement('a');
            a.id = 'js-link'; a.textContent = 'js link'; a.href = "javascript:window.__xss='js-url'";
            document.body.append(a);
        }"""
    )
    page.locator("#js-link").click()
    page.wait_for_function("() => document.getElementById('probe').complete")
    expect(page.locator("#composer-input")).to_be_editable()
    watch.assert_nothing_ran()
    # Chromium reports each blocked attempt in the console: the script, the handler, the URL.
    violations = watch.wait_for_violations(3)
    assert len(violations) >= 3 and all("script-src" in v for v in violations), watch.console


def test_the_admin_works_under_the_policy_and_shows_a_rebuild_progressing_to_its_outcome(
    start_server, fake_model, browser_context, tmp_path
):
    folder = tmp_path / "kb"
    folder.mkdir()
    for name in ("alpha", "beta", "gamma"):
        (folder / f"{name}.md").write_text(f"# {name.title()}\n\n{name.title()} explains a thing.\n")
    # Each summary takes a moment, so the page sees the build running before it ends.
    fake_model.default = lambda body: Reply.text("A short summary of the page.", delay=1.0)
    server = start_server(model=fake_model, KNOWLEDGE_SOURCE_DIRS=str(folder), KNOWLEDGE_REBUILD_CONCURRENCY="1")
    page, watch = new_user_page(browser_context, server.url, "root", superuser=True)

    page.goto(f"{server.url}/admin/")
    expect(page.locator("#site-name")).to_be_visible()
    page.goto(f"{server.url}/admin/knowledge/knowledgeindex/")
    page.evaluate("window.__samePage = true")
    page.get_by_role("button", name="Rebuild index").click()

    status = page.locator("#kb-rebuild-status")
    expect(status).to_contain_text("is running", timeout=15_000)
    page.evaluate("window.__samePage = true")  # the form post loaded the page once; no reload after this
    expect(status.locator("progress")).to_be_visible()
    expect(status).to_contain_text("finished", timeout=30_000)  # htmx polling, no reload
    assert page.evaluate("window.__samePage === true")
    expect(status).to_contain_text("3 sources read, 3 summarised")
    page.get_by_role("link", name="Reload to see the new index.").click()
    expect(page.locator(".kb-index-text")).to_contain_text("kb/alpha.md — Alpha: A short summary of the page.")
    watch.assert_nothing_ran()
    assert watch.csp_violations == [], watch.csp_violations
    assert json.dumps(watch.console).count("Refused") == 0


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 844}], ids=["desktop", "phone"])
def test_after_repeated_wrong_passwords_the_right_one_shows_when_to_try_again(browser, live_url, viewport):
    from django.conf import settings

    get_user_model().objects.create_user("mallory-target", password=PASSWORD)
    context = browser.new_context(viewport=viewport, is_mobile=viewport["width"] < 500)
    context.set_default_timeout(10_000)
    page = context.new_page()
    watch = Watch(page)
    try:
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            page.goto(f"{live_url}/login/")
            page.fill("#id_username", "mallory-target")
            page.fill("#id_password", "wrong")
            page.click("button[type=submit]")
            expect(page.get_by_role("alert")).to_contain_text("correct username and password")
        for password in ("wrong", PASSWORD):
            page.goto(f"{live_url}/login/")
            page.fill("#id_username", "mallory-target")
            page.fill("#id_password", password)
            page.click("button[type=submit]")
            expect(page.get_by_role("heading", name="Too many failed logins")).to_be_visible()
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("Try again in 15 minutes")
        expect(alert).to_be_in_viewport()
        assert page.url == f"{live_url}/login/"  # not let in
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.goto(f"{live_url}/chat/")
        page.wait_for_url(f"{live_url}/login/**")  # still no session
        assert watch.csp_violations == []
    finally:
        context.close()
