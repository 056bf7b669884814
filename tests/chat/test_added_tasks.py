"""Tasks by the day they were added ("what did I add today?"), and changes that name a date
("delete the tasks due today") touching those tasks alone: the selector, the query tool and the
offline engine, with days read in the person's time zone."""

import datetime as dt
import json
import typing
import zoneinfo

import pytest
from channels.db import database_sync_to_async

from chat import tools
from questions.models import QuestionGroup
from tests.conftest import at, query_tasks_as, zone_whose_date_is_not_utcs
from tests.websocket import one_turn
from workspace import selectors
from workspace import services as workspace_services
from workspace.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


def added_task(user, title: str, when: dt.datetime, **fields) -> Task:
    task = workspace_services.create_task(user=user, title=title, **fields)
    Task.objects.filter(pk=task.pk).update(created_at=when)  # auto_now_add: set afterwards
    return task


def test_the_tool_offers_the_selectors_windows():
    (due, _none) = typing.get_args(tools.QueryTasksArgs.model_fields["due"].annotation)
    assert typing.get_args(due) == selectors.DUE_WINDOWS
    for field in ("completed", "added"):
        (past, _none) = typing.get_args(tools.QueryTasksArgs.model_fields[field].annotation)
        assert typing.get_args(past) == selectors.PAST_WINDOWS


def test_tasks_added_in_a_window_of_the_persons_calendar_newest_first(alice, bob):
    zone = "Pacific/Kiritimati"  # UTC+14: its day starts ten hours before UTC's previous midnight
    wednesday = dt.date(2026, 11, 25)
    for title, when in [
        ("wednesday early", at(wednesday, 0, zone)),
        ("wednesday late", at(wednesday, 23, zone)),
        ("tuesday night", at(wednesday, 0, zone) - dt.timedelta(minutes=1)),
        ("last week", at(wednesday - dt.timedelta(days=7), 12, zone)),
    ]:
        added_task(alice, title, when)
    added_task(bob, "bob's", at(wednesday, 12, zone))

    def titles(name: str) -> list[str]:
        window = selectors.past_window(name=name, today=wednesday)
        return [t.title for t in selectors.tasks_for_user(user=alice, added=window, time_zone=zoneinfo.ZoneInfo(zone)).items]

    assert titles("today") == ["wednesday late", "wednesday early"]
    assert titles("yesterday") == ["tuesday night"]
    assert titles("this_week") == ["wednesday late", "wednesday early", "tuesday night"]
    assert titles("last_week") == ["last week"]
    with pytest.raises(ValueError, match="by one date at most"):
        selectors.tasks_for_user(user=alice, added=selectors.past_window(name="today", today=wednesday),
                                 due=selectors.due_window(name="today", today=wednesday))  # fmt: skip


async def test_the_query_tool_lists_what_was_added_today_in_the_persons_calendar(alice):
    zone, today = zone_whose_date_is_not_utcs()
    await database_sync_to_async(added_task)(alice, "theirs", at(today, 12, zone))
    await database_sync_to_async(added_task)(alice, "the day before", at(today, 12, zone) - dt.timedelta(days=1))
    result = json.loads((await query_tasks_as(alice, {"added": "today"}, time_zone=zone)).content)
    assert [t["title"] for t in result["tasks"]] == ["theirs"]
    assert (result["added_from"], result["added_until"], result["today"]) == (today.isoformat(),) * 3


async def chat(alice, text, zone):
    conversation, frames, reply = await one_turn(alice, text, time_zone=zone)
    return conversation, frames, reply.content if reply is not None else ""  # none while a card waits


@pytest.mark.parametrize("text", ["What did I add today?", "which tasks did I create today?"])
async def test_what_did_i_add_today_offline_lists_the_tasks_added_on_the_persons_today(alice, text):
    zone, today = zone_whose_date_is_not_utcs()
    await database_sync_to_async(added_task)(alice, "Book the venue", at(today, 9, zone))
    await database_sync_to_async(added_task)(alice, "Older errand", at(today, 9, zone) - dt.timedelta(days=1))
    _, frames, reply = await chat(alice, text, zone)
    assert reply.startswith("Here are your tasks added today (1):"), reply
    assert "Book the venue" in reply and "Older errand" not in reply
    assert "Looked at up to 50 tasks added today" in frames  # the activity line says what was looked at


@pytest.mark.parametrize(
    ("text", "picked", "summary"),
    [
        ("delete the tasks due today", {"Due today"}, "Delete 1 task due today"),
        ("delete the overdue tasks", {"Overdue"}, "Delete 1 overdue task"),
        ("complete all the urgent tasks", {"Urgent"}, "Mark 1 urgent task completed"),
        ("delete the tasks I added yesterday", {"Added yesterday"}, "Delete 1 task added yesterday"),
    ],
)
async def test_a_change_that_names_a_date_or_priority_proposes_those_tasks_alone(alice, text, picked, summary):
    zone, today = zone_whose_date_is_not_utcs()
    await database_sync_to_async(added_task)(alice, "Due today", at(today, 9, zone), due_date=today)
    await database_sync_to_async(added_task)(alice, "Overdue", at(today, 9, zone), due_date=today - dt.timedelta(days=2))
    await database_sync_to_async(added_task)(alice, "Urgent", at(today, 9, zone), priority="urgent")
    await database_sync_to_async(added_task)(alice, "Added yesterday", at(today, 9, zone) - dt.timedelta(days=1))
    conversation, frames, _ = await chat(alice, text, zone)
    (group,) = await database_sync_to_async(lambda: list(QuestionGroup.objects.filter(conversation=conversation)))()
    proposed = {line["text"].split("“")[1].split("”")[0] for line in group.payload["lines"]}
    assert proposed == picked
    assert summary in frames
    assert await database_sync_to_async(Task.objects.filter(owner=alice).count)() == 4  # nothing changed before Apply


async def test_a_change_whose_date_picks_no_task_says_so_and_proposes_nothing(alice):
    zone, today = zone_whose_date_is_not_utcs()
    await database_sync_to_async(added_task)(alice, "Someday", at(today, 9, zone))
    conversation, _, reply = await chat(alice, "delete the tasks due tomorrow", zone)
    assert reply == "You have no tasks due tomorrow to delete, so there is nothing to change."
    assert not await database_sync_to_async(QuestionGroup.objects.filter(conversation=conversation).exists)()
    assert await database_sync_to_async(Task.objects.filter(owner=alice).count)() == 1
