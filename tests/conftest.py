from __future__ import annotations

import datetime as dt
import json
import zoneinfo

import channels.db
import django.db
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from tests.fake_openai import fake_openai  # noqa: F401  (fixture)
from workspace import services as workspace_services


@pytest.fixture
def model_endpoint(settings, fake_openai):
    """Clarion pointed at the fake OpenAI-compatible server, through the real SDK.

    Only chat calls are expected: the question features' extra structured calls (clarification,
    detector, guesser) are off unless a test scripts them.
    """
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_API_KEY = "sk-test-not-a-real-key"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_TIMEOUT_SECONDS = 1.0
    settings.LLM_MAX_RETRIES = 1
    settings.CLARIFICATION_ENABLED = settings.QUESTION_DETECTOR_ENABLED = settings.QUESTION_GUESSER_ENABLED = False
    fake_openai.default = None  # an unscripted call is a test bug: answer 500
    return fake_openai


@pytest.fixture
def make_user(db):
    def make(username: str, password: str = "pw-" + "x" * 8):
        return get_user_model().objects.create_user(username=username, password=password)

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.fixture
def charlie(make_user):
    return make_user("charlie")


@pytest.fixture(autouse=True)
def _hops_return_their_connections():
    """Every database hop returns its pooled connection when it ends, as in a server. Channels'
    own test communicators switch that off while they run and, used concurrently, can leave it
    off (see tests/communicators.py): a test that does so fails here instead of leaking."""
    yield
    assert channels.db.close_old_connections is django.db.close_old_connections, (
        "database hops no longer return their connections: use tests.communicators, not channels.testing"
    )


@pytest.fixture(scope="session", autouse=True)
def _close_lock_connections_before_dropping_the_test_database(django_db_setup):
    yield
    from chat.locks import discard_idle_connections

    discard_idle_connections()


def moments_over_days(n: int, *, days: int) -> list[dt.datetime]:
    """`n` moments, newest first, from now back into the local day `days` days ago, evenly spaced:
    today and each of those days has at least one whatever the time of day (with `n` > `days`)."""
    now = timezone.now()
    earliest = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=days)
    step = (now - earliest) / n
    return [now - i * step for i in range(n)]


# UTC+14 and UTC-11: 25 hours apart, so one of the two is always on another date than UTC.
AHEAD, BEHIND = "Pacific/Kiritimati", "Pacific/Pago_Pago"


def at(day: dt.date, hour: int, zone: str) -> dt.datetime:
    """That hour of that day in `zone`."""
    return dt.datetime.combine(day, dt.time(hour), tzinfo=zoneinfo.ZoneInfo(zone))


def zone_whose_date_is_not_utcs() -> tuple[str, dt.date]:
    """A zone whose calendar date differs from the server's (UTC) right now, and its date."""
    utc_today = timezone.localdate(timezone=dt.timezone.utc)
    for name in (AHEAD, BEHIND):
        today = timezone.localdate(timezone=zoneinfo.ZoneInfo(name))
        if today != utc_today:
            return name, today
    raise AssertionError("unreachable: the two zones are 25 hours apart")


async def query_tasks_as(user, arguments: dict, *, time_zone: str = "UTC"):
    """The query_tasks tool as a model calls it for `user` (in a conversation of theirs): its outcome."""
    return await tool_as(user, "query_tasks", arguments, time_zone=time_zone)


async def tool_as(user, name: str, arguments: dict, *, time_zone: str = "UTC"):
    """A query tool as a model calls it for `user` (in a conversation of theirs): its outcome."""
    from channels.db import database_sync_to_async

    from chat import services, tools
    from llm import ToolCall

    conversation = await database_sync_to_async(services.start_conversation)(user=user)
    ctx = tools.ToolContext(user=user, conversation_id=conversation.pk, tool_call_id="c1", in_reply_to_id=0,
                            timeouts=None, time_zone=time_zone)  # fmt: skip
    return await tools.execute(ctx=ctx, call=ToolCall(id="c1", name=name, arguments=json.dumps(arguments)))


def build_workspace(user, *, tag: str) -> dict:
    """A small workspace whose every title carries `tag`, so leaks between users are visible."""
    atlas = workspace_services.create_project(user=user, name=f"Atlas {tag}")
    harbor = workspace_services.create_project(user=user, name=f"Harbor {tag}")
    tasks = [
        workspace_services.create_task(user=user, title=f"design homepage {tag}", project_id=atlas.pk, status="todo"),
        workspace_services.create_task(user=user, title=f"write copy {tag}", project_id=atlas.pk, status="in_progress"),
        workspace_services.create_task(user=user, title=f"ship beta {tag}", project_id=harbor.pk, status="completed"),
        workspace_services.create_task(user=user, title=f"buy milk {tag}", status="todo"),
    ]
    notes = [
        workspace_services.create_note(
            user=user, title=f"Launch plan {tag}", content="The launch is planned for March.", project_id=atlas.pk
        ),
        workspace_services.create_note(user=user, title=f"Groceries {tag}", content="Milk, eggs and bread."),
    ]
    return {"projects": [atlas, harbor], "tasks": tasks, "notes": notes}


@pytest.fixture
def three_workspaces(alice, bob, charlie):
    """Alice, Bob and Charlie each own a workspace (the healthchecks pattern)."""
    return {user.username: build_workspace(user, tag=user.username) for user in (alice, bob, charlie)}


def pytest_collection_modifyitems(config, items):
    # The browser tests share one Playwright session, whose event loop lives on the main thread
    # until the session ends; running them last keeps it away from the async tests.
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)
