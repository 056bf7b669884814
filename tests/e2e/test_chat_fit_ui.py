"""The chat fits its device and its policy, in a real Chromium at 1280×800 and 390×844: a whole
walk (messages, a resized message box, cards answered by option, by checkbox and by typing) logs
no Content-Security-Policy violation; multi-select checkboxes sit beside their labels; the phone
layout shows no keyboard hints and the typed-answer placeholder whole."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat import services as chat_services
from chat.models import Conversation
from questions import services as question_services
from questions.models import QuestionGroup
from questions.schemas import AskUserArgs
from tests.e2e.conftest import log_in, wait_for_socket
from workspace.demo_content import seed_demo_workspace

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]

# Every violation the page reports, whatever the console says about it.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.violatedDirective + " " + (e.sample || "")));
"""


def signed_in(browser, viewport, base_url: str, username: str):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE, has_touch=viewport is PHONE)
    context.set_default_timeout(15_000)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    log_in(page, base_url, username, PASSWORD)
    return user, context, page, console


def open_conversation(page, base_url: str, conversation: Conversation) -> None:
    page.goto(f"{base_url}/chat/{conversation.pk}/")
    wait_for_socket(page)


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def ask(user, conversation, *, multi_select: bool = False, n: int = 1) -> QuestionGroup:
    message = chat_services.post_user_message(user=user, conversation_id=conversation.pk, content="which ones?")
    spec = {"question": "Which projects?", "multi_select": multi_select, "allow_custom": True,
            "options": [{"label": "Atlas", "description": "The launch"}, {"label": "Harbor"}, {"label": "Home"}]}  # fmt: skip
    args = AskUserArgs.model_validate({"questions": [spec] * n})
    return question_services.ask(
        user=user, conversation_id=conversation.pk, kind=QuestionGroup.Kind.ASK, specs=args.questions, tool_call_id="call_fit",
        tool_name="ask_user", payload={"in_reply_to_id": message.pk}, default_indexes=[[0]] * n,
    )  # fmt: skip


def resize_composer(page, by: int) -> float:
    """Drag the message box's resize handle down by `by` pixels; its new height."""
    box = page.locator("#composer-input").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3 + by, steps=5)
    page.mouse.up()
    height = page.locator("#composer-input").evaluate("el => el.getBoundingClientRect().height")
    assert height > box["height"] + by / 2, (box["height"], height)
    assert page.locator("#composer-input").get_attribute("style")  # the handle writes a style attribute
    return height


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_whole_walk_with_a_resized_composer_logs_no_policy_violation(live_url, browser, viewport):
    user, context, page, console = signed_in(browser, viewport, live_url, f"walk{viewport['width']}")
    try:
        seed_demo_workspace(user=user)
        open_conversation(page, live_url, Conversation.objects.create(owner=user, title="Walk"))
        height = resize_composer(page, 60)
        send(page, "What's in progress?")
        expect(page.locator(".message-assistant .message-body.markdown")).to_have_count(1, timeout=20_000)
        expect(page.locator(".message-assistant.streaming")).to_have_count(0, timeout=20_000)
        assert page.evaluate("window.__violations") == []
        # The fresh message box swapped in keeps the height the person gave it.
        assert abs(page.locator("#composer-input").evaluate("el => el.getBoundingClientRect().height") - height) <= 1

        send(page, "clean up my tasks")
        card = page.locator(".question-clarify .question-pending")
        expect(card).to_have_count(1, timeout=20_000)
        card.locator(".option").first.click()
        expect(page.locator(".question-clarify .question-progress")).to_contain_text("2 of 2")
        page.locator(".question-clarify .question-pending .custom-answer input").fill("only the old ones")
        page.locator(".question-clarify .question-pending .custom-answer button").click()
        expect(page.locator(".question-clarify .question-pending")).to_have_count(0, timeout=20_000)

        group = ask(user, Conversation.objects.create(owner=user, title="Several"), multi_select=True)
        open_conversation(page, live_url, group.conversation)
        resize_composer(page, 40)
        page.locator(".option-check input").nth(1).check()
        page.get_by_role("button", name="Confirm selection").click()
        expect(page.locator(".question-receipt.answered")).to_have_count(1)

        assert page.evaluate("window.__violations") == []
        assert console == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_multi_select_checkboxes_sit_beside_their_labels_with_the_focus_ring_on_the_row(live_url, browser, viewport):
    user, context, page, _ = signed_in(browser, viewport, live_url, f"multi{viewport['width']}")
    try:
        group = ask(user, Conversation.objects.create(owner=user, title="Several"), multi_select=True)
        open_conversation(page, live_url, group.conversation)
        options = page.locator(".option-check")
        expect(options).to_have_count(3)
        for i in range(3):
            box = options.nth(i).locator("input").bounding_box()
            key = options.nth(i).locator(".key").bounding_box()
            assert box["width"] < 30, box
            # On the label's line, before its key: not alone on a line above it.
            assert box["x"] + box["width"] <= key["x"] and abs((box["y"] + box["height"] / 2) - (key["y"] + key["height"] / 2)) < 12
        options.nth(0).locator("input").focus()
        page.keyboard.press("Tab")  # a keyboard focus, so :focus-visible applies
        page.keyboard.press("Shift+Tab")
        ring = options.nth(0).evaluate("el => getComputedStyle(el).outlineStyle")
        assert ring == "solid"
        assert options.nth(0).locator("input").evaluate("el => getComputedStyle(el).outlineStyle") == "none"
    finally:
        context.close()


TEXT_FITS = """el => {
  const style = getComputedStyle(el);
  const canvas = document.createElement("canvas").getContext("2d");
  canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return [canvas.measureText(el.placeholder).width, room];
}"""


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_keyboard_hints_only_in_the_keyboard_layout_and_the_answer_placeholder_whole(live_url, browser, viewport):
    user, context, page, _ = signed_in(browser, viewport, live_url, f"hints{viewport['width']}")
    try:
        group = ask(user, Conversation.objects.create(owner=user, title="Hints"), n=2)
        open_conversation(page, live_url, group.conversation)
        card = page.locator(".question-pending")
        hint = card.locator(".question-hint")
        placeholder = page.locator("#composer-input").get_attribute("placeholder")
        needed, room = card.locator(".custom-answer input").evaluate(TEXT_FITS)
        assert needed <= room, (needed, room)
        if viewport is PHONE:
            expect(hint).not_to_contain_text("Press a–c", use_inner_text=True)
            assert "Enter" not in placeholder, placeholder
        else:
            expect(hint).to_contain_text("Press a–c (or 1–3) to pick", use_inner_text=True)
            assert "Shift+Enter" in placeholder
        expect(hint).to_contain_text("“1a 2a”")
        expect(hint).to_contain_text("Anything else you send goes to the chat as a new message")
        # A fresh composer (after a message is sent) follows the layout too.
        send(page, "1a 2b")
        expect(page.locator(".question-pending")).to_have_count(0, timeout=20_000)
        assert ("Enter" in (page.locator("#composer-input").get_attribute("placeholder") or "")) is (viewport is DESKTOP)
    finally:
        context.close()
