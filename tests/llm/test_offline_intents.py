import pytest

from llm.offline.intents import Intent, parse


@pytest.mark.parametrize(
    "text, expected",
    [
        ("what's in progress?", Intent("tasks", status="in_progress")),
        ("show my in-progress tasks", Intent("tasks", status="in_progress")),
        ("show my tasks in Atlas", Intent("tasks", project_name="Atlas")),
        ("what's left to do in the Harbor project?", Intent("tasks", status="todo", project_name="Harbor")),
        ("find tasks about design", Intent("tasks", search="design")),
        ("find notes about the launch", Intent("notes", search="launch")),
        ("notes mentioning 'pricing page' in Atlas", Intent("notes", search="pricing page", project_name="Atlas")),
        ("show my notes", Intent("notes")),
        ("how many tasks did I complete?", Intent("count_tasks", status="completed")),
        ("how many tasks are in progress in Harbor", Intent("count_tasks", status="in_progress", project_name="Harbor")),
        ("list my projects", Intent("projects")),
        ("hello", Intent("help")),
        ("write me a poem about the sea", Intent("help")),
        ("", Intent("help")),
        ("clean up my tasks only the stale ones in Atlas", Intent("cleanup", project_name="Atlas")),
        ("tidy up my tasks", Intent("cleanup")),
        ("what's on my plate?", Intent("tasks", status="open")),
        ("What's on my plate today?", Intent("tasks", status="open")),
        ("what's on my plate in Atlas?", Intent("tasks", status="open", project_name="Atlas")),
        ("what's in progress on my plate?", Intent("tasks", status="in_progress")),
    ],
)
def test_parse(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("delete all my tasks", Intent("delete_tasks")),
        ("delete all my completed tasks", Intent("delete_tasks", status="completed")),
        ("delete all my completed tasks in Atlas", Intent("delete_tasks", status="completed", project_name="Atlas")),
        ("remove the design tasks", Intent("delete_tasks", search="design")),
        ("mark the design tasks as done", Intent("complete_tasks", search="design")),
        ("complete tasks about the pricing page", Intent("complete_tasks", search="pricing page")),
        ("move the design tasks to Atlas", Intent("move_tasks", search="design", target_project="Atlas")),
        ("add a task called Book the venue in Harbor", Intent("create_task", title="Book the venue", project_name="Harbor")),
        ("create a note: Launch retro ideas", Intent("create_note", title="Launch retro ideas")),
        ("add a task to buy milk", Intent("create_task", title="buy milk")),
        ("create a task to call Bob in Harbor", Intent("create_task", title="call Bob", project_name="Harbor")),
        ("add a note to remember the keys", Intent("create_note", title="remember the keys")),
    ],
)
def test_parse_write_intents(text, expected):
    assert parse(text) == expected
