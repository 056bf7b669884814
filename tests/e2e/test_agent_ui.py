import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.e2e.conftest import DaphneServer, log_in, start_conversation
from tests.fake_openai import FakeOpenAI, Reply
from workspace.demo_content import seed_demo_workspace
from workspace.models import Task

pytestmark = pytest.mark.e2e


def test_offline_engine_streams_the_in_progress_tasks(live_url, browser_context):
    user = get_user_model().objects.create_user(username="gail", password="correct-horse")
    seed_demo_workspace(user=user)
    in_progress = list(Task.objects.filter(owner=user, status="in_progress").values_list("title", flat=True))
    page = browser_context.new_page()
    log_in(page, live_url, "gail", "correct-horse")
    start_conversation(page, live_url)
    expect(page.locator("#engine-status")).to_contain_text("Offline engine")

    page.fill("#composer-input", "show my in-progress tasks")
    page.keyboard.press("Enter")

    # Streaming: the placeholder with its typing indicator shows partial text before the end.
    streaming = page.locator(".message-assistant.streaming .stream-body")
    expect(streaming).not_to_be_empty()
    expect(page.locator(".message-assistant.streaming")).to_have_count(0, timeout=15_000)
    answer = page.locator(".message-assistant .markdown").last
    expect(answer).to_contain_text(f"Here are your in-progress tasks ({len(in_progress)})")
    for title in in_progress:
        expect(answer.locator("li", has_text=title)).to_have_count(1)
    expect(page.locator(".tool-activity")).to_contain_text("query_tasks(status: in_progress")


@pytest.fixture
def model_server(daphne_server):
    """A second Daphne on the same test database, talking to a fake model over real HTTP."""
    with FakeOpenAI(default=None) as fake:
        server = DaphneServer(
            database_name=daphne_server.env["DATABASE_NAME"],
            extra_env={
                "LLM_BASE_URL": fake.base_url,
                "LLM_API_KEY": "sk-e2e",
                "LLM_MODEL": "fake-model",
                "LLM_MAX_RETRIES": "0",
                "CLARIFICATION_ENABLED": "false",
                "QUESTION_DETECTOR_ENABLED": "false",
            },
        ).start()
        yield server, fake
        server.stop()


def test_model_failure_shows_an_error_and_retry_recovers(live_url, model_server, browser_context):
    server, fake = model_server
    get_user_model().objects.create_user(username="hank", password="correct-horse")
    fake.script(Reply.error(503, "overloaded"), Reply.text("Back **online**."))
    page = browser_context.new_page()
    log_in(page, server.url, "hank", "correct-horse")
    start_conversation(page, server.url)
    expect(page.locator("#engine-status")).to_contain_text("fake-model")

    page.fill("#composer-input", "are you there?")
    page.get_by_role("button", name="Send").click()

    error = page.locator(".message-error")
    expect(error).to_contain_text("The model endpoint failed (503)")
    error.get_by_role("button", name="Retry").click()
    expect(error).to_have_count(0)
    expect(page.locator(".message-assistant .markdown strong")).to_have_text("online")
    # The user's message was never lost.
    expect(page.locator(".message-user .message-body")).to_have_text("are you there?")
