"""The line a lookup leaves in the thread says what was looked at, filters included."""

import json

import pytest

from chat.models import Message
from chat.rendering import tool_activity


def sentence(name: str, arguments: object) -> str:
    message = Message(role=Message.Role.ASSISTANT, tool_calls=[{"id": "c1", "name": name, "arguments": json.dumps(arguments)}])
    [activity] = tool_activity(message)
    return activity.sentence


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"status": "in_progress", "limit": 50}, "Looked at up to 50 in-progress tasks"),
        ({"status": "open", "priority_at_least": "urgent", "limit": 50}, "Looked at up to 50 urgent tasks"),
        ({"status": "open", "priority_at_least": "high", "limit": 50}, "Looked at up to 50 high-priority tasks"),
        ({"status": "all", "due": "tomorrow", "limit": 100}, "Looked at up to 100 tasks due tomorrow"),
        ({"due": "friday", "limit": 50}, "Looked at up to 50 tasks due on Friday"),
        ({"status": "todo", "due": "overdue", "project_id": 3}, "Looked at up to 100 overdue to-do tasks in one project"),
        ({"status": "completed", "limit": 1}, "Looked at your completed tasks"),
        ({"completed": "this_week", "limit": 50}, "Looked at up to 50 tasks completed this week"),
        ({"search": "design", "priority_at_least": "medium"}, "Looked at up to 100 medium-or-higher-priority tasks matching “design”"),
    ],
)
def test_a_task_lookup_names_its_filters(arguments, expected):
    arguments.setdefault("limit", 100)
    assert sentence("query_tasks", arguments) == expected


def test_filters_a_model_made_up_are_left_out_not_echoed():
    assert sentence("query_tasks", {"status": "someday", "priority_at_least": 7, "due": "<b>never</b>", "limit": 20}) == (
        "Looked at up to 20 tasks"
    )
