"""When a task was completed: kept by every write, and asked for by day ("what did I finish this week?")
in the person's calendar, through the query tool and offline."""

import datetime as dt
import json
import zoneinfo

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.utils import timezone

from chat import agent, services, tools
from chat.models import Message
from llm import ToolCall
from workspace import operations, selectors
from workspace import services as workspace_services
from workspace.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


def completed_at(task_id: int) -> dt.datetime | None:
    return Task.objects.get(pk=task_id).completed_at


def completed_task(user, title: str, when: dt.datetime) -> Task:
    task = workspace_services.create_task(user=user, title=title, status="completed")
    workspace_services.backdate_completion(user=user, task_id=task.pk, completed_at=when)
    return task


def test_completing_records_the_time_once_and_reopening_clears_it(alice):
    task = workspace_services.create_task(user=alice, title="Write the report")
    assert task.completed_at is None
    before = timezone.now()
    workspace_services.complete_task(user=alice, task_id=task.pk)
    first = completed_at(task.pk)
    assert first is not None and first >= before
    workspace_services.complete_task(user=alice, task_id=task.pk)  # completed again: still when it was first done
    workspace_services.update_task(user=alice, task_id=task.pk, status="completed", title="Write the final report")
    assert completed_at(task.pk) == first
    workspace_services.update_task(user=alice, task_id=task.pk, status="in_progress")
    assert completed_at(task.pk) is None
    workspace_services.update_task(user=alice, task_id=task.pk, priority="high")  # no status: left alone
    assert completed_at(task.pk) is None
    created = workspace_services.create_task(user=alice, title="Done already", status="completed")
    assert created.completed_at is not None and completed_at(created.pk) == created.completed_at


def test_a_confirmed_operation_and_an_admin_edit_keep_the_completion_time(alice, admin_user):
    task = workspace_services.create_task(user=alice, title="Ship it")
    operations.apply(user=alice, operations=[{"op": "complete_task", "task_id": task.pk}])
    assert completed_at(task.pk) is not None

    client = Client()
    client.force_login(admin_user)
    form = {"owner": alice.pk, "title": "Ship it", "description": "", "status": "todo", "priority": "medium", "due_date": ""}
    response = client.post(f"/admin/workspace/task/{task.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert completed_at(task.pk) is None
    client.post(f"/admin/workspace/task/{task.pk}/change/", form | {"status": "completed"})
    assert completed_at(task.pk) is not None


def test_completion_windows_in_the_persons_calendar():
    wednesday = dt.date(2026, 11, 25)
    window = selectors.past_window
    assert window(name="today", today=wednesday) == selectors.DayWindow("today", wednesday, wednesday)
    assert window(name="yesterday", today=wednesday) == selectors.DayWindow("yesterday", dt.date(2026, 11, 24), dt.date(2026, 11, 24))
    assert window(name="this_week", today=wednesday) == selectors.DayWindow("this_week", dt.date(2026, 11, 23), wednesday)
    assert window(name="last_week", today=wednesday) == selectors.DayWindow("last_week", dt.date(2026, 11, 16), dt.date(2026, 11, 22))
    assert window(name="last_7_days", today=wednesday) == selectors.DayWindow("last_7_days", dt.date(2026, 11, 19), wednesday)
    assert window(name="this_month", today=wednesday) == selectors.DayWindow("this_month", dt.date(2026, 11, 1), wednesday)
    assert window(name="last_month", today=wednesday) == selectors.DayWindow("last_month", dt.date(2026, 10, 1), dt.date(2026, 10, 31))
    january = dt.date(2027, 1, 5)  # last month is in last year
    assert window(name="last_month", today=january) == selectors.DayWindow("last_month", dt.date(2026, 12, 1), dt.date(2026, 12, 31))
    with pytest.raises(ValueError, match="unknown window of past days"):
        window(name="someday", today=wednesday)


def test_tasks_completed_in_a_window_most_recent_first_in_the_persons_time_zone(alice, bob):
    zone = zoneinfo.ZoneInfo("Pacific/Kiritimati")  # UTC+14
    monday = dt.date(2026, 11, 23)

    def at(day: dt.date, hour: int) -> dt.datetime:
        return dt.datetime.combine(day, dt.time(hour), tzinfo=zone)

    for title, when in [
        ("sunday night", at(monday - dt.timedelta(days=1), 23)),  # last week in their calendar, Monday in UTC's
        ("monday morning", at(monday, 0)),
        ("tuesday", at(monday + dt.timedelta(days=1), 12)),
        ("wednesday", at(monday + dt.timedelta(days=2), 9)),
    ]:
        completed_task(alice, title, when)
    completed_task(bob, "bob's", at(monday, 10))
    still_open = workspace_services.create_task(user=alice, title="still open")
    with pytest.raises(Task.DoesNotExist):  # only a completed task has a completion time
        workspace_services.backdate_completion(user=alice, task_id=still_open.pk, completed_at=at(monday, 10))
    assert completed_at(still_open.pk) is None

    def titles(name: str, **kw) -> list[str]:
        window = selectors.past_window(name=name, today=monday + dt.timedelta(days=2))
        return [t.title for t in selectors.tasks_for_user(user=alice, completed=window, time_zone=zone, **kw).items]

    assert titles("this_week") == ["wednesday", "tuesday", "monday morning"]
    assert titles("last_week") == ["sunday night"]
    assert titles("yesterday") == ["tuesday"]
    assert titles("this_week", search="tues") == ["tuesday"]
    # A weekday is the last such day, today included: Wednesday is today, Sunday the one just gone.
    assert (titles("monday"), titles("wednesday"), titles("sunday"), titles("thursday")) == (
        ["monday morning"],
        ["wednesday"],
        ["sunday night"],
        [],
    )
    with pytest.raises(ValueError, match="by one date at most"):
        selectors.tasks_for_user(user=alice, completed=selectors.past_window(name="today", today=monday),
                                 due=selectors.due_window(name="today", today=monday))  # fmt: skip


def test_completed_tasks_come_the_most_recently_completed_first_with_or_without_a_window(alice):
    now = timezone.now()
    for title, days_ago in [("finished today", 0), ("finished last month", 30), ("finished yesterday", 1)]:
        completed_task(alice, title, now - dt.timedelta(days=days_ago))
    workspace_services.create_task(user=alice, title="still open")

    def titles(**kw) -> list[str]:
        return [t.title for t in selectors.tasks_for_user(user=alice, **kw).items]

    assert titles(status="completed") == ["finished today", "finished yesterday", "finished last month"]
    assert titles(completed=selectors.past_window(name="last_7_days", today=timezone.localdate())) == [
        "finished today",
        "finished yesterday",
    ]
    assert titles() == ["still open", "finished yesterday", "finished last month", "finished today"]  # newest first


def tool_context(user, conversation_id, time_zone="UTC") -> tools.ToolContext:
    return tools.ToolContext(user=user, conversation_id=conversation_id, tool_call_id="c1", in_reply_to_id=0, timeouts=None,
                             time_zone=time_zone)  # fmt: skip


async def test_the_query_tool_lists_what_was_completed_this_week_with_each_tasks_day(alice):
    zone = "Pacific/Kiritimati"
    today = timezone.localdate(timezone=zoneinfo.ZoneInfo(zone))
    now = timezone.now()
    for title, days_ago in [("today's", 0), ("a month ago", 30)]:
        await database_sync_to_async(completed_task)(alice, title, now - dt.timedelta(days=days_ago))
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    ctx = tool_context(alice, conversation.pk, zone)
    call = ToolCall(id="c1", name="query_tasks", arguments=json.dumps({"completed": "this_week"}))
    result = json.loads((await tools.execute(ctx=ctx, call=call)).content)
    assert [t["title"] for t in result["tasks"]] == ["today's"]
    assert result["tasks"][0]["completed_on"] == today.isoformat()
    monday = today - dt.timedelta(days=today.weekday())
    assert (result["completed_from"], result["completed_until"], result["time_zone"]) == (monday.isoformat(), today.isoformat(), zone)


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"completed": "someday"}, "completed"), ({"completed": "today", "due": "today"}, "one of due, due_on, completed and added at most")],
)
async def test_a_bad_completion_window_is_a_tool_error_the_model_can_correct(alice, arguments, field):
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    ctx = tool_context(alice, conversation.pk)
    result = await tools.execute(ctx=ctx, call=ToolCall(id="c1", name="query_tasks", arguments=json.dumps(arguments)))
    assert result.is_error and field in result.content


async def test_what_did_i_finish_this_week_offline_lists_only_this_weeks(alice):
    now = timezone.now()
    for title, days_ago in [("Send the invoice", 0), ("Old chore", 30)]:
        await database_sync_to_async(completed_task)(alice, title, now - dt.timedelta(days=days_ago))
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Open thing")
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    await database_sync_to_async(services.post_user_message)(
        user=alice, conversation_id=conversation.pk, content="What did I finish this week?"
    )
    await agent.run_pending_turns(conversation.pk)
    reply = await database_sync_to_async(lambda: Message.objects.filter(conversation=conversation, role="assistant").last())()
    assert reply.content.startswith("Here are your tasks completed this week")
    assert "Send the invoice" in reply.content and "completed " in reply.content
    assert "Old chore" not in reply.content and "Open thing" not in reply.content


async def test_a_listing_of_every_status_says_completed_once_with_the_day(alice):
    await database_sync_to_async(completed_task)(alice, "Send the invoice", timezone.now())
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Open thing")
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="show my tasks")
    await agent.run_pending_turns(conversation.pk)
    reply = await database_sync_to_async(lambda: Message.objects.filter(conversation=conversation, role="assistant").last())()
    line = next(line for line in reply.content.splitlines() if "Send the invoice" in line)
    assert line.count("completed") == 1 and "completed " in line
    assert "to-do" in next(line for line in reply.content.splitlines() if "Open thing" in line)


def test_tasks_completed_before_the_upgrade_take_their_last_change_as_their_completion_time(alice):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = ("workspace", "0002_owner_leading_search_indexes")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    try:
        old_task = executor.loader.project_state([before]).apps.get_model("workspace", "Task")
        done = old_task.objects.create(owner_id=alice.pk, title="Done long ago", status="completed")
        open_task = old_task.objects.create(owner_id=alice.pk, title="Still open", status="todo")
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())  # back to where every other test expects it
    assert Task.objects.get(pk=done.pk).completed_at == done.updated_at
    assert Task.objects.get(pk=open_task.pk).completed_at is None


async def test_what_did_i_do_on_a_weekday_offline_lists_what_was_completed_that_day_alone(alice):
    from tests.websocket import one_turn

    today = timezone.localdate()
    day = today - dt.timedelta(days=3)
    for title, when in [("Paint the fence", day), ("Wash the car", day - dt.timedelta(days=1)), ("Mow the lawn", today)]:
        await database_sync_to_async(completed_task)(alice, title, at_noon(when))
    weekday = f"{day:%A}"
    _, _, reply = await one_turn(alice, f"What did I do on {weekday}?")
    assert reply.content.startswith(f"Here are your tasks completed on {weekday}, {day:%b} {day.day} (1):")
    assert "Paint the fence" in reply.content and "Wash the car" not in reply.content and "Mow the lawn" not in reply.content
    _, _, reply = await one_turn(alice, f"how many tasks did I finish on {weekday.lower()}?")
    assert reply.content == f"You have completed **1** task on {weekday}, {day:%b} {day.day}."


def at_noon(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(12), tzinfo=timezone.get_current_timezone())
