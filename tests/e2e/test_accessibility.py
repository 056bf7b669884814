"""Accessibility: axe-core (vendored from the npm registry, tests/e2e/vendor/) finds no serious or
critical violation on the login page, the chat page with every card state, and the phone layout;
the chat is usable with the keyboard alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from chat import services as chat_services
from questions import services as question_services
from questions.models import QuestionGroup
from questions.schemas import AnswerInput, AskUserArgs
from tests.e2e.conftest import log_in, wait_for_socket, watch_console
from workspace.demo_content import seed_demo_workspace

pytestmark = pytest.mark.e2e

AXE = Path(__file__).resolve().parent / "vendor" / "axe-4.14.1.min.js"
PASSWORD = "correct-horse"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


def serious_violations(page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    return page.evaluate(
        """async () => {
            const result = await axe.run(document, {resultTypes: ["violations"]});
            return result.violations
              .filter(v => v.impact === "serious" || v.impact === "critical")
              .map(v => ({id: v.id, impact: v.impact, help: v.help,
                          nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " + (n.failureSummary || ""))}));
        }"""
    )


@pytest.fixture(
    params=[
        pytest.param(("light", DESKTOP), id="desktop"),
        pytest.param(("dark", DESKTOP), id="desktop-dark"),
        pytest.param(("light", PHONE), id="phone"),
    ]
)
def context(request, browser):
    scheme, viewport = request.param
    # bypass_csp: axe is injected as a script tag, which the page's own policy rightly refuses.
    ctx = browser.new_context(viewport=viewport, color_scheme=scheme, bypass_csp=True, is_mobile=viewport is PHONE)
    ctx.set_default_timeout(10_000)
    yield ctx
    ctx.close()


def user_page(context, base_url: str, username: str):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    page = context.new_page()
    log_in(page, base_url, username, PASSWORD)
    wait_for_socket(page)
    return user, page


def test_login_page(live_url, context):
    page = context.new_page()
    page.goto(f"{live_url}/login/")
    assert serious_violations(page) == []
    page.fill("#id_username", "nobody")
    page.fill("#id_password", "wrong-password")
    page.click("button[type=submit]")
    expect(page.get_by_role("alert")).to_be_visible()
    assert serious_violations(page) == []


def test_chat_page_empty_and_with_a_reply(live_url, context):
    _, page = user_page(context, live_url, "abe")
    expect(page.get_by_role("heading", level=1)).to_have_count(1)
    assert serious_violations(page) == []
    page.fill("#composer-input", "What's in progress?")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant .message-body.markdown")).to_have_count(1, timeout=20_000)
    assert serious_violations(page) == []


def ask(user, conversation, *, kind=QuestionGroup.Kind.ASK, n=1):
    message = chat_services.post_user_message(user=user, conversation_id=conversation.pk, content="which one?")
    spec = {"question": "Which project?", "options": [{"label": "Atlas", "description": "The launch"}, {"label": "Harbor"}, {"label": "Home"}],
            "allow_custom": True}  # fmt: skip
    args = AskUserArgs.model_validate({"questions": [spec] * n})
    return question_services.ask(
        user=user, conversation_id=conversation.pk, kind=kind, specs=args.questions, tool_call_id=f"call_{conversation.pk.hex[:6]}",
        tool_name="ask_user", payload={"in_reply_to_id": message.pk}, default_indexes=[[0]] * n,
    )  # fmt: skip


def test_every_card_state(live_url, context):
    user, page = user_page(context, live_url, "bea")
    states = {}
    for state in ("pending", "answered", "timed_out", "cancelled"):
        conversation = chat_services.start_conversation(user=user)
        group = ask(user, conversation, n=2 if state == "pending" else 1)
        question = group.questions.order_by("position").first()
        if state == "answered":
            question_services.answer(user=user, question_id=question.pk, answer=AnswerInput(selected_indexes=[1]), via="option")
        elif state == "timed_out":
            question_services.expire_if_due(question_id=question.pk, now=timezone.now() + timezone.timedelta(hours=1))
        elif state == "cancelled":
            question_services.skip_group(user=user, group_id=group.pk)
        states[state] = conversation
    for state, conversation in states.items():
        page.goto(f"{live_url}/chat/{conversation.pk}/")
        expect(page.locator(".question-card")).to_have_count(1)
        assert serious_violations(page) == [], state


def test_phone_drawer_open(live_url, browser):
    ctx = browser.new_context(viewport=PHONE, bypass_csp=True, is_mobile=True)
    ctx.set_default_timeout(10_000)
    try:
        _, page = user_page(ctx, live_url, "cal")
        page.get_by_role("button", name="Show conversations").click()
        expect(page.locator("#sidebar")).to_be_in_viewport()
        assert serious_violations(page) == []
    finally:
        ctx.close()


@pytest.mark.parametrize("width", [320, 360, 390])
def test_the_header_on_a_phone_keeps_log_out_whole_and_on_the_screen(live_url, browser, width):
    """Narrow phones: "Log out" and "Password" neither run off the right edge nor break over two
    lines, and the header's rows do not push the message box off the screen."""
    ctx = browser.new_context(viewport={"width": width, "height": 700}, is_mobile=True)
    ctx.set_default_timeout(10_000)
    try:
        user, page = user_page(ctx, live_url, f"narrow{width}")
        user.is_staff = True  # the header's fullest: the demo user, an admin, also has "Admin"
        user.save(update_fields=["is_staff"])
        page.reload()
        for control in (page.get_by_role("button", name="Log out"), page.get_by_role("link", name="Password")):
            expect(control).to_be_in_viewport(ratio=1)
            box = control.bounding_box()
            line = control.evaluate("b => parseFloat(getComputedStyle(b).lineHeight)")
            assert box is not None and box["x"] + box["width"] <= width and box["height"] < 1.5 * line, (box, line)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # However many rows the header takes, the message box and Send stay whole on the screen.
        expect(page.locator("#composer-input")).to_be_in_viewport(ratio=1)
        expect(page.get_by_role("button", name="Send")).to_be_in_viewport(ratio=1)
    finally:
        ctx.close()


# --- keyboard only ---------------------------------------------------------------------------------


def tab_until(page, predicate_js: str, *, limit: int = 60, shift: bool = False) -> None:
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if shift else "Tab")
        if page.evaluate(f"(() => {{ const el = document.activeElement; return {predicate_js}; }})()"):
            return
    raise AssertionError(f"no element matching {predicate_js} reached with the keyboard")


def test_keyboard_only_login_chat_rename_and_a_card(live_url, browser):
    ctx = browser.new_context(viewport=DESKTOP)
    ctx.set_default_timeout(10_000)
    try:
        user = get_user_model().objects.create_user(username="dee", password=PASSWORD)
        seed_demo_workspace(user=user)
        page = ctx.new_page()
        page.goto(f"{live_url}/login/")
        expect(page.locator("#id_username")).to_be_focused()
        page.keyboard.type("dee")
        page.keyboard.press("Tab")
        page.keyboard.type(PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_url}/chat/*/")
        wait_for_socket(page)

        # The message box has focus on arrival; the skip link (first in the page) leads back to it.
        expect(page.locator("#composer-input")).to_be_focused()
        tab_until(page, "el.classList.contains('skip-link')", shift=True)
        page.keyboard.press("Enter")
        expect(page.locator("#composer-input")).to_be_focused()
        page.keyboard.type("clean up my tasks")
        page.keyboard.press("Enter")
        card = page.locator(".question-clarify .question-pending")
        expect(card).to_have_count(1, timeout=20_000)

        # Answer the card's first question with Tab and Enter only.
        tab_until(page, "el.classList.contains('option')")
        chosen = page.evaluate("document.activeElement.innerText")
        page.keyboard.press("Enter")
        expect(page.locator(".question-clarify .question-progress")).to_contain_text("2 of 2")
        assert chosen

        # Rename with the keyboard.
        tab_until(page, "el.textContent.trim() === 'Rename'", shift=True)
        page.keyboard.press("Enter")
        expect(page.get_by_label("Conversation title")).to_be_focused()
        page.keyboard.press("Control+A")
        page.keyboard.type("Keyboard only")
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", level=1)).to_have_text("Keyboard only")

        # The delete dialog traps focus on Cancel and Escape closes it.
        tab_until(page, "el.textContent.trim() === 'Delete'")
        page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
    finally:
        ctx.close()


def test_keyboard_opens_and_closes_the_phone_drawer(live_url, browser):
    ctx = browser.new_context(viewport=PHONE, is_mobile=True)
    ctx.set_default_timeout(10_000)
    try:
        _, page = user_page(ctx, live_url, "eve")
        tab_until(page, "el.dataset.drawerOpen !== undefined", shift=True)
        page.keyboard.press("Enter")
        expect(page.locator("#sidebar")).to_be_in_viewport()
        expect(page.get_by_role("button", name="New conversation")).to_be_focused()
        page.keyboard.press("Escape")
        expect(page.locator("#sidebar")).not_to_be_in_viewport()
        expect(page.get_by_role("button", name="Show conversations")).to_be_focused()
    finally:
        ctx.close()


def test_highlighted_code_the_edit_form_and_the_shortcuts_sheet(live_url, context):
    from chat.models import Message

    user, page = user_page(context, live_url, "dot")
    conversation = chat_services.start_conversation(user=user)
    asked = Message.objects.create(conversation=conversation, role="user", content="show me the helper")
    Message.objects.create(
        conversation=conversation, role="assistant", in_reply_to=asked,
        content="Here:\n\n```python\n@cache\ndef launch(venue: str) -> str:\n    return f\"Book {venue}\" + str(42)  # today\n```",
    )  # fmt: skip
    page.goto(f"{live_url}/chat/{conversation.pk}/")
    wait_for_socket(page)
    expect(page.locator(".code-block .hl-keyword").first).to_be_visible()
    assert serious_violations(page) == []
    page.get_by_role("button", name="Edit this message").click()
    expect(page.get_by_role("textbox", name="Edit your message")).to_be_focused()
    assert serious_violations(page) == []
    page.keyboard.press("Escape")
    page.locator("#message-list").click()
    page.keyboard.press("?")
    sheet = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(sheet).to_be_visible()
    expect(sheet.get_by_role("button", name="Close")).to_be_focused()
    assert serious_violations(page) == []
    page.keyboard.press("Escape")
    expect(sheet).to_be_hidden()


# --- the admin pages Clarion adds or customises ------------------------------------------------------


def admin_data(user):
    """One of everything the admin pages list, so each shows a row (or its custom content)."""
    from knowledge.models import AdapterToken, AddedSource, KnowledgeIndex, KnowledgeSource, RebuildJob
    from knowledge.selectors import get_ai_config

    config = get_ai_config()
    source = KnowledgeSource.objects.create(
        source_id="docs/user-guide/setup.md", title="Setup", kind="markdown", content="# Setup\n\nInstall it.", summary="How to install."
    )
    KnowledgeIndex.objects.create(text="setup.md: How to install.\n" * 60, source_count=1, summarised_count=1, is_current=True)
    job = RebuildJob.objects.create(
        requested_by=user, requested_via="admin", status=RebuildJob.Status.SUCCEEDED, outcome="1 source indexed"
    )
    token = AdapterToken.objects.create(name="discord", prefix="abc123", token_hash="0" * 64)
    added = AddedSource.objects.create(kind="url", location="https://example.org/guide", added_by=user)
    conversation = chat_services.start_conversation(user=user)
    group = ask(user, conversation)
    seed_demo_workspace(user=user)
    message = conversation.messages.first()
    return [
        ("/admin/", "Site administration"),
        (f"/admin/knowledge/aiconfig/{config.pk}/change/", "AI configuration"),
        ("/admin/knowledge/knowledgeindex/", "Knowledge-base index"),
        ("/admin/knowledge/knowledgesource/", "Setup"),
        (f"/admin/knowledge/knowledgesource/{source.pk}/change/", "Setup"),
        ("/admin/knowledge/rebuildjob/", ""),
        (f"/admin/knowledge/rebuildjob/{job.pk}/change/", ""),
        ("/admin/knowledge/addedsource/", "https://example.org/guide"),
        ("/admin/knowledge/addedsource/add/", ""),
        (f"/admin/knowledge/addedsource/{added.pk}/change/", "https://example.org/guide"),
        ("/admin/knowledge/adaptertoken/", "discord"),
        (f"/admin/knowledge/adaptertoken/{token.pk}/change/", "discord"),
        ("/admin/questions/pendingquestion/", "Which project?"),
        (f"/admin/questions/questiongroup/{group.pk}/change/", ""),
        ("/admin/chat/conversation/", ""),
        (f"/admin/chat/conversation/{conversation.pk}/change/", "which one?"),
        (f"/admin/chat/message/{message.pk}/change/", ""),
        ("/admin/workspace/task/", ""),
    ]


@pytest.mark.parametrize("viewport", [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")])
def test_admin_pages(live_url, browser, viewport):
    ctx = browser.new_context(viewport=viewport, bypass_csp=True, is_mobile=viewport is PHONE)
    ctx.set_default_timeout(10_000)
    try:
        user = get_user_model().objects.create_superuser("ada", "ada@example.com", PASSWORD)
        page = ctx.new_page()
        log_in(page, live_url, "ada", PASSWORD)
        found = {}
        console = watch_console(page)
        logged: dict[str, list[str]] = {}
        for path, text in admin_data(user):
            response = page.goto(f"{live_url}{path}")
            assert response.status == 200, path
            expect(page).to_have_title(re.compile(r"\| Clarion admin$"))
            if text:
                expect(page.locator("#content")).to_contain_text(text)
            if violations := serious_violations(page):
                found[path] = violations
            page.wait_for_load_state("networkidle")  # the icon, among the page's resources
            if console:
                logged[path], console[:] = list(console), []
        assert found == {}, "\n".join(f"{path}: {v['id']} {v['nodes']}" for path, vs in found.items() for v in vs)
        assert logged == {}
    finally:
        ctx.close()


@pytest.mark.parametrize("viewport", [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")])
def test_the_ai_configuration_environment_table_fits_the_screen(live_url, browser, viewport):
    from knowledge.selectors import get_ai_config

    ctx = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    ctx.set_default_timeout(10_000)
    try:
        get_user_model().objects.create_superuser("ida", "ida@example.com", PASSWORD)
        page = ctx.new_page()
        log_in(page, live_url, "ida", PASSWORD)
        page.goto(f"{live_url}/admin/knowledge/aiconfig/{get_ai_config().pk}/change/")
        table = page.locator("table.environment-settings")
        expect(table).to_contain_text("LLM_BASE_URL")
        right = table.evaluate("t => t.getBoundingClientRect().right")
        assert right <= viewport["width"], right
        # Every variable name is on screen (wrapped if need be), none cut off at the edge.
        for cell in table.locator("tbody th code").all():
            assert cell.evaluate("c => c.getBoundingClientRect().right") <= viewport["width"]
    finally:
        ctx.close()


def test_a_long_thread_and_list_with_their_loaders_and_a_source_page(live_url, context):
    from chat.models import Conversation, Message
    from knowledge.models import KnowledgeSource

    user, page = user_page(context, live_url, "lou")
    Conversation.objects.bulk_create(Conversation(owner=user, title=f"Older conversation {i}") for i in range(60))
    conversation = Conversation.objects.create(owner=user, title="A long one")
    made = Message.objects.bulk_create(
        Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"Message number {i}") for i in range(120)
    )
    Message.objects.filter(pk=made[-1].pk).update(in_reply_to=made[-2])
    page.goto(f"{live_url}/chat/{conversation.pk}/")
    wait_for_socket(page)
    expect(page.locator("#thread-earlier")).to_have_count(1)
    expect(page.locator("#conversation-list .list-more")).to_have_count(1)
    assert serious_violations(page) == []
    page.locator("#message-list").evaluate("l => { l.scrollTop = 0; }")
    expect(page.locator("#message-list .message")).to_have_count(100)
    assert serious_violations(page) == []

    source = KnowledgeSource.objects.create(
        source_id="docs/user-guide/setup.md",
        title="Setup",
        kind="markdown",
        content="# Setup\n\n## Install\n\nRun `up`.",
        summary="How to install.",
    )
    page.goto(f"{live_url}/kb/sources/{source.pk}/")
    expect(page.get_by_role("heading", level=1)).to_have_count(1)
    assert serious_violations(page) == []
