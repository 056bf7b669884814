"""The offline engine end to end: real turns, real tools, the seeded demo workspace."""

import datetime as dt
import json

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from chat import agent, services
from chat.models import Message
from knowledge import services as knowledge_services
from llm.offline import phrasing
from llm.offline.intents import parse
from workspace import services as workspace_services
from workspace.demo_content import seed_demo_workspace
from workspace.models import Note, Task

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(alice, bob):
    seed_demo_workspace(user=alice)
    seed_demo_workspace(user=bob)  # same titles, other owner: must never show up for alice
    return alice


@database_sync_to_async
def turn_rows(user, text):
    conversation = services.start_conversation(user=user)
    services.post_user_message(user=user, conversation_id=conversation.pk, content=text)
    return conversation


async def answer(user, text) -> tuple[str, list[dict]]:
    conversation = await turn_rows(user, text)
    await agent.run_pending_turns(conversation.pk)
    rows = await database_sync_to_async(lambda: list(conversation.messages.order_by("id").values("role", "content", "tool_calls")))()
    calls = [json.loads(c["arguments"]) | {"tool": c["name"]} for r in rows for c in r["tool_calls"]]
    assert rows[-1]["role"] == "assistant"
    return rows[-1]["content"], calls


# A question the knowledge base has no answer to, looked up in the person's task titles and notes;
# when nothing has all its words, once more without the commonest.
LOOKED_UP = ["search_knowledge_base", "query_tasks", "query_notes"]
LOOKED_UP_TWICE = [*LOOKED_UP, "query_tasks", "query_notes"]


@database_sync_to_async
def newest_tool_result(user, tool_name: str) -> dict:
    row = Message.objects.filter(conversation__owner=user, role=Message.Role.TOOL, tool_name=tool_name).latest("id")
    return json.loads(row.content)


@database_sync_to_async
def titles(user, **filters):
    return list(Task.objects.filter(owner=user, **filters).values_list("title", flat=True))


async def test_whats_in_progress_lists_every_in_progress_task(demo):
    reply, calls = await answer(demo, "what's in progress?")
    assert calls == [{"tool": "query_tasks", "status": "in_progress", "limit": 50}]
    expected = await titles(demo, status="in_progress")
    assert f"({len(expected)})" in reply
    for title in expected:
        assert title in reply


async def test_whats_on_my_plate_lists_the_tasks_not_done_yet(demo):
    reply, calls = await answer(demo, "What's on my plate?")
    assert calls == [{"tool": "query_tasks", "status": "open", "limit": 50}]
    expected = await titles(demo, status__in=["todo", "in_progress"])
    assert f"({len(expected)})" in reply and all(title in reply for title in expected)
    assert not any(title in reply for title in await titles(demo, status="completed"))
    assert "— to-do" in reply or "· to-do" in reply  # each line says which of the two it is
    assert "in-progress" in reply


async def test_whats_urgent_lists_the_open_urgent_tasks_and_counts_them(demo):
    reply, calls = await answer(demo, "what's urgent?")
    assert calls == [{"tool": "query_tasks", "status": "open", "priority_at_least": "urgent", "limit": 50}]
    expected = await titles(demo, status__in=["todo", "in_progress"], priority="urgent")
    assert expected and f"your urgent tasks ({len(expected)})" in reply and all(title in reply for title in expected)
    assert not any(title in reply for title in await titles(demo, priority__in=["low", "medium", "high"]))
    reply, _ = await answer(demo, "which tasks are high priority?")
    high = await titles(demo, status__in=["todo", "in_progress"], priority__in=["high", "urgent"])
    assert f"your high-priority tasks ({len(high)})" in reply and all(title in reply for title in high)
    reply, _ = await answer(demo, "how many urgent tasks do I have?")
    assert reply == f"You have **{len(expected)}** open urgent {'task' if len(expected) == 1 else 'tasks'}."


async def test_tasks_in_a_project_resolves_the_project_first(demo):
    reply, calls = await answer(demo, "show my tasks in Atlas")
    assert [c["tool"] for c in calls] == ["query_projects", "query_tasks"]
    atlas_tasks = await titles(demo, project__name="Atlas")
    assert all(t in reply for t in atlas_tasks)
    assert not any(t in reply for t in await titles(demo, project__name="Harbor"))
    assert "Atlas ·" not in reply  # a listing of one project's tasks does not repeat its name on each line
    reply, _ = await answer(demo, "show my open tasks")
    assert "Atlas ·" in reply and "Harbor ·" in reply


async def test_how_a_project_is_going_gives_its_counts_then_what_is_open_in_it(demo):
    reply, calls = await answer(demo, "How is the Atlas project going?")
    atlas = await database_sync_to_async(lambda: demo.projects.get(name="Atlas").pk)()
    assert calls == [
        {"tool": "query_projects", "include_stats": True},
        {"tool": "query_tasks", "status": "open", "project_id": atlas, "limit": 50},
    ]
    counts = [len(await titles(demo, project__name="Atlas", status=s)) for s in ("todo", "in_progress", "completed")]
    assert reply.startswith(f"**Atlas**: {counts[0]} to do, {counts[1]} in progress, {counts[2]} completed, ")
    still_open = await titles(demo, project__name="Atlas", status__in=["todo", "in_progress"])
    assert f"Here are your open tasks in Atlas ({len(still_open)}):" in reply and all(t in reply for t in still_open)
    assert not any(t in reply for t in await titles(demo, project__name="Atlas", status="completed"))


async def test_a_project_with_nothing_open_says_so(charlie):
    @database_sync_to_async
    def garden_with_its_work_done():
        garden = workspace_services.create_project(user=charlie, name="Garden")
        workspace_services.create_task(user=charlie, title="Plant the bulbs", project_id=garden.pk, status="completed")

    await garden_with_its_work_done()
    reply, _ = await answer(charlie, "what's the status of Garden?")
    assert reply == "**Garden**: 0 to do, 0 in progress, 1 completed, 0 notes. Nothing in it is left to do."


async def test_unknown_project_is_answered_honestly(demo):
    reply, _ = await answer(demo, "show my tasks in Zephyr")
    assert "couldn't find a project called “Zephyr”" in reply and "**Atlas**" in reply


async def test_find_notes_about_the_launch(demo):
    reply, calls = await answer(demo, "find notes about the launch")
    assert calls == [{"tool": "query_notes", "search_term": "launch", "limit": 20}]
    assert "Launch plan for the Atlas relaunch" in reply


async def test_a_note_named_by_a_word_before_note_is_looked_up_by_that_word_not_all_notes_listed(demo):
    reply, calls = await answer(demo, "I can't find my landlord note")
    assert calls == [{"tool": "query_notes", "search_term": "landlord", "limit": 20}]
    assert "Things to raise with the landlord" in reply and "Reading list" not in reply


async def test_how_many_tasks_did_i_complete(demo):
    reply, calls = await answer(demo, "how many tasks did I complete?")
    completed = len(await titles(demo, status="completed"))
    assert reply == f"You have completed **{completed}** tasks."
    assert calls == [{"tool": "query_tasks", "status": "completed", "limit": 1}]


async def test_how_many_tasks_did_i_finish_this_week_counts_those_alone_and_says_which_days(demo):
    reply, calls = await answer(demo, "how many tasks did I finish this week?")
    assert calls == [{"tool": "query_tasks", "status": "completed", "completed": "this_week", "limit": 1}]
    today = timezone.localdate()
    monday = today - dt.timedelta(days=today.weekday())
    done = await titles(demo, status="completed", completed_at__date__range=(monday, today))
    total = await titles(demo, status="completed")
    assert len(done) < len(total)  # the demo has older completed tasks, which are not counted
    days = f" ({monday:%a} {monday:%b} {monday.day} – {today:%a} {today:%b} {today.day})" if monday != today else ""
    assert reply == f"You have completed **{len(done)}** {'task' if len(done) == 1 else 'tasks'} this week{days}."


async def test_how_many_notes_gives_the_number_alone(demo):
    reply, calls = await answer(demo, "how many notes do I have?")
    count = await database_sync_to_async(Note.objects.filter(owner=demo).count)()
    assert count > 1 and reply == f"You have **{count}** notes."
    assert calls == [{"tool": "query_notes", "limit": 1}]
    reply, calls = await answer(demo, "how many notes are in Atlas?")
    in_atlas = await database_sync_to_async(Note.objects.filter(owner=demo, project__name="Atlas").count)()
    assert reply == f"You have **{in_atlas}** note{'s' if in_atlas != 1 else ''} in Atlas."
    assert calls[-1]["tool"] == "query_notes" and calls[-1]["limit"] == 1 and "project_id" in calls[-1]


async def test_search_tasks(demo):
    reply, _ = await answer(demo, "find tasks about design")
    design = [t for t in await titles(demo) if "design" in t.lower()]
    assert design and all(t in reply for t in design)


async def test_who_one_needs_to_call_is_read_from_the_open_tasks_not_the_guide(demo):
    # The guide mentions "tool calls": a question about one's own errands is not asked of it.
    reply, calls = await answer(demo, "who do I need to call?")
    assert [c["tool"] for c in calls] == ["query_tasks"]
    open_calls = [t for t in await titles(demo, status__in=["todo", "in_progress"]) if "call" in t.lower()]
    assert open_calls and all(t in reply for t in open_calls)
    assert "on-call" not in reply.lower()  # a completed task that says "call"


async def test_which_tasks_are_blocked_lists_none_when_no_title_says_so_rather_than_every_task(demo):
    reply, calls = await answer(demo, "which tasks are blocked?")
    assert [c["tool"] for c in calls] == ["query_tasks"] and calls[0]["search"] == "blocked"
    assert reply == "You have no tasks matching “blocked”."


async def test_show_me_the_launch_plan_finds_the_note_of_that_name(demo):
    reply, calls = await answer(demo, "show me the launch plan")
    assert [c["tool"] for c in calls] == ["query_tasks", "query_notes"]
    assert "**Launch plan for the Atlas relaunch**" in reply


async def test_is_the_passport_renewed_shows_the_task_with_its_status(demo):
    reply, calls = await answer(demo, "is the passport renewed?")
    assert [c["tool"] for c in calls] == ["query_tasks"]
    assert "**Renew passport** — Home · to-do" in reply


async def test_the_status_of_a_thing_that_is_no_project_is_its_task_not_the_guides_theme_menu(demo):
    reply, calls = await answer(demo, "what's the status of the dark mode design?")
    assert calls == [{"tool": "query_tasks", "status": "all", "search": "dark mode design", "limit": 50}]
    assert "**Finalize dark mode design for settings screens** — Harbor · in-progress" in reply and "theme menu" not in reply


async def test_anything_on_a_day_lists_what_is_due_then(demo):
    reply, calls = await answer(demo, "do I have anything tomorrow?")
    assert [(c["tool"], c.get("due")) for c in calls] == [("query_tasks", "tomorrow")]
    assert "**Call landlord about the leaking faucet**" in reply


async def test_the_latest_note_is_the_one_changed_last_shown_whole(demo):
    reply, calls = await answer(demo, "what's the latest note?")
    assert [c["tool"] for c in calls] == ["query_notes"] and calls[0]["limit"] == 1
    newest, *older = await database_sync_to_async(lambda: list(Note.objects.filter(owner=demo).order_by("-updated_at", "-id")))()
    assert reply.startswith(f"Your latest note:\n\n**{newest.title}**")
    assert newest.content.split(".")[0] in reply and not any(f"**{n.title}**" in reply for n in older)


async def test_list_projects_with_stats(demo):
    reply, _ = await answer(demo, "list my projects")
    assert "You have 3 projects" in reply and "**Harbor**" in reply and "in progress" in reply


async def test_anything_else_gets_an_honest_capability_answer(demo):
    reply, calls = await answer(demo, "write me a poem about the sea")
    assert calls == [] and "offline engine" in reply and "LLM_BASE_URL" in reply


@pytest.mark.parametrize(
    "text",
    ["edit the note Retro", "update the description of the Atlas project", "delete all my projects", "clear the text of the note Retro"],
)
async def test_a_change_to_notes_or_projects_is_refused_in_words_and_writes_nothing(demo, text):
    from workspace.models import Note, Project

    def counts():
        return Note.objects.count(), Project.objects.count(), Task.objects.count()

    before = await database_sync_to_async(counts)()
    reply, calls = await answer(demo, text)
    assert calls == [] and reply.startswith("Offline I can add, complete, reopen, start") and "nothing was changed" in reply
    assert await database_sync_to_async(counts)() == before


@pytest.mark.parametrize("text", ["mark it as done", "delete those tasks"])
async def test_a_change_to_it_asks_for_the_task_by_name_and_writes_nothing(demo, text):
    before = await titles(demo, status="completed")
    reply, calls = await answer(demo, text)
    assert calls == [] and "can't tell what “" in reply and "nothing was changed" in reply
    assert "mark buy milk as done" in reply  # how to say it so it works
    assert await titles(demo, status="completed") == before and await database_sync_to_async(Task.objects.count)() == 80


async def test_empty_workspace_says_so(charlie):
    reply, _ = await answer(charlie, "what's in progress?")
    assert reply == "You have no in-progress tasks."


@pytest.mark.parametrize("text", ["How am I doing?", "summarize my week", "give me an overview"])
async def test_how_am_i_doing_counts_what_is_open_late_due_and_done_then_lists_what_needs_doing(demo, text):
    reply, calls = await answer(demo, text)
    assert calls == [
        {"tool": "query_tasks", "status": "open", "limit": 1},
        {"tool": "query_tasks", "status": "open", "due": "overdue", "limit": 10},
        {"tool": "query_tasks", "status": "open", "due": "next_7_days", "limit": 10},
        {"tool": "query_tasks", "status": "completed", "completed": "last_7_days", "limit": 1},
    ]
    today = timezone.localdate()
    week_ago, in_a_week = today - dt.timedelta(days=6), today + dt.timedelta(days=6)
    open_ = {"status__in": ["todo", "in_progress"]}
    overdue = await titles(demo, due_date__lt=today, **open_)
    upcoming = await titles(demo, due_date__range=(today, in_a_week), **open_)
    done = await titles(demo, status="completed", completed_at__date__range=(week_ago, today))
    assert overdue and upcoming and done  # the demo workspace has some of each
    assert f"- **{len(await titles(demo, **open_))}** open tasks\n- **{len(overdue)}** overdue\n" in reply
    assert f"- **{len(upcoming)}** due in the next 7 days ({today:%a} {today:%b} {today.day} – " in reply
    assert f"- **{len(done)}** completed in the last 7 days" in reply
    assert f"**Overdue** ({len(overdue)}):" in reply and all(f"**{t}**" in reply for t in overdue[:10])
    assert f"**Due in the next 7 days** ({len(upcoming)}):" in reply and all(f"**{t}**" in reply for t in upcoming[:10])
    later = await titles(demo, due_date__gt=in_a_week, **open_)
    assert later and not any(f"**{t}**" in reply for t in later)


async def test_how_am_i_doing_with_nothing_open_says_so(charlie):
    reply, _ = await answer(charlie, "how am I doing?")
    today = timezone.localdate()
    assert (
        reply
        == f"Here's where you stand today ({today:%a} {today:%b} {today.day}): nothing is open, and **0** completed in the last 7 days."
    )


@pytest.mark.parametrize("question", ["What should I focus on today?", "what do I need to do today?", "what's on my plate today?"])
async def test_what_to_focus_on_lists_the_overdue_then_today_then_urgent_tasks_once_each(demo, question):
    reply, calls = await answer(demo, question)
    assert calls == [
        {"tool": "query_tasks", "status": "open", "due": "overdue", "limit": 20},
        {"tool": "query_tasks", "status": "open", "due": "today", "limit": 20},
        {"tool": "query_tasks", "status": "open", "priority_at_least": "urgent", "limit": 20},
    ]
    today = timezone.localdate()
    open_ = {"status__in": ["todo", "in_progress"]}
    overdue = await titles(demo, due_date__lt=today, **open_)
    due_today = await titles(demo, due_date=today, **open_)
    urgent = await titles(demo, priority="urgent", **open_)
    first = list(dict.fromkeys(overdue + due_today + urgent))
    assert overdue and due_today and set(urgent) & set(overdue + due_today)  # the demo has an urgent task that is also late or due
    assert reply.startswith(f"Start with these — overdue, due today or urgent ({len(first)}):")
    listed = [line.split("**")[1] for line in reply.splitlines() if line.startswith("- **")]
    assert sorted(listed) == sorted(first) and len(listed) == len(set(listed))
    assert listed.index(overdue[0]) < listed.index(due_today[0])
    rest = await titles(demo, **open_)
    assert not set(listed) & (set(rest) - set(first))


async def test_what_one_needs_to_do_on_another_day_lists_that_days_open_tasks_not_every_open_task(demo):
    reply, calls = await answer(demo, "what do I need to do tomorrow?")
    assert calls == [{"tool": "query_tasks", "status": "open", "due": "tomorrow", "limit": 50}]
    tomorrow = timezone.localdate() + dt.timedelta(days=1)
    expected = await titles(demo, due_date=tomorrow, status__in=["todo", "in_progress"])
    listed = [line.split("**")[1] for line in reply.splitlines() if line.startswith("- **")]
    assert expected and sorted(listed) == sorted(expected)


async def test_what_to_focus_on_in_a_project_and_when_nothing_is_pressing(demo, charlie):
    reply, calls = await answer(demo, "what's next in Atlas?")
    atlas = await database_sync_to_async(lambda: demo.projects.get(name="Atlas").pk)()
    assert [c["tool"] for c in calls] == ["query_projects", "query_tasks", "query_tasks", "query_tasks"]
    assert all(c["project_id"] == atlas for c in calls[1:])
    assert reply.startswith("Start with these in Atlas — ")
    assert not any(f"**{t}**" in reply for t in await titles(demo, project__name="Harbor"))

    await database_sync_to_async(workspace_services.create_task)(user=charlie, title="Plant the bulbs")
    reply, _ = await answer(charlie, "what should I work on next?")
    assert reply.startswith("Nothing is overdue, due today or urgent.") and "“what's on my plate?”" in reply


async def test_archived_projects_are_listed_alone_and_none_is_said_so(demo):
    reply, calls = await answer(demo, "list my archived projects")
    assert calls == [{"tool": "query_projects", "include_stats": True}]
    assert reply == "You have no archived projects."
    await database_sync_to_async(lambda: demo.projects.filter(name="Home").update(archived=True))()
    reply, _ = await answer(demo, "which projects are archived?")
    assert reply.startswith("You have 1 archived project:") and "**Home** *(archived)*" in reply
    assert "Atlas" not in reply and "Harbor" not in reply


async def test_which_project_has_the_most_open_tasks_is_answered_with_every_projects_counts(demo):
    reply, calls = await answer(demo, "which project has the most open tasks?")
    assert calls == [{"tool": "query_projects", "include_stats": True}]
    for name in ("Atlas", "Harbor", "Home"):
        todo = len(await titles(demo, project__name=name, status="todo"))
        assert f"**{name}** — {todo} to do, " in reply


async def test_thanks_is_answered_in_kind_and_one_task_shown_by_its_name(demo):
    reply, calls = await answer(demo, "thanks!")
    assert calls == [] and reply.startswith("You're welcome!")
    reply, calls = await answer(demo, "show the task Renew passport")
    assert calls == [{"tool": "query_tasks", "status": "all", "search": "Renew passport", "limit": 50}]
    assert reply.startswith("Here are your tasks matching “Renew passport” (1):") and "**Renew passport** — Home" in reply


async def test_a_task_asked_about_in_other_words_is_found_by_the_rarest_word_in_a_shorter_form(demo):
    reply, calls = await answer(demo, "find the passport renewal task")
    assert calls == [
        {"tool": "query_tasks", "status": "all", "search": "passport renewal", "limit": 50},
        {"tool": "query_tasks", "status": "all", "search": "renew", "limit": 50},
    ]
    assert reply.startswith("No task title has “passport renewal”. Here are your tasks matching “renew” (1):")
    assert "**Renew passport** — Home" in reply
    reply, calls = await answer(demo, "is the zebra crossing done?")  # in no title, either way
    assert [c["search"] for c in calls] == ["zebra crossing", "zebra"]
    assert reply == "You have no tasks matching “zebra crossing”."
    reply, calls = await answer(demo, "where is my dentist task?")  # found as asked: searched once
    assert [c["search"] for c in calls] == ["dentist"] and "**Book dentist appointment**" in reply


async def test_a_bare_name_is_that_projects_status_or_else_a_word_looked_up_in_tasks_and_notes(demo):
    reply, calls = await answer(demo, "Harbor")
    assert reply.startswith("**Harbor**: ") and " to do, " in reply.split("\n")[0]  # its counts, then what is open
    assert [c["tool"] for c in calls] == ["query_projects", "query_tasks"]
    reply, calls = await answer(demo, "Landlord")  # no project: a task title and a note say it
    assert [c["tool"] for c in calls] == ["query_projects", "query_tasks", "query_notes"]
    assert "Call landlord about the leaking faucet" in reply and "Things to raise with the landlord" in reply


async def test_whats_due_today_or_tomorrow_lists_each_day_in_turn(alice):
    today = timezone.localdate()
    for title, due in [("Pay rent", today), ("Call the plumber", today + dt.timedelta(days=1)), ("Later on", today + dt.timedelta(days=2))]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due)
    reply, calls = await answer(alice, "what's due today or tomorrow?")
    assert [(c["due"], c["status"]) for c in calls] == [("today", "all"), ("tomorrow", "all")]
    today_part, tomorrow_part = reply.split("\n\nHere are your tasks due tomorrow (1):")
    assert today_part.startswith("Here are your tasks due today (1):") and "Pay rent" in today_part
    assert "Call the plumber" in tomorrow_part and "Pay rent" not in tomorrow_part
    assert "Later on" not in reply


async def test_a_change_to_the_tasks_of_two_windows_is_not_proposed(alice):
    today = timezone.localdate()
    await database_sync_to_async(workspace_services.create_task)(user=alice, title="Pay rent", due_date=today)
    reply, calls = await answer(alice, "delete the tasks due today or tomorrow")
    assert reply == phrasing.ONE_WINDOW_AT_A_TIME and calls == []
    assert await titles(alice) == ["Pay rent"]


async def test_whats_due_with_no_day_lists_what_is_late_then_the_next_seven_days(alice):
    today = timezone.localdate()
    for title, due in [
        ("Late one", today - dt.timedelta(days=2)),
        ("This week", today + dt.timedelta(days=3)),
        ("Far off", today + dt.timedelta(days=30)),
    ]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due)
    reply, calls = await answer(alice, "what's due?")
    assert [c["due"] for c in calls] == ["overdue", "next_7_days"]
    late, coming = reply.split("\n\nHere are your tasks due in the next 7 days")
    assert late.startswith("Here are your overdue tasks (1):") and "Late one" in late
    assert "This week" in coming and "Far off" not in reply


@pytest.mark.parametrize(
    ("text", "picked"),
    [
        ("mark everything due today as done", {"tool": "query_tasks", "due": "today"}),
        ("push everything due today to tomorrow", {"tool": "query_tasks", "status": "open", "due": "today"}),
        ("delete everything due today", {"tool": "query_tasks", "due": "today"}),
    ],
)
async def test_a_change_to_everything_due_on_a_day_picks_the_tasks_due_then_and_no_others(alice, text, picked):
    today = timezone.localdate()
    for title, due in [
        ("Pay rent", today),
        ("Everything due today", today + dt.timedelta(days=5)),
        ("Later", today + dt.timedelta(days=5)),
    ]:
        await database_sync_to_async(workspace_services.create_task)(user=alice, title=title, due_date=due)
    conversation = await turn_rows(alice, text)
    await agent.run_pending_turns(conversation.pk)
    rows = await database_sync_to_async(lambda: list(conversation.messages.order_by("id").values("role", "tool_calls", "content")))()
    calls = [json.loads(c["arguments"]) | {"tool": c["name"]} for r in rows for c in r["tool_calls"]]
    finding = next(c for c in calls if c["tool"] == "query_tasks" and c.get("due") == "today")
    assert {k: finding[k] for k in picked} == picked and "search" not in finding
    (proposal,) = [c for c in calls if c["tool"] == "propose_operations"]
    assert len(proposal["operations"]) == 1  # "Pay rent" alone, not the task whose title says it


async def test_a_question_the_knowledge_base_cannot_answer_is_looked_up_in_the_persons_tasks_and_notes(alice, bob):
    assert (await database_sync_to_async(knowledge_services.rebuild_kb_index)()).ok  # the shipped user guide
    create = database_sync_to_async(workspace_services.create_note)
    await create(user=alice, title="Home", content="The wifi password is on the fridge.")
    await create(user=bob, title="Office", content="The wifi password is taped under the desk.")
    reply, calls = await answer(alice, "where did I put the wifi password?")
    assert [c["tool"] for c in calls] == LOOKED_UP
    assert calls[1]["search"] == calls[2]["search_term"] == "wifi password"
    assert reply.startswith("I found 1 note matching “wifi password”:") and "on the fridge" in reply and "desk" not in reply
    assert reply.endswith("The knowledge base doesn't cover that; these are from your notes.")

    reply, calls = await answer(alice, "Can questions be answered by voice?")  # in neither
    assert [c["tool"] for c in calls] == LOOKED_UP_TWICE
    assert calls[2]["search_term"] == "questions answered voice" and calls[4]["search_term"] == "answered voice"
    assert reply.startswith("The knowledge base doesn't cover that, so I won't guess.")

    # Words the note does not use ("issue", "decide") are left out of a second search, the
    # commonest first; the reply names what was searched for.
    await create(user=alice, title="Kitchen", content="The faucet drips again.")
    await create(user=bob, title="Bob's kitchen", content="My faucet is fine.")
    reply, calls = await answer(alice, "what's the faucet issue?")
    assert [c["tool"] for c in calls] == LOOKED_UP_TWICE
    assert calls[2]["search_term"] == "faucet issue" and calls[4]["search_term"] == "faucet"
    assert reply.startswith("I found 1 note matching “faucet”:") and "drips again" in reply and "fine" not in reply

    # What was done to a thing ("drop") is the asker's word and may not be the note's: it is left
    # out first, before the commonest word ("account").
    await create(user=alice, title="Decision: onboarding without an account wall", content="New users explore before signing up.")
    reply, calls = await answer(alice, "why did we drop the account wall?")
    assert [c["tool"] for c in calls] == LOOKED_UP_TWICE
    assert calls[2]["search_term"] == "drop account wall" and calls[4]["search_term"] == "account wall"
    assert reply.startswith("I found 1 note matching “account wall”:") and "explore before signing up" in reply

    # A question about how Clarion works that the documentation came close to: its closest pages
    # are named, and the notes are not searched.
    await create(user=alice, title="Export", content="Export the data of the Harbor beta.")
    reply, calls = await answer(alice, "How do I export my data?")
    assert [c["tool"] for c in calls] == ["search_knowledge_base"]
    assert "The closest pages: [" in reply and "Harbor" not in reply

    # A question about what someone said or when something is, which some guide page comes close
    # to, is still the person's notes' to answer; what was said names nothing to search for.
    await create(user=alice, title="Budget call", content="Bob said the budget is capped at 40k.")
    await create(user=alice, title="Dentist", content="Dentist appointment on Friday at 3pm.")
    for question, term, found in [
        ("what did Bob say about the budget?", "bob budget", "capped at 40k"),
        ("when is my dentist appointment?", "dentist appointment", "Friday at 3pm"),
    ]:
        reply, calls = await answer(alice, question)
        assert [c["tool"] for c in calls] == LOOKED_UP, question
        assert (await newest_tool_result(alice, "search_knowledge_base"))["closest_pages"], question  # a page came close
        assert calls[2]["search_term"] == term and found in reply and "closest" not in reply, reply

    # The guide's examples of asking ("remind me to call Bob tomorrow") say nothing about Bob, and
    # "what's the address of …?" asks for a fact of the person's own, not how Clarion works.
    await create(user=alice, title="Travel", content="My passport is in the desk drawer. The venue address: 12 Quay Street.")
    for question, found in [
        ("who is Bob?", "capped at 40k"),
        ("when is the dentist?", "Friday at 3pm"),
        ("where is my passport?", "desk drawer"),
        ("what's the address of the venue?", "12 Quay Street"),
    ]:
        reply, calls = await answer(alice, question)
        assert [c["tool"] for c in calls] == LOOKED_UP, question
        assert found in reply and reply.endswith("these are from your notes."), reply

    # A task's title answers too ("did I call …?" is its status), and the reply says where from;
    # another person's task never shows.
    add_task = database_sync_to_async(workspace_services.create_task)
    await add_task(user=alice, title="Call landlord about the faucet")
    await add_task(user=bob, title="Call landlord about the rent")
    reply, calls = await answer(alice, "did I call the landlord?")
    assert [c["tool"] for c in calls] == LOOKED_UP and calls[1]["search"] == "call landlord"
    assert "**Call landlord about the faucet** — to-do" in reply and "rent" not in reply
    assert reply.endswith("The knowledge base doesn't cover that; these are from your tasks.")
    await create(user=alice, title="Landlord", content="Call the landlord before the end of the month.")
    reply, _ = await answer(alice, "did I call the landlord?")
    assert "faucet" in reply and "end of the month" in reply and reply.endswith("these are from your tasks and notes.")

    # Nothing in the tasks or notes either: the closest pages are still named.
    reply, calls = await answer(alice, "what did Carol say about the roadmap?")
    assert [c["tool"] for c in calls] == LOOKED_UP_TWICE
    assert reply.startswith("The knowledge base doesn't cover that, so I won't guess.")


async def test_being_told_a_reply_was_wrong_says_how_to_ask_again_and_changes_nothing(alice):
    reply, calls = await answer(alice, "that's not what I asked")
    assert reply == phrasing.MISREAD and calls == []
    assert "Nothing was changed unless you pressed Apply." in reply


async def test_a_few_words_alone_are_looked_up_and_the_reply_says_how_to_add_them(alice):
    reply, calls = await answer(alice, "dentist friday")
    assert [c["tool"] for c in calls] == ["query_tasks", "query_notes"]
    assert reply == "Nothing in your tasks or notes matches “dentist friday”. To add it as a task, say “add a task called dentist friday”."
    assert parse("add a task called dentist friday").kind == "create_task"


async def test_every_listing_reads_due_dates_against_the_persons_today(alice):
    today = timezone.localdate()
    project = await database_sync_to_async(workspace_services.create_project)(user=alice, name="Atlas")
    await database_sync_to_async(workspace_services.create_task)(
        user=alice, title="Ship it", project_id=project.pk, due_date=today + dt.timedelta(days=1)
    )
    for text in ("how is the Atlas project going?", "show my tasks"):  # neither picks a due window
        reply, _ = await answer(alice, text)
        assert "to-do · due tomorrow" in reply and "**Ship it**" in reply, (text, reply)
