"""Due-date questions ("what's due this week?", "overdue", "today", "next 7 days") offline and
through the query tool, with the dates in the person's time zone (the one their browser sends with
each message, kept on the message)."""

import datetime as dt
import json
import re
import zoneinfo

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from chat import agent, services
from chat.models import Message
from tests.conftest import AHEAD, query_tasks_as, zone_whose_date_is_not_utcs
from tests.websocket import one_turn
from workspace import selectors
from workspace import services as workspace_services

pytestmark = pytest.mark.django_db(transaction=True)


def test_due_windows_in_the_persons_calendar():
    wednesday = dt.date(2026, 11, 25)
    assert selectors.due_window(name="today", today=wednesday) == selectors.DayWindow("today", wednesday, wednesday)
    assert selectors.due_window(name="this_week", today=wednesday) == selectors.DayWindow(
        "this_week", dt.date(2026, 11, 23), dt.date(2026, 11, 29)
    )
    assert selectors.due_window(name="next_7_days", today=wednesday).last == dt.date(2026, 12, 1)
    tomorrow = dt.date(2026, 11, 26)
    assert selectors.due_window(name="tomorrow", today=wednesday) == selectors.DayWindow("tomorrow", tomorrow, tomorrow)
    assert selectors.due_window(name="next_week", today=wednesday) == selectors.DayWindow(
        "next_week", dt.date(2026, 11, 30), dt.date(2026, 12, 6)
    )
    sunday = dt.date(2026, 11, 29)  # the last day of a week: next week is still the one after it
    assert selectors.due_window(name="next_week", today=sunday).first == dt.date(2026, 11, 30)
    assert selectors.due_window(name="overdue", today=wednesday) == selectors.DayWindow("overdue", None, dt.date(2026, 11, 24))
    for today, this_month, next_month in [
        (wednesday, (dt.date(2026, 11, 1), dt.date(2026, 11, 30)), (dt.date(2026, 12, 1), dt.date(2026, 12, 31))),
        (dt.date(2026, 12, 31), (dt.date(2026, 12, 1), dt.date(2026, 12, 31)), (dt.date(2027, 1, 1), dt.date(2027, 1, 31))),
        (dt.date(2028, 1, 31), (dt.date(2028, 1, 1), dt.date(2028, 1, 31)), (dt.date(2028, 2, 1), dt.date(2028, 2, 29))),
    ]:
        assert selectors.due_window(name="this_month", today=today) == selectors.DayWindow("this_month", *this_month)
        assert selectors.due_window(name="next_month", today=today) == selectors.DayWindow("next_month", *next_month)
    # A weekday: the next such day, today included.
    for name, day in [("friday", dt.date(2026, 11, 27)), ("wednesday", wednesday), ("tuesday", dt.date(2026, 12, 1))]:
        assert selectors.due_window(name=name, today=wednesday) == selectors.DayWindow(name, day, day)
    # The weekend: the coming Saturday and Sunday; on the weekend itself, what is left of it.
    saturday = dt.date(2026, 11, 28)
    for today, first in [(wednesday, saturday), (saturday, saturday), (sunday, sunday), (dt.date(2026, 11, 30), dt.date(2026, 12, 5))]:
        window = selectors.due_window(name="weekend", today=today)
        assert (window.first, window.last - window.first) == (first, dt.timedelta(days=int(first.weekday() == 5)))
    with pytest.raises(ValueError):
        selectors.due_window(name="someday", today=wednesday)


def test_tasks_due_in_a_window_leave_out_completed_ones_and_other_users(alice, bob):
    today = dt.date(2026, 11, 25)
    for title, due, status in [
        ("yesterday", today - dt.timedelta(days=1), "todo"),
        ("today", today, "in_progress"),
        ("sunday", dt.date(2026, 11, 29), "todo"),
        ("next monday", dt.date(2026, 11, 30), "todo"),
        ("done today", today, "completed"),
    ]:
        workspace_services.create_task(user=alice, title=title, due_date=due, status=status)
    workspace_services.create_task(user=alice, title="no date")
    workspace_services.create_task(user=bob, title="bob today", due_date=today)

    def titles(name, **kw):
        window = selectors.due_window(name=name, today=today)
        return [t.title for t in selectors.tasks_for_user(user=alice, due=window, **kw).items]

    assert titles("this_week") == ["yesterday", "today", "sunday"]
    assert titles("today") == ["today"]
    assert titles("overdue") == ["yesterday"]
    assert titles("next_7_days") == ["today", "sunday", "next monday"]
    assert titles("today", status="completed") == ["done today"]
    assert titles("next_week") == ["next monday"]
    assert titles("tomorrow") == []
    assert titles("this_month") == ["yesterday", "today", "sunday", "next monday"]  # November's, soonest first
    assert titles("next_month") == []


async def test_the_query_tool_reads_today_in_the_users_time_zone(alice):
    zone, today = zone_whose_date_is_not_utcs()
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="theirs", due_date=today)
    utc_today = timezone.localdate(timezone=dt.timezone.utc)
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="the server's", due_date=utc_today)

    async def due_today(time_zone):
        return json.loads((await query_tasks_as(alice, {"due": "today"}, time_zone=time_zone)).content)

    result = await due_today(zone)
    assert [t["title"] for t in result["tasks"]] == ["theirs"]
    assert (result["today"], result["time_zone"], result["due_from"], result["due_until"]) == (
        today.isoformat(), zone, today.isoformat(), today.isoformat()
    )  # fmt: skip
    assert [t["title"] for t in (await due_today("UTC"))["tasks"]] == ["the server's"]


async def chat(alice, text, **frame):
    return await one_turn(alice, text, **frame)


@pytest.mark.parametrize("text", ["What's due this week?", "list everything due this week"])
async def test_whats_due_this_week_offline_lists_the_open_tasks_due_this_week(alice, text):
    zone, today = zone_whose_date_is_not_utcs()
    monday = today - dt.timedelta(days=today.weekday())
    for title, due, status in [
        ("Send the invoice", monday, "todo"),
        ("Book the venue", monday + dt.timedelta(days=6), "in_progress"),
        ("Already sent", monday + dt.timedelta(days=2), "completed"),
        ("Next week's review", monday + dt.timedelta(days=7), "todo"),
    ]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due, status=status)
    conversation, frames, reply = await chat(alice, text, time_zone=zone)
    assert reply.content.startswith("Here are your tasks due this week (")
    assert "Send the invoice" in reply.content and "Book the venue" in reply.content
    assert "Already sent" not in reply.content and "Next week's review" not in reply.content
    assert "(2):" in reply.content
    request = await database_sync_to_async(Message.objects.get)(conversation=conversation, role="user")
    assert request.metadata == {"time_zone": zone}


async def test_overdue_and_today_offline(alice):
    zone, today = zone_whose_date_is_not_utcs()
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Late report", due_date=today - dt.timedelta(days=3))
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Call Sam", due_date=today)
    _, _, overdue = await chat(alice, "what's overdue?", time_zone=zone)
    assert overdue.content.startswith("Here are your overdue tasks (1):") and "Late report" in overdue.content
    assert "Call Sam" not in overdue.content and "overdue since" in overdue.content
    _, _, due_today = await chat(alice, "what's due today?", time_zone=zone)
    assert "Call Sam" in due_today.content and "due today" in due_today.content and "Late report" not in due_today.content
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Water plants", due_date=today + dt.timedelta(days=1))
    _, _, due_tomorrow = await chat(alice, "what's due tomorrow?", time_zone=zone)
    assert "Water plants" in due_tomorrow.content and "due tomorrow" in due_tomorrow.content and "Call Sam" not in due_tomorrow.content
    _, _, count = await chat(alice, "how many tasks are overdue?", time_zone=zone)
    assert count.content == "You have **1** open task overdue."


async def test_whats_due_on_a_weekday_offline_is_the_next_such_day_in_the_persons_calendar(alice):
    zone, today = zone_whose_date_is_not_utcs()
    in_two_days = today + dt.timedelta(days=2)
    weekday = f"{in_two_days:%A}"
    for title, due in [("Pay rent", in_two_days), ("Water plants", today), ("A week later", in_two_days + dt.timedelta(days=7))]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due)
    _, _, reply = await chat(alice, f"what's due on {weekday}?", time_zone=zone)
    assert reply.content.startswith(f"Here are your tasks due on {weekday}, {in_two_days:%b} {in_two_days.day} (1):"), reply.content
    assert "Pay rent" in reply.content and "Water plants" not in reply.content and "A week later" not in reply.content
    _, _, count = await chat(alice, f"how many tasks are due {weekday.lower()}?", time_zone=zone)
    assert count.content == f"You have **1** open task due on {weekday}, {in_two_days:%b} {in_two_days.day}."


@pytest.mark.parametrize("text", ["what's due this weekend?", "what do I have this weekend?", "anything for the weekend?"])
async def test_whats_due_this_weekend_offline_is_the_coming_saturday_and_sunday_in_the_persons_calendar(alice, text):
    zone, today = zone_whose_date_is_not_utcs()
    window = selectors.due_window(name="weekend", today=today)
    for title, due in [
        ("Clean the garage", window.last),
        ("Last weekend's chore", window.first - dt.timedelta(days=7)),
        ("Monday's", window.last + dt.timedelta(days=1)),
    ]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due)
    _, _, reply = await chat(alice, text, time_zone=zone)
    assert reply.content.startswith("Here are your tasks due this weekend ("), reply.content
    assert "Clean the garage" in reply.content and "Last weekend" not in reply.content and "Monday's" not in reply.content


async def test_a_turn_reads_the_time_zone_of_the_latest_message_that_has_one(alice):
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="hi", time_zone=AHEAD)
    await agent.run_pending_turns(conversation.pk)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="what's due today?")
    from chat.selectors import turn_context

    ctx = await database_sync_to_async(turn_context)(conversation_id=conversation.pk, history_limit=50)
    assert ctx.time_zone == AHEAD


async def test_the_model_is_told_today_as_the_person_sees_it_with_its_weekday(alice):
    zone, today = zone_whose_date_is_not_utcs()
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    await database_sync_to_async(services.post_user_message)(
        user=alice, conversation_id=conversation.pk, content="what should I do next?", time_zone=zone
    )
    from chat.selectors import turn_context

    ctx = await database_sync_to_async(turn_context)(conversation_id=conversation.pk, history_limit=50)
    system = ctx.messages[0].content or ""
    assert f"Today is {today:%A}, {today.isoformat()}." in system, system[:200]


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "../../etc/passwd", "", "x" * 65])
async def test_an_unknown_time_zone_is_refused_and_nothing_is_written(alice, zone):
    conversation, frames, reply = await chat(alice, "what's due today?", time_zone=zone)
    assert "Frame field 'time_zone'" in frames.replace("&#x27;", "'")
    assert reply is None
    assert not await database_sync_to_async(Message.objects.filter(conversation=conversation).exists)()


async def test_whats_due_on_a_date_offline_lists_and_counts_the_tasks_due_that_day(alice):
    zone, today = zone_whose_date_is_not_utcs()
    day = today + dt.timedelta(days=9)
    for title, due in [("Pay the deposit", day), ("Day before", day - dt.timedelta(days=1)), ("Undated", None)]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due)
    said = f"{day:%b} {day.day}"  # "Dec 7"
    _, frames, reply = await chat(alice, f"what's due on {said}?", time_zone=zone)
    assert reply.content.startswith(f"Here are your tasks due on {day:%a} {said}"), reply.content
    assert "Pay the deposit" in reply.content and "Day before" not in reply.content and "Undated" not in reply.content
    assert f"Looked at up to 50 tasks due on {day:%a} {said}" in frames
    _, _, count = await chat(alice, f"how many tasks are due on the {day.day}th of {day:%B}?", time_zone=zone)
    assert count.content.startswith(f"You have **1** open task due on {day:%a} {said}"), count.content


@pytest.mark.parametrize("text", ["what's due on Nov 31?", "anything due on February 30th?"])
async def test_a_due_date_the_calendar_does_not_have_is_said_so(alice, text):
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Something", due_date=dt.date(2026, 11, 30))
    _, _, reply = await chat(alice, text)
    assert "is not a date in the calendar" in reply.content and "Something" not in reply.content


@pytest.mark.parametrize(
    "text", ["show tasks due after Friday", "what's due before Dec 5?", "which tasks are due between Monday and Friday?"]
)
async def test_a_range_of_due_days_is_said_to_be_beyond_the_offline_engine_and_nothing_listed(alice, text):
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Something", due_date=dt.date(2026, 11, 30))
    _, frames, reply = await chat(alice, text)
    assert "not before, after or between days" in reply.content and "“what's due on Friday?”" in reply.content
    assert "Something" not in reply.content and "Looked at" not in frames  # no lookup, no listing of the wrong days


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"due": "someday"}, "due"),
        ({"due_on": "2026-13-01"}, "due_on"),
        ({"due_on": "Dec 5"}, "due_on"),
        ({"added": "tomorrow"}, "added"),
        ({"due_on": "2026-12-05", "due": "today"}, "one of due, due_on, completed and added at most"),
        ({"added": "today", "completed": "today"}, "one of due, due_on, completed and added at most"),
        ({"no_due_date": True, "due": "today"}, "not together with due or due_on"),
        ({"no_due_date": "maybe"}, "no_due_date"),
    ],
)
async def test_a_bad_date_filter_is_a_tool_error_the_model_can_correct(alice, arguments, error):
    result = await query_tasks_as(alice, arguments)
    assert result.is_error and error in result.content


async def test_the_query_tool_lists_the_tasks_due_on_a_date(alice):
    day = dt.date(2026, 12, 5)
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="That day", due_date=day)
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Next day", due_date=day + dt.timedelta(days=1))
    result = json.loads((await query_tasks_as(alice, {"due_on": "2026-12-05"})).content)
    assert [t["title"] for t in result["tasks"]] == ["That day"]
    assert (result["due_from"], result["due_until"], result["filters"]["due_on"]) == ("2026-12-05",) * 3


async def test_tasks_with_no_due_date_offline_and_through_the_tool(alice):
    for title, due in [("Someday", None), ("Dated", dt.date(2026, 12, 5)), ("Whenever", None)]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due)
    result = json.loads((await query_tasks_as(alice, {"no_due_date": True, "added": "today"})).content)
    assert sorted(t["title"] for t in result["tasks"]) == ["Someday", "Whenever"]
    _, frames, reply = await chat(alice, "show my tasks without a due date")
    assert reply.content.startswith("Here are your tasks with no due date (2):"), reply.content
    assert "Dated" not in reply.content and "Looked at up to 50 tasks with no due date" in frames
    _, _, count = await chat(alice, "how many tasks have no deadline?")
    assert count.content == "You have **2** tasks with no due date."


async def test_whats_the_date_and_time_offline_are_the_persons_in_their_zone(alice):
    zone, today = zone_whose_date_is_not_utcs()
    _, _, reply = await chat(alice, "what's today's date?", time_zone=zone)
    assert reply.content == f"Today is {today:%A}, {today:%B} {today.day}, {today.year} ({zone})."
    _, _, reply = await chat(alice, "what time is it?", time_zone=zone)
    said = re.fullmatch(rf"It's (\d\d):(\d\d) on \w+, \w+ \d+, \d{{4}} \({re.escape(zone)}\)\.", reply.content)
    assert said, reply.content
    now = dt.datetime.now(zoneinfo.ZoneInfo(zone))
    behind = (now.hour * 60 + now.minute - int(said[1]) * 60 - int(said[2])) % (24 * 60)
    assert behind <= 3  # minutes: the zone's clock, which is 11 or 14 hours from UTC's
