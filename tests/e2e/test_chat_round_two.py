"""What ChatGPT and Open WebUI users reach for, in a real Chromium at 1280×800 and 390×844: edit and
resend, highlighted code with copy buttons, drafts, a remembered theme, Markdown export, keyboard
shortcuts, pinning, and titles that follow the conversation — each with a console free of errors
(the Content-Security-Policy's included)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from chat.models import Conversation, Message
from tests.e2e.conftest import log_in, wait_for_socket
from tests.fake_openai import Reply

pytestmark = pytest.mark.e2e

PASSWORD = "correct-horse"
MODEL_ENV = {"CLARIFICATION_ENABLED": "false", "QUESTION_DETECTOR_ENABLED": "false", "QUESTION_GUESSER_ENABLED": "false"}
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]


class Session:
    """A signed-in browser context of its own, and the errors its pages log."""

    def __init__(self, browser, viewport, base_url: str, username: str, **options):
        self.user = get_user_model().objects.create_user(username=username, password=PASSWORD)
        phone = viewport is PHONE
        self.context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone, **options)
        self.context.set_default_timeout(15_000)
        self.base_url = base_url
        self.errors: list[str] = []
        self.page = self.new_page()
        log_in(self.page, base_url, username, PASSWORD)

    def new_page(self):
        page = self.context.new_page()
        page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        return page

    def open(self, conversation: Conversation, page=None) -> None:
        page = page or self.page
        page.goto(f"{self.base_url}/chat/{conversation.pk}/")
        wait_for_socket(page)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def session(browser):
    opened: list[Session] = []

    def start(viewport, base_url: str, username: str, **options) -> Session:
        opened.append(Session(browser, viewport, base_url, username, **options))
        return opened[-1]

    yield start
    for s in opened:
        s.close()


def conversation_of(user, title: str = "New conversation", *, text: str | None = None, days_ago: int = 0) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title=title)
    if text:  # answered, so that opening it starts no turn
        asked = Message.objects.create(conversation=conversation, role=Message.Role.USER, content=text)
        Message.objects.create(conversation=conversation, role=Message.Role.ASSISTANT, in_reply_to=asked, content="Hi.")
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - dt.timedelta(days=days_ago))
    return conversation


def send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.keyboard.press("Enter")


def finished_replies(page):
    return page.locator("#message-list .message-assistant:not(.streaming) .message-body.markdown")


def list_titles(page) -> list[str]:
    return page.locator("#conversation-list .conversation-link").all_text_contents()


# --- 7. edit and resend the last message ---------------------------------------------------------


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_editing_the_last_message_replaces_the_reply_after_it(live_url, session, viewport):
    s = session(viewport, live_url, f"edit{viewport['width']}")
    page = s.page
    conversation = conversation_of(s.user)
    s.open(conversation)
    send(page, "What can you do?")
    expect(finished_replies(page)).to_have_count(1, timeout=30_000)
    first_reply = page.locator("#message-list .message-assistant").get_attribute("id")
    send(page, "hello")
    expect(finished_replies(page)).to_have_count(2, timeout=30_000)

    # Only the last message the person typed offers Edit.
    users = page.locator("#message-list .message-user")
    expect(users.nth(0).get_by_role("button", name="Edit this message")).to_be_hidden()
    users.nth(1).get_by_role("button", name="Edit this message").click()
    field = users.nth(1).get_by_role("textbox", name="Edit your message")
    expect(field).to_be_focused()
    expect(field).to_have_value("hello")
    # Cancel (Esc) leaves it as it was.
    field.press("Escape")
    expect(field).to_be_hidden()
    expect(users.nth(1).locator(".message-body")).to_have_text("hello")

    users.nth(1).get_by_role("button", name="Edit this message").click()
    field.fill("How many tasks are left to do?")
    field.press("Enter")
    expect(users.nth(1).locator(".message-body")).to_have_text("How many tasks are left to do?")
    expect(users.nth(1).locator(".message-meta")).to_contain_text("edited")
    expect(page.locator("#message-list .message-assistant.streaming")).to_have_count(0, timeout=30_000)
    expect(finished_replies(page)).to_have_count(2, timeout=30_000)
    expect(finished_replies(page).last).to_contain_text("task")
    expect(page.locator(f"#{first_reply}")).to_have_count(1)  # the earlier exchange stays
    expect(users).to_have_count(2)
    saved = list(Message.objects.filter(conversation=conversation, role="user").order_by("id").values_list("content", flat=True))
    assert saved == ["What can you do?", "How many tasks are left to do?"]
    replies = Message.objects.filter(conversation=conversation, role="assistant").exclude(content="")
    assert "offline engine" not in replies.order_by("id").last().content
    assert replies.count() == 2
    assert s.errors == []


# --- 8. code blocks --------------------------------------------------------------------------------

CODE = 'def launch(venue):\n    return f"Book {venue}"  # today\n'
REPLY_WITH_CODE = f"Use this **helper**:\n\n```python\n{CODE}```\n\nThen call it."


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_code_blocks_are_highlighted_and_copied_and_copy_takes_the_markdown(start_server, fake_model, session, viewport):
    server = start_server(model=fake_model, **MODEL_ENV)
    fake_model.script(Reply.text(REPLY_WITH_CODE))
    s = session(viewport, server.url, f"code{viewport['width']}", permissions=["clipboard-read", "clipboard-write"])
    page = s.page
    s.open(conversation_of(s.user))
    send(page, "give me a helper")
    reply = page.locator("#message-list .message-assistant:not(.streaming)")
    expect(reply).to_have_count(1, timeout=30_000)

    block = reply.locator(".code-block")
    expect(block).to_have_count(1)
    expect(block.locator(".code-block-head")).to_contain_text("python")
    keyword = block.locator("pre .hl-keyword").first
    expect(keyword).to_have_text("def")
    colour = keyword.evaluate("el => getComputedStyle(el).color")
    plain = block.locator("pre code").evaluate("el => getComputedStyle(el).color")
    assert colour != plain
    expect(block.locator("pre .hl-string").first).to_be_visible()
    expect(block.locator("pre .hl-comment")).to_have_text("# today")

    block.get_by_role("button", name="Copy code").click()
    expect(block.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == CODE

    # The message's own Copy takes the Markdown as written, not the page's text.
    reply.get_by_role("button", name="Copy this message").click()
    expect(reply.get_by_role("button", name="Copy this message")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == REPLY_WITH_CODE
    assert s.errors == []


# --- 9. drafts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_drafts_are_kept_per_conversation_until_sent(live_url, session, viewport):
    s = session(viewport, live_url, f"draft{viewport['width']}")
    page = s.page
    first = conversation_of(s.user, "First", text="hello")
    second = conversation_of(s.user, "Second", text="hello")
    s.open(first)
    page.locator("#composer-input").press_sequentially("half a thought about")
    s.open(second)
    expect(page.locator("#composer-input")).to_have_value("")
    page.fill("#composer-input", "something else\non two lines")
    page.reload()
    wait_for_socket(page)
    expect(page.locator("#composer-input")).to_have_value("something else\non two lines")
    s.open(first)
    expect(page.locator("#composer-input")).to_have_value("half a thought about")

    page.locator("#composer-input").press("Enter")
    expect(page.locator("#message-list .message-user .message-body").last).to_have_text("half a thought about")
    expect(page.locator("#composer-input")).to_have_value("")
    expect(finished_replies(page)).to_have_count(2, timeout=30_000)
    page.reload()
    wait_for_socket(page)
    expect(page.locator("#composer-input")).to_have_value("")
    s.open(second)
    expect(page.locator("#composer-input")).to_have_value("something else\non two lines")
    assert s.errors == []


# --- 10. theme ---------------------------------------------------------------------------------------


def background_is_dark(page) -> bool:
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    channels = [int(c) for c in background.removeprefix("rgb(").removesuffix(")").split(",")[:3]]
    return sum(channels) / 3 < 60


def theme_cookie_is(s: Session, value: str, timeout: float = 10.0) -> None:
    """Chromium stores a cookie the page writes a moment after the write returns: a reload at
    once, on a busy machine, can still go without it (a person is never that quick)."""
    deadline = time.monotonic() + timeout
    while {c["name"]: c["value"] for c in s.context.cookies()}.get("theme") != value:
        assert time.monotonic() < deadline, f"the theme cookie never became {value!r}"
        s.page.wait_for_timeout(50)


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_theme_switch_is_remembered_and_drawn_from_the_first_paint(live_url, session, viewport):
    s = session(viewport, live_url, f"theme{viewport['width']}", color_scheme="light")
    page = s.page
    wait_for_socket(page)
    assert not background_is_dark(page)
    theme = page.get_by_role("combobox", name="Theme")
    expect(theme).to_have_value("system")
    theme.select_option("dark")
    assert background_is_dark(page)

    # The server draws the next page dark already: the document arrives with the theme on <html>.
    theme_cookie_is(s, "dark")
    response = page.reload()
    assert '<html lang="en" data-theme="dark">' in response.text()
    wait_for_socket(page)
    assert background_is_dark(page)
    expect(page.get_by_role("combobox", name="Theme")).to_have_value("dark")
    # Every later page, the login page included.
    page.goto(f"{live_url}/login/")
    assert background_is_dark(page)

    page.go_back()
    page.get_by_role("combobox", name="Theme").select_option("system")
    assert not background_is_dark(page)  # this browser's system setting is light
    page.emulate_media(color_scheme="dark")
    assert background_is_dark(page)
    page.get_by_role("combobox", name="Theme").select_option("light")
    assert not background_is_dark(page)
    theme_cookie_is(s, "light")
    page.reload()
    assert not background_is_dark(page)
    assert s.errors == []


# --- 11. export ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_export_downloads_the_conversation_as_markdown(live_url, session, viewport, tmp_path: Path):
    s = session(viewport, live_url, f"export{viewport['width']}")
    page = s.page
    s.open(conversation_of(s.user))
    send(page, "What can you do?")
    expect(finished_replies(page)).to_have_count(1, timeout=30_000)
    with page.expect_download() as download:
        page.get_by_role("link", name="Export").click()
    assert download.value.suggested_filename == "what-can-you-do.md"
    path = tmp_path / "export.md"
    download.value.save_as(path)
    text = path.read_text()
    assert text.startswith("# What can you do\n")
    assert "**You** · " in text and "\nWhat can you do?\n" in text
    assert "**Assistant** · " in text and "offline engine" in text
    assert s.errors == []


# --- 12. keyboard --------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_keyboard_shortcuts_and_their_sheet(start_server, session, viewport):
    server = start_server(OFFLINE_STREAM_DELAY="0.3")
    s = session(viewport, server.url, f"keys{viewport['width']}")
    page = s.page
    conversation = conversation_of(s.user, "Keys", text="hello")
    s.open(conversation)
    page.locator("#message-list").click()  # somewhere that is not a field

    page.keyboard.press("?")
    sheet = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(sheet).to_be_visible()
    expect(sheet).to_contain_text("New conversation")
    expect(sheet).to_contain_text("Stop generating")
    page.keyboard.press("Escape")
    expect(sheet).to_be_hidden()
    # The header's button opens it too (a phone has no "?" key at hand).
    page.get_by_role("button", name="Keyboard shortcuts").click()
    expect(sheet).to_be_visible()
    sheet.get_by_role("button", name="Close").click()
    expect(sheet).to_be_hidden()

    page.locator("#message-list").click()
    page.keyboard.press("/")
    composer = page.locator("#composer-input")
    expect(composer).to_be_focused()
    # Typing is never taken for a shortcut.
    page.keyboard.type("n/? is text")
    expect(composer).to_have_value("n/? is text")
    assert page.url == f"{server.url}/chat/{conversation.pk}/"
    expect(sheet).to_be_hidden()

    # Esc stops the reply being written, even from the message box.
    composer.fill("What can you do?")
    composer.press("Enter")
    expect(page.locator(".message.streaming .stream-body")).not_to_have_text("", timeout=20_000)
    composer.press("Escape")
    expect(page.locator(".stopped-mark")).to_have_count(1, timeout=20_000)
    assert Message.objects.filter(conversation=conversation, role="assistant", metadata__stopped=True).count() == 1

    page.locator("#message-list").click()
    page.keyboard.press("n")
    page.wait_for_url(lambda url: url != f"{server.url}/chat/{conversation.pk}/" and "/chat/" in url)
    wait_for_socket(page)
    expect(page.get_by_role("heading", level=1)).to_have_text("New conversation")
    assert s.errors == []


# --- 13. pinning, and the list following activity ------------------------------------------------------


def test_a_rename_and_a_delete_show_in_every_tab(live_url, session):
    """Three tabs: the one that renames and deletes, one on the same conversation, one on another."""
    s = session(DESKTOP, live_url, "tabs")
    alpha = conversation_of(s.user, "Alpha", text="hello")
    beta = conversation_of(s.user, "Beta", text="hello", days_ago=1)
    same, other = s.new_page(), s.new_page()
    s.open(alpha, same)
    s.open(beta, other)
    s.open(alpha)
    page = s.page

    page.get_by_role("button", name="Rename").click()
    page.fill("#rename-input", "Launch plan")
    page.get_by_role("button", name="Save").click()
    expect(same.locator("#conversation-header .conversation-title")).to_have_text("Launch plan")
    expect(same).to_have_title("Launch plan · Clarion")
    expect(other.locator(f"#conv-{alpha.pk}")).to_have_text("Launch plan")
    expect(other.locator("#conversation-list .current")).to_have_text("Beta")  # each tab marks its own

    page.get_by_role("button", name="Pin", exact=True).click()
    expect(same.get_by_role("button", name="Unpin")).to_have_attribute("aria-pressed", "true")

    page.get_by_role("button", name="Delete", exact=True).click()
    page.locator("#delete-dialog").get_by_role("button", name="Delete").click()
    expect(same.locator("#composer-error")).to_have_text("This conversation was deleted.")
    expect(other.locator(f"#conv-{alpha.pk}")).to_have_count(0)
    expect(other.locator("#conversation-list .current")).to_have_text("Beta")
    assert not Conversation.objects.filter(pk=alpha.pk).exists()
    assert s.errors == []


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_pinned_conversations_stay_on_top_and_activity_moves_a_conversation_up_in_every_tab(live_url, session, viewport):
    s = session(viewport, live_url, f"pin{viewport['width']}")
    page = s.page
    oldest = conversation_of(s.user, "Oldest", text="hello", days_ago=3)
    older = conversation_of(s.user, "Older", text="hello", days_ago=2)
    recent = conversation_of(s.user, "Recent", text="hello", days_ago=1)
    # A second tab shows another conversation; its list follows what happens in the first.
    other = s.new_page()
    s.open(recent, other)
    s.open(oldest)
    pin = page.get_by_role("button", name="Pin", exact=True)
    expect(pin).to_have_attribute("aria-pressed", "false")
    pin.click()
    expect(page.get_by_role("button", name="Unpin")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#conversation-list .conversation-day").first).to_have_text("Pinned")
    # (Signing in opened an empty conversation: it is today's.)
    assert list_titles(page) == ["Oldest", "New conversation", "Recent", "Older"]
    expect(page.locator(f"#conv-{oldest.pk}")).to_have_class("conversation-link current")
    expect(other.locator("#conversation-list .conversation-day").first).to_have_text("Pinned")
    assert list_titles(other) == ["Oldest", "New conversation", "Recent", "Older"]
    expect(other.locator("#conversation-list .current")).to_have_text("Recent")

    # A message in the first tab moves "Older" up in both.
    s.open(older)
    send(page, "What's in progress?")
    expect(page.locator("#conversation-list .conversation-link").nth(1)).to_have_text("Older")
    expect(other.locator("#conversation-list .conversation-link").nth(1)).to_have_text("Older")
    assert list_titles(page) == list_titles(other) == ["Oldest", "Older", "New conversation", "Recent"]
    # Each tab still marks its own conversation.
    expect(page.locator("#conversation-list .current")).to_have_text("Older")
    expect(other.locator("#conversation-list .current")).to_have_text("Recent")
    expect(finished_replies(page)).to_have_count(2, timeout=30_000)

    # After a reload too, and unpinning puts it back among the days.
    page.reload()
    wait_for_socket(page)
    assert list_titles(page) == ["Oldest", "Older", "New conversation", "Recent"]
    s.open(oldest)
    page.get_by_role("button", name="Unpin").click()
    expect(page.get_by_role("button", name="Pin", exact=True)).to_be_visible()
    expect(page.locator("#conversation-list .conversation-day", has_text="Pinned")).to_have_count(0)
    assert list_titles(page) == ["Older", "New conversation", "Recent", "Oldest"]
    assert s.errors == []


# --- 16 and 17. the Delete dialog and the tab's title follow the title ---------------------------------


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_delete_dialog_names_the_title_after_the_first_message_and_a_rename(live_url, session, viewport):
    s = session(viewport, live_url, f"dialog{viewport['width']}")
    page = s.page
    s.open(conversation_of(s.user))
    send(page, "Plan the launch party")
    expect(page.get_by_role("heading", level=1)).to_have_text("Plan the launch party")
    page.get_by_role("button", name="Delete", exact=True).click()
    dialog = page.get_by_role("dialog", name="Delete this conversation?")
    expect(dialog).to_contain_text("“Plan the launch party” and all its messages")
    dialog.get_by_role("button", name="Cancel").click()

    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Conversation title").fill("Party")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Party")
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(dialog).to_contain_text("“Party” and all its messages")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert s.errors == []


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_tab_title_follows_the_conversation_title(live_url, session, viewport):
    s = session(viewport, live_url, f"tab{viewport['width']}")
    page = s.page
    s.open(conversation_of(s.user))
    expect(page).to_have_title("New conversation · Clarion")
    send(page, "Plan the launch party")
    expect(page).to_have_title("Plan the launch party · Clarion")
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Conversation title").fill("Party")
    page.keyboard.press("Enter")
    expect(page).to_have_title("Party · Clarion")
    assert s.errors == []
