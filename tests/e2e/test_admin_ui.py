"""The admin as an operator uses it (issue 8 items 22 and 24), in a real Chromium: pending
questions filtered by status with cancel/expire actions that continue the conversation exactly
as a skip or a timeout would, deactivating adapter tokens, and a conversation read as a transcript."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat import services as chat_services
from chat.models import Message
from knowledge import services as knowledge_services
from knowledge.models import AdapterToken
from questions.models import PendingQuestion
from tests.e2e.conftest import log_in, wait_for_socket
from workspace.demo_content import seed_demo_workspace

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"


def admin_page(context, base_url: str):
    get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    page = context.new_page()
    log_in(page, base_url, "root", PASSWORD)
    return page


def user_asked_to_clarify(context, base_url: str, username: str):
    """A user whose offline "clean up my tasks" is waiting on its clarification card."""
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    seed_demo_workspace(user=user)
    page = context.new_page()
    log_in(page, base_url, username, PASSWORD)
    wait_for_socket(page)
    page.fill("#composer-input", "clean up my tasks")
    page.keyboard.press("Enter")
    expect(page.locator(".question-clarify .question-pending")).to_have_count(1, timeout=20_000)
    return user, page


def run_action(page, base_url: str, question_text: str, action_label: str) -> None:
    page.goto(f"{base_url}/admin/questions/pendingquestion/")
    row = page.locator("#result_list tbody tr", has_text=question_text).first
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", label=action_label)
    page.locator(".actions button[type=submit]").click()


def test_pending_questions_filter_and_cancel_continues_the_conversation(live_url, browser):
    context, admin_context = (browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(2))
    context.set_default_timeout(10_000)
    admin_context.set_default_timeout(10_000)
    try:
        user, chat = user_asked_to_clarify(context, live_url, "uma")
        first = PendingQuestion.objects.get(user=user, position=0)
        answered_elsewhere = PendingQuestion.objects.filter(user=user, position=1).values_list("question", flat=True).get()
        admin = admin_page(admin_context, live_url)

        # Pending is the default filter: both pending questions, nothing resolved.
        admin.goto(f"{live_url}/admin/questions/pendingquestion/")
        expect(admin.locator("#changelist-filter li.selected", has_text="Pending")).to_have_count(1)
        expect(admin.locator("#result_list tbody tr")).to_have_count(2)
        expect(admin.locator("#result_list")).to_contain_text(answered_elsewhere)

        run_action(admin, live_url, first.question, "Cancel the selected questions (and the rest of their group)")
        expect(admin.locator(".messagelist")).to_contain_text("Cancelled 2 questions.")
        expect(admin.locator("#result_list tbody tr")).to_have_count(0)
        admin.locator("#changelist-filter a[href='?status=cancelled']").click()
        expect(admin.locator("#changelist-filter li.selected", has_text="Cancelled")).to_have_count(1)
        expect(admin.locator("#result_list tbody tr")).to_have_count(2)

        # The person's tab: the card shows its receipt and the turn goes on, as after a skip.
        expect(chat.locator(".question-clarify .question-pending")).to_have_count(0)
        expect(chat.locator(".question-clarify .cancelled").first).to_be_visible()
        expect(chat.locator(".message-derived .message-meta")).to_contain_text("Clarification skipped")
        assert PendingQuestion.objects.filter(user=user, status="cancelled").count() == 2
        # ... and the turn the admin's action started runs (it used to fail: its database hops
        # went to the admin view's thread after the view had returned).
        expect(chat.locator("#message-list .message-assistant:not(.streaming)").last).to_contain_text("task", timeout=20_000)
        skipped = Message.objects.filter(conversation__owner=user, role="user").latest("id")  # the skip, as a message
        assert skipped.metadata.get("skipped") and Message.objects.filter(in_reply_to=skipped, role="assistant").exists()
    finally:
        context.close()
        admin_context.close()


def test_expire_applies_the_default_as_a_timeout_would(live_url, browser):
    context, admin_context = (browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(2))
    context.set_default_timeout(10_000)
    admin_context.set_default_timeout(10_000)
    try:
        user, chat = user_asked_to_clarify(context, live_url, "val")
        first = PendingQuestion.objects.get(user=user, position=0)
        admin = admin_page(admin_context, live_url)
        run_action(admin, live_url, first.question, "Expire the selected questions now (apply their default, as on timeout)")
        expect(admin.locator(".messagelist")).to_contain_text("Expired 1 question")
        first.refresh_from_db()
        assert first.status == PendingQuestion.Status.TIMED_OUT
        # The group moved on to its second question, whose clock now runs, in the person's tab too.
        expect(chat.locator(".question-clarify .timed-out").first).to_be_visible()
        expect(chat.locator(".question-clarify .question-progress")).to_contain_text("2 of 2")
        second = PendingQuestion.objects.get(user=user, position=1)
        assert second.status == PendingQuestion.Status.PENDING and second.deadline is not None
    finally:
        context.close()
        admin_context.close()


def test_deactivate_adapter_tokens(live_url, browser_context):
    keep, keep_raw = knowledge_services.create_adapter_token(name="keep")
    drop, drop_raw = knowledge_services.create_adapter_token(name="drop")
    admin = admin_page(browser_context, live_url)
    admin.goto(f"{live_url}/admin/knowledge/adaptertoken/")
    admin.locator("#result_list tbody tr", has_text="drop").locator("input.action-select").check()
    admin.select_option("select[name=action]", label="Deactivate the selected tokens (requests with them are refused)")
    admin.locator(".actions button[type=submit]").click()
    expect(admin.locator(".messagelist")).to_contain_text("Deactivated 1 token.")
    assert AdapterToken.objects.get(pk=drop.pk).is_active is False
    assert AdapterToken.objects.get(pk=keep.pk).is_active is True
    payload = {"message": "hi", "conversation": []}
    refused = admin.request.post(
        f"{live_url}/api/v1/reply",
        data=json.dumps(payload),
        headers={"Authorization": f"Bearer {drop_raw}", "Content-Type": "application/json"},
    )
    assert refused.status == 401


def test_conversation_admin_is_a_readable_transcript(live_url, browser_context):
    user = get_user_model().objects.create_user(username="wes", password=PASSWORD)
    conversation = chat_services.start_conversation(user=user)
    request = chat_services.post_user_message(user=user, conversation_id=conversation.pk, content="what is in progress?")
    big = json.dumps({"tasks": [{"id": i, "title": f"Task number {i}", "status": "in_progress"} for i in range(200)]})
    calls = [{"id": "c1", "name": "query_tasks", "arguments": json.dumps({"status": "in_progress", "limit": 50})}]
    chat_services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content="", tool_calls=calls, metadata={}
    )
    chat_services.save_tool_result(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, tool_call_id="c1", tool_name="query_tasks", content=big, is_error=False
    )
    chat_services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content="You have **200** tasks in progress.", tool_calls=[],
        metadata={"engine": "offline", "seconds": 0.5},
    )  # fmt: skip

    admin = admin_page(browser_context, live_url)
    admin.goto(f"{live_url}/admin/chat/conversation/{conversation.pk}/change/")
    transcript = admin.locator(".clarion-transcript")
    expect(transcript.locator(".transcript-entry")).to_have_count(4)
    expect(transcript.locator(".transcript-user")).to_contain_text("what is in progress?")
    expect(transcript.locator(".transcript-assistant strong", has_text="200")).to_be_visible()
    expect(transcript.locator(".transcript-tool")).to_contain_text("Tool result: query_tasks")
    raw = transcript.locator(".transcript-tool pre")
    expect(raw).to_be_hidden()  # the raw JSON waits behind a disclosure
    height = admin.evaluate("document.documentElement.scrollHeight")
    assert height < 2000, height
    transcript.locator(".transcript-tool summary").click()
    expect(raw).to_be_visible()
    assert Message.objects.filter(conversation=conversation).count() == 4


def test_ai_configuration_shows_where_values_come_from_and_edits_the_chat_prompts(start_server, fake_model, browser_context):
    from chat.prompts import SYSTEM_PROMPT
    from knowledge.selectors import get_ai_config
    from questions.clarification import ANALYSIS_PROMPT
    from tests.fake_openai import Reply

    server = start_server(model=fake_model, CLARIFICATION_ENABLED="false", QUESTION_DETECTOR_ENABLED="false")
    config = get_ai_config()
    admin = admin_page(browser_context, server.url)
    admin.goto(f"{server.url}/admin/knowledge/aiconfig/{config.pk}/change/")

    # Deployment values are shown read-only with their variable names; the API key never.
    environment = admin.locator("table.environment-settings")
    expect(environment.locator("tr", has_text="LLM_BASE_URL")).to_contain_text(fake_model.base_url)
    expect(environment.locator("tr", has_text="LLM_TIMEOUT_SECONDS")).to_be_visible()
    expect(environment.locator("tr", has_text="LLM_API_KEY")).to_contain_text("set (hidden)")
    expect(environment).not_to_contain_text("sk-e2e")

    prompt = admin.locator("#id_chat_system_prompt")
    expect(prompt).to_have_value(SYSTEM_PROMPT)
    expect(admin.locator("#id_clarification_prompt")).to_have_value(ANALYSIS_PROMPT)

    # An unknown placeholder would break every turn: refused with the allowed names, nothing saved.
    prompt.fill("You are Clarion. Today is {today}. Workspace: {snapshot}. User: {username}")
    admin.locator("input[name=_continue]").click()
    expect(admin.locator(".errorlist")).to_contain_text("unknown placeholder {username}")
    config.refresh_from_db()
    assert config.chat_system_prompt == SYSTEM_PROMPT

    admin.locator("#id_chat_system_prompt").fill("You are Pirate Clarion. Today is {today}.\n{snapshot}")
    admin.locator("input[name=_continue]").click()
    expect(admin.locator(".messagelist")).to_contain_text("was changed successfully")
    config.refresh_from_db()
    assert config.chat_system_prompt.startswith("You are Pirate Clarion.")

    # The next chat turn sends the edited prompt to the model.
    fake_model.default = lambda body: Reply.text("Arr.")
    user = get_user_model().objects.create_user(username="yan", password=PASSWORD)
    chat = browser_context.browser.new_context()
    try:
        page = chat.new_page()
        log_in(page, server.url, "yan", PASSWORD)
        wait_for_socket(page)
        page.fill("#composer-input", "hello")
        page.keyboard.press("Enter")
        expect(page.locator(".message-assistant .message-body")).to_have_text("Arr.", timeout=20_000)
    finally:
        chat.close()
    system = fake_model.requests[-1]["messages"][0]
    told = re.match(r"You are Pirate Clarion\. Today is (\w+), (\d{4}-\d\d-\d\d)\.", system["content"])
    assert system["role"] == "system" and told, system["content"][:80]
    assert told[1] == f"{dt.date.fromisoformat(told[2]):%A}"  # the date with its own weekday

    # Reset to default puts the built-in text back.
    admin.locator("#id_reset_chat_system_prompt").check()
    admin.locator("input[name=_continue]").click()
    expect(admin.locator("#id_chat_system_prompt")).to_have_value(SYSTEM_PROMPT)
    config.refresh_from_db()
    assert config.chat_system_prompt == SYSTEM_PROMPT
    assert user.conversations.count() == 1
