"""The task added longest ago, or last ("what's my oldest open task?", "my latest task"): the
selector's order, the query tool as a model calls it, and the offline engine through a real
websocket."""

import json

import pytest
from channels.db import database_sync_to_async

from tests.conftest import query_tasks_as
from tests.websocket import one_turn
from workspace import selectors
from workspace import services as workspace_services

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def three_tasks(user):
    workspace_services.create_task(user=user, title="Oldest, finished", status="completed")
    workspace_services.create_task(user=user, title="Old and open")
    workspace_services.create_task(user=user, title="Newest and open", status="in_progress")


async def test_the_selector_and_the_tool_list_the_oldest_first_when_asked(alice, bob):
    await three_tasks(alice)
    await three_tasks(bob)  # another user's tasks never show
    page = await database_sync_to_async(selectors.tasks_for_user)(user=alice, oldest_first=True)
    assert [t.title for t in page.items] == ["Oldest, finished", "Old and open", "Newest and open"]
    page = await database_sync_to_async(selectors.tasks_for_user)(user=alice)
    assert [t.title for t in page.items] == ["Newest and open", "Old and open", "Oldest, finished"]
    with pytest.raises(ValueError):
        await database_sync_to_async(selectors.tasks_for_user)(user=alice, oldest_first=True, due=selectors.DayWindow("today", None, None))
    result = await query_tasks_as(alice, {"status": "open", "oldest_first": True, "limit": 1})
    found = json.loads(result.content)
    assert [t["title"] for t in found["tasks"]] == ["Old and open"] and found["total"] == 2


@pytest.mark.parametrize(
    "arguments",
    [
        {"oldest_first": True, "due": "today"},
        {"oldest_first": True, "due_on": "2026-12-01"},
        {"oldest_first": True, "completed": "this_week"},
    ],
)
async def test_oldest_first_with_a_window_of_its_own_order_is_a_tool_error_the_model_can_correct(alice, arguments):
    result = await query_tasks_as(alice, arguments)
    assert result.is_error and "oldest_first orders by when tasks were added" in result.content


async def test_the_oldest_and_the_latest_task_offline(alice):
    await three_tasks(alice)
    _, frames, reply = await one_turn(alice, "what's my oldest open task?")
    assert reply.content == "Your oldest open task (you have 2):\n\n- **Old and open** — to-do"
    _, frames, reply = await one_turn(alice, "what's my latest task?")
    assert reply.content.startswith("Your latest task (you have 3):\n\n- **Newest and open** — in-progress")
    _, frames, reply = await one_turn(alice, "what's my oldest completed task?")
    assert reply.content.startswith("Your oldest completed task (you have 1):\n\n- **Oldest, finished**")
