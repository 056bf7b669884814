"""Tasks in no project ("which tasks aren't in a project?"): the selector, the query tool as a
model calls it, and the offline engine through a real websocket."""

import json

import pytest
from channels.db import database_sync_to_async

from tests.conftest import query_tasks_as
from tests.websocket import one_turn
from workspace import selectors
from workspace import services as workspace_services

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def some_filed_some_not(user):
    atlas = workspace_services.create_project(user=user, name="Atlas")
    workspace_services.create_task(user=user, title="Filed in Atlas", project_id=atlas.pk)
    workspace_services.create_task(user=user, title="Loose end")
    workspace_services.create_task(user=user, title="Another loose end", status="completed")
    return atlas


async def test_the_selector_and_the_tool_list_the_tasks_in_no_project_alone(alice, bob):
    atlas = await some_filed_some_not(alice)
    await some_filed_some_not(bob)  # another user's loose ends never show
    page = await database_sync_to_async(selectors.tasks_for_user)(user=alice, unfiled=True)
    assert sorted(t.title for t in page.items) == ["Another loose end", "Loose end"]
    with pytest.raises(ValueError):
        await database_sync_to_async(selectors.tasks_for_user)(user=alice, unfiled=True, project_id=atlas.pk)
    result = await query_tasks_as(alice, {"no_project": True, "status": "open"})
    assert [t["title"] for t in json.loads(result.content)["tasks"]] == ["Loose end"]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [({"no_project": True, "project_id": 1}, "not together with project_id"), ({"no_project": "maybe"}, "no_project")],
)
async def test_a_bad_no_project_filter_is_a_tool_error_the_model_can_correct(alice, arguments, error):
    result = await query_tasks_as(alice, arguments)
    assert result.is_error and error in result.content


async def chat(user, text):
    _, frames, reply = await one_turn(user, text)
    return frames, reply.content


async def test_which_tasks_are_in_no_project_offline(alice):
    await some_filed_some_not(alice)
    frames, reply = await chat(alice, "which tasks aren't in a project?")
    assert reply.startswith("Here are your tasks in no project (2):")
    assert "Loose end" in reply and "Filed in Atlas" not in reply
    assert "Looked at up to 50 tasks in no project" in frames
    _, count = await chat(alice, "how many open tasks have no project?")
    assert count == "You have **1** open task in no project."
