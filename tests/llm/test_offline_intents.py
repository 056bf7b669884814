import datetime as dt
import re

import pytest

from llm.offline import words
from llm.offline.intents import Intent, asks_how_clarion_works, parse


@pytest.mark.parametrize(
    "text, expected",
    [
        ("what's in progress?", Intent("tasks", status="in_progress")),
        ("show my in-progress tasks", Intent("tasks", status="in_progress")),
        ("show my tasks in Atlas", Intent("tasks", project_name="Atlas")),
        # What is left is everything not completed, in progress too.
        ("what's left to do in the Harbor project?", Intent("tasks", status="open", project_name="Harbor")),
        ("what's left in Harbor?", Intent("tasks", status="open", project_name="Harbor")),
        ("when is the passport due?", Intent("tasks", search="passport")),
        ("which project has the most open tasks?", Intent("projects")),
        ("thanks!", Intent("thanks")),
        ("what's today's date?", Intent("today")),
        ("what time is it?", Intent("time")),
        ("show the task Renew passport", Intent("tasks", search="Renew passport")),
        ("show task buy milk in Harbor", Intent("tasks", search="buy milk", project_name="Harbor")),
        ("tell me about the Harbor project", Intent("project_status", project_name="Harbor")),
        ("how many tasks did I finish this week?", Intent("count_tasks", status="completed", completed="this_week")),
        (
            "how many tasks have we closed in Atlas last month?",
            Intent("count_tasks", status="completed", project_name="Atlas", completed="last_month"),
        ),
        (
            "add a task to call the venue in Harbor by Friday",
            Intent("create_task", title="call the venue", project_name="Harbor", due="friday"),
        ),
        ("remind me to meet Bob in Paris tomorrow", Intent("create_task", title="meet Bob in Paris", due="tomorrow")),
        ("list my archived projects", Intent("projects", archived=True)),
        ("which projects are archived?", Intent("projects", archived=True)),
        (
            "add a note called Venue ideas: the old mill, the boathouse",
            Intent("create_note", title="Venue ideas", content="the old mill, the boathouse"),
        ),
        ("add a note to Harbor: call the venue", Intent("create_note", title="call the venue", project_name="Harbor")),
        ("create a note Meeting at 10:30 with Bob", Intent("create_note", title="Meeting at 10:30 with Bob")),
        ("show tasks due after Friday", Intent("open_range")),
        ("what's due between Dec 1 and Dec 5?", Intent("open_range")),
        ("what's due in December?", Intent("open_range")),
        ("what did I complete in October?", Intent("open_range")),
        ("tasks due in 2 weeks", Intent("open_range")),
        ("tasks due in 3 days", Intent("tasks", due="next_7_days")),
        ("what's due within a week?", Intent("tasks", due="next_7_days")),
        ("tasks due end of month", Intent("tasks", due="this_month")),
        ("when's the task “Buy milk” due", Intent("tasks", search="Buy milk")),
        ("which tasks are not done yet?", Intent("tasks", status="open")),
        ("how many tasks are remaining?", Intent("count_tasks", status="open")),
        ("show my pending tasks", Intent("tasks", status="todo")),
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
        ("What's on my plate today?", Intent("focus")),
        ("what's on my plate in Atlas?", Intent("tasks", status="open", project_name="Atlas")),
        ("what's in progress on my plate?", Intent("tasks", status="in_progress")),
        ("what should I work on next?", Intent("focus")),
        ("what should I work on?", Intent("tasks", status="open")),
        ("what's in the Atlas project?", Intent("tasks", project_name="Atlas")),
        ("what's urgent?", Intent("tasks", status="open", priority="urgent")),
        ("which tasks are high priority in Harbor?", Intent("tasks", status="open", project_name="Harbor", priority="high")),
        ("how many urgent tasks do I have?", Intent("count_tasks", status="open", priority="urgent")),
        ("show completed high priority tasks", Intent("tasks", status="completed", priority="high")),
        ("find tasks about the urgent fix", Intent("tasks", search="urgent fix")),
        ("delete my notes", Intent("delete_notes")),
        ("please archive the Harbor project", Intent("update_project", project_name="Harbor", new_archived=True)),
        ("create a project called Garden", Intent("create_project", title="Garden")),
        ("mark the Atlas project as done", Intent("cannot")),
        ("can you rename the note Retro to Launch retro?", Intent("rename_note", search="Retro", new_title="Launch retro")),
        ("replace the text of the note Retro with hello", Intent("cannot")),
        ("notes about the update", Intent("notes", search="update")),
        ("what did I write about the landlord?", Intent("notes", search="landlord")),
        ("anything I jotted down about the venue in Harbor?", Intent("notes", search="venue", project_name="Harbor")),
        ("What can I work on today in Harbor?", Intent("focus", project_name="Harbor")),
        ("what should I finish first?", Intent("focus")),
        ("What should I focus on today?", Intent("focus")),
        ("what needs my attention?", Intent("focus")),
        ("what should I do next to connect a model?", Intent("knowledge", search="what should I do next to connect a model?")),
        ("what did I finish this week?", Intent("tasks", status="completed", completed="this_week")),
        ("what did I do on Thursday?", Intent("tasks", status="completed", completed="thursday")),
        ("what did I write on Monday?", Intent("notes", changed="monday")),
        ("is the Friday report done?", Intent("tasks", search="Friday report")),
        ("what's due today or tomorrow?", Intent("tasks", due="today", also_due="tomorrow")),
        ("what's due?", Intent("tasks", due="overdue", also_due="next_7_days")),
        ("show the note Reading list", Intent("notes", search="Reading list")),
        ("show me my week", Intent("overview")),
        ("that's not what I asked", Intent("misread")),
        ("that's wrong, show my tasks in Atlas", Intent("tasks", project_name="Atlas")),
        ("why?", Intent("help")),
        ("buy milk", Intent("find", search="buy milk")),
        ("still here", Intent("help")),
        ("today's tasks", Intent("tasks", due="today")),
        ("tasks this week", Intent("tasks", due="this_week")),
        ("what's left this week?", Intent("tasks", status="open", due="this_week")),
        ("show in progress and to do", Intent("tasks", status="open")),
        ("yes", Intent("help")),
        ("good night", Intent("help")),
        ("put buy milk in Harbor", Intent("move_tasks", search="buy milk", target_project="Harbor")),
        ("add: call mom", Intent("create_task", title="call mom")),
        ("what's Atlas about?", Intent("maybe_project", project_name="Atlas")),
        ("describe the Atlas project", Intent("project_status", project_name="Atlas")),
        ("which projects are done?", Intent("projects")),
        ("projects with no tasks", Intent("projects")),
        ("copy the note Retro", Intent("cannot")),
        ("duplicate buy milk", Intent("cannot")),
        ("make a project for the garden", Intent("create_project", title="garden")),
        (
            "which tasks did I finish yesterday in Harbor?",
            Intent("tasks", status="completed", project_name="Harbor", completed="yesterday"),
        ),
        ("show completed tasks from last week", Intent("tasks", status="completed", completed="last_week")),
        ("tasks I completed today", Intent("tasks", status="completed", completed="today")),
        ("show all Harbor tasks", Intent("tasks", project_name="Harbor")),
        ("show my Harbor notes", Intent("notes", project_name="Harbor")),
        ("show the Reading List note", Intent("notes", search="Reading List")),
        ("what did I add today?", Intent("tasks", added="today")),
        ("what's next?", Intent("focus")),
        ("what do I have tomorrow?", Intent("tasks", due="tomorrow")),
        ("what have I got on today?", Intent("tasks", due="today")),
        ("what's happening this week?", Intent("tasks", due="this_week")),
        ("what are my tasks for this week?", Intent("tasks", due="this_week")),
        ("what do I have planned for tomorrow in Atlas?", Intent("tasks", due="tomorrow", project_name="Atlas")),
        ("what's coming up?", Intent("tasks", due="next_7_days")),
        ("what's on my plate today?", Intent("focus")),
        ("what's on my plate this week?", Intent("tasks", status="open", due="this_week")),
        ("what's the most urgent thing?", Intent("tasks", status="open", priority="urgent")),
        ("clear my completed tasks", Intent("delete_tasks", status="completed")),
        ("archive Atlas", Intent("update_project", project_name="Atlas", new_archived=True)),
        ("which tasks did I create yesterday?", Intent("tasks", added="yesterday")),
        ("show me the tasks I added last week", Intent("tasks", added="last_week")),
        ("what have I added lately?", Intent("tasks", added="last_7_days")),
        ("what did I add to Atlas this week?", Intent("tasks", project_name="Atlas", added="this_week")),
        ("what did I add to the Harbor project?", Intent("tasks", project_name="Harbor")),
        ("what notes did I add today?", Intent("notes", changed="today")),
        ("any notes from last week?", Intent("notes", changed="last_week")),
        ("notes about the launch from this month", Intent("notes", search="launch", changed="this_month")),
        ("how many notes did I write this week?", Intent("count_notes", changed="this_week")),
        ("show my recent notes", Intent("notes", changed="last_7_days")),
        ("how many notes do I have?", Intent("count_notes")),
        ("what's due on 2026-12-05?", Intent("tasks", due_on="2026-12-05")),
        ("show tasks without a due date", Intent("tasks", undated=True)),
        ("which tasks have no deadline?", Intent("tasks", undated=True)),
        ("how many tasks have no due date?", Intent("count_tasks", undated=True)),
        ("undated tasks in Atlas", Intent("tasks", project_name="Atlas", undated=True)),
        ("delete the tasks about launch with no due date", Intent("delete_tasks", search="launch", undated=True)),
        ("how many tasks are due on 2026-12-05?", Intent("count_tasks", due_on="2026-12-05")),
        ("what's due on Nov 31?", Intent("no_such_date", search="Nov 31")),
        ("delete the tasks due on 2026-12-05", Intent("delete_tasks", due_on="2026-12-05")),
        ("remind me to pay rent by 2026-12-05", Intent("create_task", title="pay rent", due_on="2026-12-05")),
        ("remind me to buy the Dec 5 tickets", Intent("create_task", title="buy the Dec 5 tickets")),
        ("how many notes are in Atlas?", Intent("count_notes", project_name="Atlas")),
        ("count my notes about the launch", Intent("count_notes", search="launch")),
        ("What have I completed?", Intent("tasks", status="completed")),
        ("what did I do yesterday?", Intent("tasks", status="completed", completed="yesterday")),
        ("What did I finish last month?", Intent("tasks", status="completed", completed="last_month")),
        ("what did we get done in Atlas yesterday?", Intent("tasks", status="completed", project_name="Atlas", completed="yesterday")),
        ("show tasks I have not started", Intent("tasks", status="todo")),
        ("what haven't I started?", Intent("tasks", status="todo")),
        ("show started tasks", Intent("tasks", status="in_progress")),
        ("anything due soon?", Intent("tasks", due="next_7_days")),
        ("what is due this month?", Intent("tasks", due="this_month")),
        ("what is due on Friday?", Intent("tasks", due="friday")),
        ("how many tasks are due monday in Harbor?", Intent("count_tasks", project_name="Harbor", due="monday")),
        ("how many tasks are due next month in Atlas?", Intent("count_tasks", project_name="Atlas", due="next_month")),
        ("show me everything in Harbor", Intent("tasks", project_name="Harbor")),
        ("what is in Atlas?", Intent("tasks", project_name="Atlas")),
        ("rename the task buy milk to buy oat milk", Intent("update_tasks", search="buy milk", new_title="buy oat milk")),
        ("set buy milk to high priority", Intent("update_tasks", status="open", search="buy milk", new_priority="high")),
        ("start the task buy milk", Intent("update_tasks", status="open", search="buy milk", new_status="in_progress")),
        ("mark buy milk as in progress", Intent("update_tasks", status="open", search="buy milk", new_status="in_progress")),
        ("please reschedule the venue task to Friday", Intent("update_tasks", status="open", search="venue", new_due="friday")),
        ("what is the status of Atlas?", Intent("project_status", project_name="Atlas")),
        ("How is the Harbor project going?", Intent("project_status", project_name="Harbor")),
        ("where are we on Atlas?", Intent("project_status", project_name="Atlas")),
        ("give me a summary of Harbor", Intent("project_status", project_name="Harbor")),
        ("how is Clarion going?", Intent("knowledge", search="how is Clarion going?")),
        ("How is the weather?", Intent("knowledge", search="How is the weather?")),
        ("change my password", Intent("knowledge", search="How do I change my password?")),
        ("what do I have to do today?", Intent("focus")),
        ("what do I need to do today in Atlas?", Intent("focus", project_name="Atlas")),
        ("what do I need to do tomorrow?", Intent("tasks", status="open", due="tomorrow")),
        ("what do I have to do on friday?", Intent("tasks", status="open", due="friday")),
        ("what do I still have to do next week?", Intent("tasks", status="open", due="next_week")),
        ("What do I still need to do in Atlas?", Intent("tasks", status="open", project_name="Atlas")),
        ("what do I need to do to connect a model?", Intent("knowledge", search="what do I need to do to connect a model?")),
        ("I forgot my password", Intent("knowledge", search="I forgot my password")),
        ("do I have anything on Friday?", Intent("tasks", due="friday")),
        ("is there anything due tomorrow?", Intent("tasks", due="tomorrow")),
        ("what's the status of the dark mode design?", Intent("tasks", search="dark mode design")),
        ("how's the progress on the expense report?", Intent("tasks", search="expense report")),
        ("what's the status of Atlas?", Intent("project_status", project_name="Atlas")),
        ("what's the status of the rebuild?", Intent("knowledge", search="what's the status of the rebuild?")),
        ("find my passport note", Intent("notes", search="passport")),
        ("I can't find my passport note", Intent("notes", search="passport")),
        ("where is my landlord note?", Intent("notes", search="landlord")),
        ("find my Harbor notes", Intent("notes", project_name="Harbor")),
        ("find the passport renewal task", Intent("tasks", search="passport renewal")),
        ("what was I working on yesterday?", Intent("tasks", status="completed", completed="yesterday")),
        ("how far along is Atlas?", Intent("project_status", project_name="Atlas")),
        ("is Harbor on track?", Intent("maybe_project", project_name="Harbor")),
        ("is the Atlas project behind schedule?", Intent("maybe_project", project_name="Atlas")),
        ("what should I do this afternoon?", Intent("focus")),
        ("what should I work on tonight?", Intent("focus")),
        ("what do I have to do before Friday?", Intent("open_range")),  # no window is "before Friday"
        ("what am I working on?", Intent("tasks", status="in_progress")),
        # Whether Clarion works somewhere is asked of its guide, not of the tasks.
        ("does it work on my phone?", Intent("knowledge", search="does it work on my phone?")),
        ("will this work on Windows?", Intent("knowledge", search="will this work on Windows?")),
        ("where is my dentist task?", Intent("tasks", search="dentist")),
        ("I can't find the smoke test to-do", Intent("tasks", search="smoke test")),
        ("show me the latest task", Intent("tasks", newest=True)),  # the task added last, not one called "latest"
        ("what's my oldest open task?", Intent("tasks", status="open", oldest=True)),
        ("my most recently added task in Harbor", Intent("tasks", project_name="Harbor", newest=True)),
        ("find my urgent task", Intent("tasks", status="open", priority="urgent")),
        ("I can't log in", Intent("knowledge", search="I can't log in")),
        ("help, I can't sign in", Intent("knowledge", search="help, I can't sign in")),
        ("login doesn't work", Intent("knowledge", search="login doesn't work")),
        ("I can't upload a file", Intent("knowledge", search="I can't upload a file")),
        ("find notes about the wifi password", Intent("notes", search="wifi password")),
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
        ("remind me to call Bob in Paris", Intent("create_task", title="call Bob in Paris")),
        ("Please don't let me forget to renew the passport!", Intent("create_task", title="renew the passport")),
        ("put oat milk on my todo list", Intent("create_task", title="oat milk")),
        ("add a task to reset the router password", Intent("create_task", title="reset the router password")),
        ("put “book the venue” on my to-do list", Intent("create_task", title="book the venue")),
        ("remind me to call Bob tomorrow", Intent("create_task", title="call Bob", due="tomorrow")),
        ("Remind me to pay rent on Friday.", Intent("create_task", title="pay rent", due="friday")),
        ("remind me to water the plants tonight", Intent("create_task", title="water the plants", due="today")),
        ("remind me to prepare for Friday", Intent("create_task", title="prepare for Friday")),
        ("remind me to call the Monday club", Intent("create_task", title="call the Monday club")),
        ("add a task buy milk due friday in Harbor", Intent("create_task", title="buy milk", project_name="Harbor", due="friday")),
        ("create a task Renew passport by Monday", Intent("create_task", title="Renew passport", due="monday")),
        ("add a note call Bob tomorrow", Intent("create_note", title="call Bob tomorrow")),
        ("add buy milk to my list", Intent("create_task", title="buy milk")),
        ("create a task to call Bob in Harbor", Intent("create_task", title="call Bob", project_name="Harbor")),
        ("add a note to remember the keys", Intent("create_note", title="remember the keys")),
        ("add a note to Harbor: call the venue", Intent("create_note", title="call the venue", project_name="Harbor")),
        ("create a task in the Atlas project - Book the venue", Intent("create_task", title="Book the venue", project_name="Atlas")),
        ("delete the task buy milk", Intent("delete_tasks", search="buy milk")),
        # Reopening: completed tasks back to to-do; "not done" is never read as "done".
        ("reopen the task buy milk", Intent("reopen_tasks", status="completed", search="buy milk")),
        ("mark the task buy milk as not done", Intent("reopen_tasks", status="completed", search="buy milk")),
        ("set the design tasks back to to-do", Intent("reopen_tasks", status="completed", search="design")),
        (
            "reopen the tasks I completed today in Atlas",
            Intent("reopen_tasks", status="completed", project_name="Atlas", completed="today"),
        ),
        ("uncomplete Buy a present for Sam", Intent("reopen_tasks", status="completed", search="Buy a present for Sam")),
        ("reopen it", Intent("which_task", search="it")),
        ("reopen the task", Intent("which_task", search="the task")),
        ("reopen the Atlas project", Intent("cannot")),
        # The due day said after a named task picks by it; it is not part of the title.
        ("delete the task buy milk due Friday", Intent("delete_tasks", search="buy milk", due="friday")),
        ("mark the task call Bob that is due today as done", Intent("complete_tasks", search="call Bob", due="today")),
        ("delete the task pay the due fee", Intent("delete_tasks", search="pay the due fee")),
        ("delete task buy milk in Harbor", Intent("delete_tasks", search="buy milk", project_name="Harbor")),
        ("complete the task renew passport", Intent("complete_tasks", search="renew passport")),
        ("mark the task call the landlord as done", Intent("complete_tasks", search="call the landlord")),
        ("mark buy milk as done", Intent("complete_tasks", search="buy milk")),
        ("mark everything in Atlas as done", Intent("complete_tasks", project_name="Atlas")),
        ("move the task buy milk to Harbor", Intent("move_tasks", search="buy milk", target_project="Harbor")),
        ("move buy milk to Harbor", Intent("move_tasks", search="buy milk", target_project="Harbor")),
        ("Please move “call the venue” to the Atlas project.", Intent("move_tasks", search="call the venue", target_project="Atlas")),
        ("remove every task", Intent("delete_tasks")),
        ("delete the tasks due today", Intent("delete_tasks", due="today")),
        ("delete the overdue tasks", Intent("delete_tasks", due="overdue")),
        ("mark the overdue tasks as done", Intent("complete_tasks", due="overdue")),
        ("complete all the urgent tasks", Intent("complete_tasks", priority="urgent")),
        ("delete the tasks I added today", Intent("delete_tasks", added="today")),
        ("delete the tasks I completed last month", Intent("delete_tasks", status="completed", completed="last_month")),
        ("remind me to check the tasks I added", Intent("create_task", title="check the tasks I added")),
    ],
)
def test_parse_write_intents(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text", ["delete the task", "move the task to Harbor", "mark it as done", "complete the to-do", "mark the Atlas project as done"]
)
def test_a_change_to_one_task_that_names_none_proposes_nothing(text):
    # Read as a listing, never as a change to every task.
    assert parse(text).kind not in {"delete_tasks", "complete_tasks", "move_tasks"}


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("mark it as done", "it"),
        ("Mark this task as done.", "this task"),
        ("delete them", "them"),
        ("delete those tasks", "those tasks"),
        ("move it to Harbor", "it"),
        ("could you complete that one please", "that one"),
    ],
)
def test_a_change_to_a_task_named_only_by_pointing_back_asks_which(text, pointer):
    assert parse(text) == Intent("which_task", search=pointer)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("complete these design tasks", Intent("complete_tasks", search="design")),
        ("delete these completed tasks", Intent("delete_tasks", status="completed")),
        ("delete this note", Intent("which_task", search="this note")),
    ],
)
def test_pointing_words_before_a_filter_are_not_a_pointer(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text", ["move buy milk to tomorrow", "move the launch note to Atlas", "move everything to Harbor"])
def test_a_move_needs_a_named_task_and_a_project(text):
    assert parse(text).kind != "move_tasks"


def test_a_month_and_day_is_the_nearest_such_date():
    assert words.due_date("due on Dec 31", today=dt.date(2027, 1, 1)) == "2026-12-31"
    assert words.due_date("due Jan 2nd", today=dt.date(2026, 12, 30)) == "2027-01-02"
    assert words.due_date("due on the 5th of December", today=dt.date(2026, 11, 28)) == "2026-12-05"
    assert words.due_date("due Feb 29", today=dt.date(2027, 6, 1)) == "2028-02-29"
    assert words.due_date("due Nov 31", today=dt.date(2026, 11, 28)) is None


def _year_of(month, day):
    """The year the parser reads a month and day in: of the years around today, the nearest."""
    today = dt.date.today()
    return min((dt.date(y, month, day) for y in (today.year - 1, today.year, today.year + 1)), key=lambda d: abs((d - today).days)).year


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A new priority: what is changed is still open.
        ("make the passport task high priority", Intent("update_tasks", status="open", search="passport", new_priority="high")),
        ("bump buy milk to urgent", Intent("update_tasks", status="open", search="buy milk", new_priority="urgent")),
        ("set the priority of buy milk to low", Intent("update_tasks", status="open", search="buy milk", new_priority="low")),
        ("make buy milk normal priority", Intent("update_tasks", status="open", search="buy milk", new_priority="medium")),
        ("prioritize the passport task", Intent("update_tasks", status="open", search="passport", new_priority="high")),
        ("deprioritise buy milk", Intent("update_tasks", status="open", search="buy milk", new_priority="low")),
        ("make all tasks due today urgent", Intent("update_tasks", status="open", due="today", new_priority="urgent")),
        ("make the tasks in Atlas urgent", Intent("update_tasks", status="open", project_name="Atlas", new_priority="urgent")),
        # A new due day: a window the query tool dates, or a date; the new day never picks the tasks.
        ("push buy milk to next week", Intent("update_tasks", status="open", search="buy milk", new_due="next_week")),
        ("postpone the passport task to Monday", Intent("update_tasks", status="open", search="passport", new_due="monday")),
        ("change the due date of buy milk to next Friday", Intent("update_tasks", status="open", search="buy milk", new_due="friday")),
        ("give the passport task a due date of Friday", Intent("update_tasks", status="open", search="passport", new_due="friday")),
        ("reschedule buy milk for tonight", Intent("update_tasks", status="open", search="buy milk", new_due="today")),
        (
            "move the Dec 5 report to Dec 8",
            Intent("update_tasks", status="open", search="Dec 5 report", new_due_on=f"{_year_of(12, 8)}-12-08"),
        ),
        ("move buy milk to Nov 31", Intent("no_such_date", search="Nov 31")),
        ("move buy milk to Harbor", Intent("move_tasks", search="buy milk", target_project="Harbor")),
        # Starting, and a new title (for one named task, finished or not).
        ("start working on buy milk", Intent("update_tasks", status="open", search="buy milk", new_status="in_progress")),
        (
            "rename Renew passport to Renew passport and ID",
            Intent("update_tasks", search="Renew passport", new_title="Renew passport and ID"),
        ),
        ("rename the tasks to Chores", Intent("which_task", search="the tasks")),
        ("make it urgent", Intent("which_task", search="it")),
        ("rename the note Retro to Launch retro", Intent("rename_note", search="Retro", new_title="Launch retro")),
        ("clear the text of the note Retro", Intent("cannot")),
        # Said the way one tells a person.
        ("I need to buy milk", Intent("create_task", title="buy milk")),
        ("I have to call Bob tomorrow", Intent("create_task", title="call Bob", due="tomorrow")),
        ("I need to delete the note Retro", Intent("delete_notes", search="Retro")),
        ("I need to know how to connect a model", Intent("knowledge", search="how to connect a model?")),
        ("I need to export my data", Intent("knowledge", search="How do I export my data?")),
        ("todo: call the bank", Intent("create_task", title="call the bank")),
        ("note: the wifi password is on the fridge", Intent("create_note", title="the wifi password is on the fridge")),
        ("remember that the wifi password is on the fridge", Intent("create_note", title="the wifi password is on the fridge")),
        ("undo that", Intent("knowledge", search="Can I undo a change?")),
        ("remember to call Bob tomorrow", Intent("create_task", title="call Bob", due="tomorrow")),
        ("delete buy milk", Intent("delete_tasks", search="buy milk")),
        ("delete buy milk from Atlas", Intent("delete_tasks", search="buy milk", project_name="Atlas")),
        ("delete Atlas", Intent("delete_project", project_name="Atlas")),
        ("delete my account", Intent("knowledge", search="How do I delete my account?")),
        ("Atlas is done", Intent("finish_project", project_name="Atlas", search="Atlas")),
        ("the Atlas project is finished", Intent("finish_project", project_name="Atlas")),
        ("add Dune to my Reading list note", Intent("append_note", search="Reading list", content="Dune")),
        ("add milk to my shopping list", Intent("append_note", search="shopping list", content="milk", title="milk")),
        ("schedule a call with Sam for Friday", Intent("create_task", title="call with Sam", due="friday")),
        ("add a task to Harbor", Intent("name_needed", search="task")),
        ("push everything due today to tomorrow", Intent("update_tasks", status="open", due="today", new_due="tomorrow")),
        ("mark everything due today as done", Intent("complete_tasks", due="today")),
        ("delete everything due today", Intent("delete_tasks", due="today")),
        ("delete the tasks due today or tomorrow", Intent("one_window")),
        # A capitalised name before the tasks is a project's: never every task, nor a title search.
        ("change priority of all Harbor tasks to low", Intent("update_tasks", status="open", project_name="Harbor", new_priority="low")),
        ("delete the Harbor tasks", Intent("delete_tasks", project_name="Harbor")),
        ("mark all Atlas tasks as done", Intent("complete_tasks", project_name="Atlas")),
        # Deleting notes: by title, by what they say, by project or by when they changed.
        ("delete the note Venue ideas", Intent("delete_notes", search="Venue ideas")),
        ("delete the Venue ideas note", Intent("delete_notes", search="Venue ideas")),
        ("remove my notes about the landlord", Intent("delete_notes", search="landlord")),
        ("delete the notes in Atlas", Intent("delete_notes", project_name="Atlas")),
        ("remove the notes I wrote yesterday", Intent("delete_notes", changed="yesterday")),
        ("delete all my notes", Intent("delete_notes")),
        ("delete the note", Intent("which_task", search="the note")),
        ("move the note Retro to Atlas", Intent("move_notes", search="Retro", target_project="Atlas")),
        ("move my notes about the landlord to Home", Intent("move_notes", search="landlord", target_project="Home")),
        # Projects, named as projects are.
        ("create a project called Garden", Intent("create_project", title="Garden")),
        ("new project: Kitchen remodel", Intent("create_project", title="Kitchen remodel")),
        ("start a new project", Intent("name_needed", search="project")),
        ("add a task", Intent("name_needed", search="task")),
        ("new note", Intent("name_needed", search="note")),
        ("start the day", Intent("cannot")),
        ("I'm done for today", Intent("tasks", status="completed", completed="today")),
        # Changes made in Clarion's own pages: the guide says how.
        ("rename this conversation to Planning", Intent("knowledge", search="How do I rename this conversation?")),
        ("please switch to dark mode.", Intent("knowledge", search="How do I switch to dark mode?")),
        ("delete my notes about the chat", Intent("delete_notes", search="chat")),
        ("archive Atlas", Intent("update_project", project_name="Atlas", new_archived=True)),
        ("unarchive the project Atlas", Intent("update_project", project_name="Atlas", new_archived=False)),
        ("rename the Atlas project to Atlas web", Intent("update_project", project_name="Atlas", new_title="Atlas web")),
        ("delete the Harbor project", Intent("delete_project", project_name="Harbor")),
        ("delete all my projects", Intent("cannot")),
        ("archive it", Intent("cannot")),
        # A task said to be done is proposed as completed; questions and "everything" are not.
        ("I finished buy milk", Intent("complete_tasks", search="buy milk")),
        ("I'm done with the passport task", Intent("complete_tasks", search="passport")),
        ("buy milk is done", Intent("complete_tasks", search="buy milk")),
        ("everything is done", Intent("tasks", status="completed")),
        ("what is done?", Intent("tasks", status="completed")),
        ("I finished 3 tasks today", Intent("tasks", status="completed", completed="today")),
        # A word looked up everywhere; where to look, when named, wins.
        ("find milk", Intent("find", search="milk")),
        ("look for anything about the landlord", Intent("find", search="landlord")),
        ("find notes about the landlord", Intent("notes", search="landlord")),
        ("search the docs for question deadlines", Intent("knowledge", search="question deadlines")),
        ("find out how to connect a model", Intent("knowledge", search="how to connect a model")),
        ("what's my next task?", Intent("focus")),
        ("is the passport task done?", Intent("tasks", search="passport")),
        ("have I finished buy milk?", Intent("tasks", search="buy milk")),
        ("did I finish anything today?", Intent("tasks", status="completed", completed="today")),
        ("did I get anything done yesterday?", Intent("tasks", status="completed", completed="yesterday")),
        ("is everything done?", Intent("tasks", status="completed")),
        ("can you delete my notes?", Intent("delete_notes")),
        ("what is the busiest project?", Intent("projects")),
        # A bare name is a project's status when there is one; "show Atlas" and "open the Atlas project" are.
        ("Atlas", Intent("maybe_project", project_name="Atlas")),
        ("show Atlas", Intent("project_status", project_name="Atlas")),
        ("open the Atlas project", Intent("project_status", project_name="Atlas")),
        ("tomorrow?", Intent("tasks", due="tomorrow")),
        ("how are you?", Intent("help")),
        ("help me plan my day", Intent("focus")),
        ("plan my week", Intent("overview")),
        ("which tasks aren't in a project?", Intent("tasks", unfiled=True)),
        ("how many tasks have no project?", Intent("count_tasks", unfiled=True)),
        ("which projects have no tasks?", Intent("projects")),
        ("does Atlas have open tasks?", Intent("tasks", status="open", project_name="Atlas")),
        ("does Harbor have anything overdue?", Intent("tasks", project_name="Harbor", due="overdue")),
    ],
)
def test_parse_changes_said_the_way_people_say_them(text, expected):
    assert parse(text) == expected


def test_every_request_the_readme_shows_is_one_the_offline_engine_acts_on():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    bullets = [b for b in readme.split("\n- ") if b.startswith(("**Ask about your workspace**", "**Change things**"))]
    examples = [" ".join(e.split()) for b in bullets for e in re.findall(r"“([^”]+)”", b.split(". Every change")[0])]
    assert len(examples) >= 15
    for example in examples:
        assert parse(example).kind not in {"help", "knowledge", "cannot", "which_task"}, example


@pytest.mark.parametrize(
    ("text", "how_clarion_works"),
    [
        ("how do I export my data?", True),
        ("what happens to what I type while a question is pending?", True),
        ("can the assistant delete my notes?", True),
        ("what is the default option?", True),
        ("what's the address of the venue?", False),
        ("what did Bob say about the budget?", False),
        ("when is my dentist appointment?", False),
    ],
)
def test_a_question_about_how_clarion_works_is_told_from_a_question_of_fact(text, how_clarion_works):
    assert asks_how_clarion_works(text) is how_clarion_works
    assert parse(text).kind == "knowledge"
