"""Notes by the day they were added or last edited ("any notes from last week?"): the selector, the
query tool and the offline engine, with days read in the person's time zone."""

import datetime as dt
import json
import typing
import zoneinfo

import pytest
from channels.db import database_sync_to_async

from chat import services, tools
from chat.rendering import describe_tool_call
from tests.conftest import AHEAD, at, tool_as, zone_whose_date_is_not_utcs
from tests.websocket import form_frame, frames_of_turn, open_socket
from workspace import selectors
from workspace import services as workspace_services
from workspace.models import Note

pytestmark = pytest.mark.django_db(transaction=True)


def changed_note(user, title: str, when: dt.datetime) -> Note:
    note = workspace_services.create_note(user=user, title=title, content=f"About {title}.")
    Note.objects.filter(pk=note.pk).update(updated_at=when)  # auto_now: set afterwards
    return note


def test_the_tool_offers_the_selectors_windows():
    (past, _none) = typing.get_args(tools.QueryNotesArgs.model_fields["changed"].annotation)
    assert typing.get_args(past) == selectors.PAST_WINDOWS


def test_notes_changed_in_a_window_of_the_persons_calendar_most_recent_first(alice, bob):
    wednesday = dt.date(2026, 11, 25)
    for title, when in [
        ("wednesday early", at(wednesday, 0, AHEAD)),
        ("wednesday late", at(wednesday, 23, AHEAD)),
        ("tuesday night", at(wednesday, 0, AHEAD) - dt.timedelta(minutes=1)),
        ("last week", at(wednesday - dt.timedelta(days=7), 12, AHEAD)),
    ]:
        changed_note(alice, title, when)
    changed_note(bob, "bob's", at(wednesday, 12, AHEAD))

    def titles(name: str, **filters) -> list[str]:
        window = selectors.past_window(name=name, today=wednesday)
        page = selectors.notes_for_user(user=alice, changed=window, time_zone=zoneinfo.ZoneInfo(AHEAD), **filters)
        return [n.title for n in page.items]

    assert titles("today") == ["wednesday late", "wednesday early"]
    assert titles("yesterday") == ["tuesday night"]
    assert titles("this_week") == ["wednesday late", "wednesday early", "tuesday night"]
    assert titles("last_week") == ["last week"]
    assert titles("this_week", search_term="tuesday") == ["tuesday night"]


async def test_the_query_tool_lists_the_notes_changed_today_in_the_persons_calendar(alice):
    zone, today = zone_whose_date_is_not_utcs()
    await database_sync_to_async(changed_note)(alice, "theirs", at(today, 12, zone))
    await database_sync_to_async(changed_note)(alice, "the day before", at(today, 12, zone) - dt.timedelta(days=1))
    result = json.loads((await tool_as(alice, "query_notes", {"changed": "today"}, time_zone=zone)).content)
    assert [n["title"] for n in result["notes"]] == ["theirs"]
    assert (result["changed_from"], result["changed_until"], result["today"]) == (today.isoformat(),) * 3
    outcome = await tool_as(alice, "query_notes", {"changed": "fortnight"}, time_zone=zone)
    assert outcome.is_error and "query_notes: changed: Input should be 'today'" in outcome.content  # names the windows there are


async def test_any_notes_from_yesterday_offline_lists_those_alone_and_says_which_days(alice):
    zone, today = zone_whose_date_is_not_utcs()
    yesterday = today - dt.timedelta(days=1)
    await database_sync_to_async(changed_note)(alice, "Venue shortlist", at(yesterday, 18, zone))
    await database_sync_to_async(changed_note)(alice, "Older thoughts", at(yesterday, 0, zone) - dt.timedelta(minutes=1))
    await database_sync_to_async(changed_note)(alice, "Written today", at(today, 0, zone))

    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="any notes from yesterday?", time_zone=zone))
    frames = await frames_of_turn(socket)
    await socket.disconnect()
    assert "I found 1 note added or edited yesterday:" in frames
    assert "Venue shortlist" in frames and "Older thoughts" not in frames and "Written today" not in frames
    assert "Looked at your notes added or edited yesterday" in frames


def test_the_activity_line_says_which_notes_were_looked_at():
    assert describe_tool_call("query_notes", {"changed": "last_week"}) == "Looked at your notes added or edited last week"
    assert describe_tool_call("query_notes", {"changed": "this_week", "search_term": "venue"}) == (
        "Searched your notes added or edited this week for “venue”"
    )
    assert describe_tool_call("query_notes", {"changed": "someday"}) == "Looked at your notes"  # a model's unknown value
