"""Turns tool results (the JSON Clarion's query tools return) into a readable Markdown answer."""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Mapping

STATUS_LABEL = {"todo": "to-do", "in_progress": "in-progress", "completed": "completed", "open": "open", "all": ""}

CAPABILITIES = (
    "I'm Clarion's **offline engine**: I run without a model or network, so I understand a fixed set of "
    "requests about your workspace. Try:\n\n"
    "- “what's in progress?”, “what's urgent?”, “what's due this week?”, “what should I focus on?” or “show my to-do tasks”\n"
    "- “show my tasks in Atlas” or “find tasks about design”\n"
    "- “find notes about the launch”, or “find milk” to look in tasks and notes at once\n"
    "- “how many tasks did I complete?” or “how am I doing?”\n"
    "- “list my projects”\n"
    "- “delete all my completed tasks”, “mark the design tasks as done”, “reopen the task buy milk”, “move the design tasks to Atlas”, "
    "“add a task called Book venue in Harbor”, “remind me to call Bob tomorrow”, “make buy milk urgent”, "
    "“push the passport task to Friday”, “start working on buy milk”, “delete the note Venue ideas”, “archive the Atlas project” — "
    "I always show you the changes to confirm first\n"
    "- “clean up my tasks” — I'll ask what you mean\n"
    "- questions about Clarion itself, such as “how do I connect my own model?”, from the knowledge base\n\n"
    "For open-ended conversation, connect a model by setting `LLM_BASE_URL` (see the README)."
)


PRIORITY_WORDS = {"urgent": "urgent", "high": "high-priority", "medium": "medium-or-higher-priority"}

CANNOT_CHANGE = (
    "Offline I can add, complete, reopen, start, reschedule, re-prioritise, rename, move and delete tasks, add, add to, "
    "rename, move and delete notes, and create, rename, archive and delete projects, each named; other changes (rewriting a note, "
    "a project's description, all projects at once) I can't make, so nothing was changed. "
    "With a model connected (`LLM_BASE_URL`) the assistant can."
)


_NAMED_EXAMPLES = {
    "project": "“create a project called Garden”",
    "task": "“add a task called Book the venue” or “remind me to call Bob tomorrow”",
    "note": "“add a note called Venue ideas: the old mill, the boathouse”",
}


def name_needed(noun: str) -> str:
    """A new task, note or project asked for with no name: what to say instead."""
    return f"What should the new {noun} be called? Say, for example, {_NAMED_EXAMPLES[noun]}; nothing was created."


MISREAD = (
    "Sorry — I may have misread that. Offline I read each message on its own, without the ones before it, so "
    "say the whole request again in other words: “show my tasks due Friday”, “delete the task buy milk”, "
    "“what did I note about the launch?”. Nothing was changed unless you pressed Apply."
)

THANKS = "You're welcome! Say “help” any time to see what I understand offline."


def today_answer(result: dict, *, with_time: bool = False) -> str:
    """The person's date (and the time there), from a query result that read the date in their time zone."""
    now = dt.datetime.now(zoneinfo.ZoneInfo(result["time_zone"])) if with_time else None
    today = now.date() if now else dt.date.fromisoformat(result["today"])  # one reading of the clock, past midnight too
    date = f"{today:%A}, {today:%B} {today.day}, {today.year}"
    if now:
        return f"It's {now:%H:%M} on {date} ({result['time_zone']})."
    return f"Today is {date} ({result['time_zone']})."


OPEN_RANGE = (
    "Offline I can list what's due on one day or in one window — “what's due on Friday?”, “what's due next week?”, "
    "“what's due this month?”, “what's overdue?”, “what did I finish last month?” — but not before, after or between days, "
    "nor in a month named by its name, so I haven't listed anything."
)
ONE_WINDOW_AT_A_TIME = (
    "Offline I can change the tasks due on one day or in one window at a time — “delete the tasks due today”, then "
    "“delete the tasks due tomorrow” — so I haven't changed anything."
)


def no_such_date(text: str) -> str:
    return (
        f"“{text}” is not a date in the calendar, so I can't tell which tasks are due then. Try another date, e.g. “what's due on Dec 5?”."
    )


def which_task(pointer: str) -> str:
    """A change to "it" or "this task": the offline engine reads each message on its own."""
    examples = (
        "Name the notes, for example “delete the note Venue ideas” or “delete my notes about the landlord”."
        if re.search(r"\bnotes?\b", pointer, re.IGNORECASE)
        else "Name the tasks, for example “mark buy milk as done”, “delete the task buy milk” or “move the design tasks to Atlas”."
    )
    return f"Offline I read each message on its own, so I can't tell what “{pointer}” refers to, and nothing was changed. {examples}"


# The due windows of a weekday: the next such day (the tool's "due" values; the offline engine
# cannot import the workspace's).
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DUE_WORDS = {
    "overdue": "overdue",
    "today": "due today",
    "tomorrow": "due tomorrow",
    "this_week": "due this week",
    "next_week": "due next week",
    "weekend": "due this weekend",
    "next_7_days": "due in the next 7 days",
    "this_month": "due this month",
    "next_month": "due next month",
    **{day: f"due on {day.capitalize()}" for day in WEEKDAYS},
}


# The windows of past days (the tool's "completed" and "added" values), in words.
PAST_DAYS = {
    "today": "today",
    "yesterday": "yesterday",
    "this_week": "this week",
    "last_week": "last week",
    "last_7_days": "in the last 7 days",
    "this_month": "this month",
    "last_month": "last month",
    **{day: f"on {day.capitalize()}" for day in WEEKDAYS},
}


def due_words(due: object = None, due_on: object = None) -> str:
    """ "due this week", "due on Sat Dec 5": a due window or date, in words ("" for an unknown one)."""
    if str(due) in DUE_WORDS:
        return DUE_WORDS[str(due)]
    try:
        day = dt.date.fromisoformat(str(due_on))
    except ValueError:
        return ""
    return f"due on {day:%a} {day:%b} {day.day}" + (f", {day.year}" if day.year != dt.date.today().year else "")


def task_noun(filters: Mapping[str, object]) -> str:
    """The tasks query_tasks `filters` pick, in words: "in-progress tasks", "urgent tasks due
    today", "tasks completed this week", "to-do tasks added today". Unknown values (a model's
    arguments are read here too) are left out rather than guessed."""
    status, priority_at_least = filters.get("status", "all"), filters.get("priority_at_least")
    due, due_on, completed, added = (filters.get(k) for k in ("due", "due_on", "completed", "added"))
    priority = PRIORITY_WORDS.get(str(priority_at_least), "")
    if str(completed) in PAST_DAYS:
        return " ".join(filter(None, [priority, "tasks completed", PAST_DAYS[str(completed)]]))
    # What is urgent is open unless said otherwise: "urgent tasks", not "open urgent tasks".
    label = "" if status == "open" and priority else STATUS_LABEL.get(str(status), "")
    if str(added) in PAST_DAYS:
        return " ".join(filter(None, [label, priority, "tasks added", PAST_DAYS[str(added)]]))
    if due == "overdue":  # an adjective: "overdue to-do tasks"
        return " ".join(filter(None, ["overdue", label, priority, "tasks"]))
    undated = "with no due date" if filters.get("no_due_date") is True else ""
    unfiled = "in no project" if filters.get("no_project") is True else ""
    return " ".join(filter(None, [label, priority, "tasks", due_words(due, due_on) or undated, unfiled]))


def tasks_answer(result: dict, *, project_name: str | None, search: str | None, instead_of: str | None = None) -> str:
    """instead_of: the words first searched for, which no title had (`search` is the retry)."""
    tasks = result["tasks"]
    filters = result.get("filters", {})
    status = filters.get("status", "all")
    where = scope(project_name, search)
    noun = task_noun(filters) + _window(result)
    missed = f"No task title has “{instead_of}”. " if instead_of else ""
    if not tasks:
        return f"You have no {noun}{scope(project_name, instead_of or search)}."  # the words as asked
    lines = [f"{missed}Here are your {noun}{where} ({result['total']}):", ""]
    today = dt.date.fromisoformat(result["today"]) if result.get("today") else None
    lines += [_task_line(t, show_status=status in ("all", "open"), today=today, in_project=project_name) for t in tasks]
    if result.get("truncated"):
        lines += ["", f"…and {result['more']} more not shown."]
    return "\n".join(lines)


def task_at_end_answer(result: dict, *, oldest: bool, project_name: str | None) -> str:
    """The one task added longest ago, or last, of a listing ("what's my oldest open task?")."""
    tasks = result["tasks"]
    filters = result.get("filters", {})
    where = scope(project_name, None)
    noun = task_noun(filters)
    if not tasks:
        return f"You have no {noun}{where}."
    today = dt.date.fromisoformat(result["today"]) if result.get("today") else None
    line = _task_line(tasks[0], show_status=filters.get("status", "all") in ("all", "open"), today=today, in_project=project_name)
    which = "oldest" if oldest else "latest"
    return f"Your {which} {noun.replace('tasks', 'task', 1)}{where} (you have {result['total']}):\n\n{line}"


def cleanup_answer(result: dict, *, project_name: str | None) -> str:
    """A cleanup the offline engine cannot decide on (which tasks are "stale"?): it says so, says
    what it can do instead, and lists the tasks to review. Nothing is proposed."""
    where = scope(project_name, None)
    return (
        f"Offline I can't tell which tasks a cleanup should touch, so I haven't changed anything. "
        f"I can delete finished work (“delete all my completed tasks{where}”) or list what is open "
        f"(“show my to-do tasks{where}”).\n\n" + tasks_answer(result, project_name=project_name, search=None)
    )


def _priority_word(result: dict) -> str:
    return PRIORITY_WORDS.get(result.get("filters", {}).get("priority_at_least"), "")


def count_answer(result: dict, *, project_name: str | None) -> str:
    total = result["total"]
    filters = result.get("filters", {})
    status = filters.get("status", "all")
    where = scope(project_name, None) + (" in no project" if filters.get("no_project") is True else "")
    plural = " ".join(filter(None, [_priority_word(result), "task" if total == 1 else "tasks"]))
    if due := due_words(filters.get("due"), filters.get("due_on")):
        return f"You have **{total}** open {plural} {due}{_window(result)}{where}."
    if filters.get("no_due_date") is True:
        return f"You have **{total}** {plural} with no due date{where}."
    if status == "completed":
        when = f" {PAST_DAYS[str(filters['completed'])]}{_window(result)}" if str(filters.get("completed")) in PAST_DAYS else ""
        return f"You have completed **{total}** {plural}{where}{when}."
    if status == "in_progress":
        return f"You have **{total}** {plural} in progress{where}."
    if status == "todo":
        return f"You have **{total}** {plural} still to do{where}."
    if status == "open":
        return f"You have **{total}** open {plural}{where}."
    return f"You have **{total}** {plural}{where} in total."


def note_count_answer(result: dict, *, project_name: str | None, search: str | None) -> str:
    total = result["total"]
    return f"You have **{total}** note{'s' if total != 1 else ''}{scope(project_name, search)}{changed_words(result)}."


def changed_words(result: dict) -> str:
    """ " added or edited last week (Mon Nov 16 – Sun Nov 22)", for notes picked by when they changed."""
    when = PAST_DAYS.get(str(result.get("filters", {}).get("changed")))
    return f" added or edited {when}{_window(result)}" if when else ""


def notes_answer(result: dict, *, project_name: str | None, search: str | None) -> str:
    notes = result["notes"]
    where = scope(project_name, search) + changed_words(result)
    if not notes:
        return f"I found no notes{where}."
    if search and len(named := [n for n in notes if n["title"].casefold() == search.casefold()]) == 1:
        # "Show the note Reading list": that note, whole, not a line of it among the others.
        others = result["total"] - 1
        more = f"\n\n{others} other note{'s' if others != 1 else ''} also mention{'s' if others == 1 else ''} “{search}”." if others else ""
        return _whole_note(named[0]) + more
    lines = [f"I found {result['total']} note{'s' if result['total'] != 1 else ''}{where}:", ""]
    for note in notes:
        where = f" ({note['project']['name']})" if note.get("project") else ""
        excerpt = _excerpt(note.get("content") or "")
        lines.append(f"- **{note['title']}**{where}" + (f" — {excerpt}" if excerpt else ""))
    if result.get("truncated"):
        lines += ["", f"…and {result['more']} more not shown."]
    return "\n".join(lines)


def newest_note_answer(result: dict, *, project_name: str | None, search: str | None) -> str:
    """The note changed most recently (of those a search or a project picks), whole."""
    if not result["notes"]:
        return f"I found no notes{scope(project_name, search)}."
    note = result["notes"][0]
    return f"Your latest note{scope(project_name, search)}:\n\n" + _whole_note(note)


def _whole_note(note: dict) -> str:
    project = f" ({note['project']['name']})" if note.get("project") else ""
    cut = "\n\n…(the rest is longer than I show here)" if note.get("content_truncated") else ""
    return f"**{note['title']}**{project}:\n\n{(note.get('content') or '').strip() or '(no text)'}{cut}"


def find_answer(tasks: dict, notes: dict, *, search: str) -> str:
    """A word looked up in the task titles and the notes: what matched in each."""
    if not tasks["tasks"] and not notes["notes"]:
        return f"Nothing in your tasks or notes matches “{search}”. To add it as a task, say “add a task called {search}”."
    parts = _matches(tasks, notes, search=search)
    if not tasks["tasks"]:
        parts.append(f"No task title matches “{search}”.")
    if not notes["notes"]:
        parts.append(f"No note matches “{search}”.")
    return "\n\n".join(parts)


def _matches(tasks: dict, notes: dict, *, search: str) -> list[str]:
    """The tasks and the notes a search found, each listed if any."""
    found = [tasks_answer(tasks, project_name=None, search=search)] if tasks["tasks"] else []
    return found + ([notes_answer(notes, project_name=None, search=search)] if notes["notes"] else [])


def projects_answer(result: dict, *, archived_only: bool = False) -> str:
    projects = [p for p in result["projects"] if p.get("archived") or not archived_only]
    if not projects:
        return "You have no archived projects." if archived_only else "You have no projects yet."
    kind = "archived project" if archived_only else "project"
    lines = [f"You have {len(projects)} {kind}{'s' if len(projects) != 1 else ''}:", ""]
    for p in projects:
        detail = f" — {_counts(p['stats'])}" if p.get("stats") else ""
        lines.append(f"- {_project_label(p)}{detail}")
    return "\n".join(lines)


def project_status_answer(project: dict, open_tasks: dict) -> str:
    """How one project stands: its counts, then what is still open in it (or that nothing is)."""
    head = f"{_project_label(project)}: {_counts(project['stats'])}."
    if not open_tasks["tasks"]:
        return f"{head} Nothing in it is left to do."
    return f"{head}\n\n{tasks_answer(open_tasks, project_name=project['name'], search=None)}"


def overview_answer(open_tasks: dict, overdue: dict, upcoming: dict, completed: dict) -> str:
    """How the person stands: the counts first, then what needs them — the overdue tasks and
    those due in the next seven days. The results come in engine.OVERVIEW_QUERIES' order."""
    today = dt.date.fromisoformat(overdue["today"])
    done = f"**{completed['total']}** completed in the last 7 days"
    if not open_tasks["total"]:
        return f"Here's where you stand today ({today:%a} {today:%b} {today.day}): nothing is open, and {done}."
    lines = [
        f"Here's where you stand today ({today:%a} {today:%b} {today.day}):",
        "",
        f"- **{open_tasks['total']}** open task{'s' if open_tasks['total'] != 1 else ''}",
        f"- **{overdue['total']}** overdue",
        f"- **{upcoming['total']}** due in the next 7 days{_window(upcoming)}",
        f"- {done}",
    ]
    for title, result in (("Overdue", overdue), ("Due in the next 7 days", upcoming)):
        if result["tasks"]:
            lines += ["", f"**{title}** ({result['total']}):", ""]
            lines += [_task_line(t, show_status=True, today=today) for t in result["tasks"]]
            if result.get("truncated"):
                lines.append(f"- …and {result['more']} more")
    if not overdue["tasks"] and not upcoming["tasks"]:
        lines += ["", "Nothing is overdue or due in the next 7 days."]
    return "\n".join(lines)


def focus_answer(overdue: dict, due_today: dict, urgent: dict, *, project_name: str | None) -> str:
    """What to do first: the overdue tasks (the longest overdue first), those due today, then the
    other urgent ones, each once."""
    where = scope(project_name, None)
    today = dt.date.fromisoformat(overdue["today"])
    # An urgent task due today is in two results; it is listed once, where it first comes.
    tasks = list({t["id"]: t for result in (overdue, due_today, urgent) for t in result["tasks"]}.values())
    if not tasks:
        return (
            f"Nothing{where} is overdue, due today or urgent. “What's coming up?” lists what's due in the next 7 days, "
            "and “what's on my plate?” everything still open."
        )
    lines = [f"Start with these{where} — overdue, due today or urgent ({len(tasks)}):", ""]
    lines += [_task_line(t, show_status=True, today=today, in_project=project_name) for t in tasks]
    if more := sum(result.get("more", 0) for result in (overdue, due_today, urgent)):
        lines += ["", f"…and up to {more} more not shown."]
    return "\n".join(lines)


def _project_label(project: dict) -> str:
    return f"**{project['name']}**" + (" *(archived)*" if project.get("archived") else "")


def _counts(stats: dict) -> str:
    return f"{stats['todo']} to do, {stats['in_progress']} in progress, {stats['completed']} completed, {stats['notes']} notes"


def project_not_found(name: str, projects: list[dict]) -> str:
    names = ", ".join(f"**{p['name']}**" for p in projects) or "none yet"
    return f"I couldn't find a project called “{name}”. Your projects: {names}."


def tool_failed(error: str) -> str:
    return f"I couldn't look that up: {error}"


def scope(project_name: str | None, search: str | None) -> str:
    parts = []
    if search:
        parts.append(f" matching “{search}”")
    if project_name:
        parts.append(f" in {project_name}")
    return "".join(parts)


def _window(result: dict) -> str:
    """ " (Mon Nov 23 – Sun Nov 29)", ", Dec 4": the days a due-date or completion-date answer
    covers, in the person's calendar."""
    first = result.get("due_from") or result.get("completed_from") or result.get("added_from") or result.get("changed_from")
    last = result.get("due_until") or result.get("completed_until") or result.get("added_until") or result.get("changed_until")
    if not first or not last:
        return ""
    a, b = dt.date.fromisoformat(first), dt.date.fromisoformat(last)
    if a == b:  # "due today" says its day already; "due on Friday" says which Friday
        filters = result.get("filters", {})
        named = (filters.get(k) for k in ("due", "completed", "added", "changed"))
        return f", {a:%b} {a.day}" if any(day in WEEKDAYS for day in named) else ""
    return f" ({a:%a} {a:%b} {a.day} – {b:%a} {b:%b} {b.day})"


def due_day(result: dict) -> str:
    """ ", due tomorrow (Sun Nov 29)": the day a due-date query's window starts, for a new task."""
    if not (first := result.get("due_from")):
        return ""
    day, window = dt.date.fromisoformat(first), result.get("filters", {}).get("due")
    date = f"{day:%b} {day.day}" if window in WEEKDAYS else f"{day:%a} {day:%b} {day.day}"  # "due on Friday" names its day
    return f", {DUE_WORDS.get(window, 'due')} ({date})"


def _task_line(task: dict, *, show_status: bool, today: dt.date | None = None, in_project: str | None = None) -> str:
    """`in_project`: the project the whole listing is of, which its lines need not repeat."""
    details = []
    if task.get("project") and in_project is None:
        details.append(task["project"]["name"])
    if show_status and not task.get("completed_on"):  # "completed Nov 25" below says it
        details.append(STATUS_LABEL.get(task["status"], task["status"]))
    if task.get("priority") in ("high", "urgent"):
        details.append(f"{task['priority']} priority")
    if task.get("due_date"):
        details.append(_due(task["due_date"], done=task["status"] == "completed", today=today))
    if task.get("completed_on"):
        done = dt.date.fromisoformat(task["completed_on"])
        details.append(f"completed {done:%b} {done.day}")
    return f"- **{task['title']}**" + (f" — {' · '.join(details)}" if details else "")


def _due(iso: str, *, done: bool, today: dt.date | None = None) -> str:
    """`today`: the person's date when the result says it (a due-date query), else the server's."""
    due = dt.date.fromisoformat(iso)
    days = (due - (today or dt.date.today())).days
    if done:
        return f"due {due:%b} {due.day}"
    if days < 0:
        return f"overdue since {due:%b} {due.day}"
    if days == 0:
        return "due today"
    if days == 1:
        return "due tomorrow"
    return f"due {due:%a} {due:%b} {due.day}"


def _excerpt(text: str, limit: int = 140) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0] + "…"


VERBS = {
    "delete_task": ("deleted", "task"), "complete_task": ("completed", "task"), "move_task": ("moved", "task"),
    "update_task": ("updated", "task"), "create_task": ("created", "task"), "create_note": ("created", "note"),
    "update_note": ("updated", "note"), "move_note": ("moved", "note"), "delete_note": ("deleted", "note"),
    "create_project": ("created", "project"), "update_project": ("updated", "project"), "delete_project": ("deleted", "project"),
}  # fmt: skip


def nothing_to_change(action: str, *, noun: str, search: str | None, project_name: str | None) -> str:
    """`noun`: the tasks the change picks, in words ("completed tasks", "tasks due today")."""
    text = f"You have no {noun}{scope(project_name, search)} to {action}, so there is nothing to change."
    if action == "rename":
        text += " To rename a project, say “rename the Atlas project to …”; renaming a note needs a model."
    return text


def _new_values(changes: Mapping[str, object]) -> str:
    """ "urgent", "due Fri Dec 4", "in progress": what a change to tasks makes them."""
    if title := changes.get("title"):
        return f"called “{title}”"
    if priority := changes.get("priority"):
        return str(priority) if priority == "urgent" else f"{priority} priority"
    if changes.get("status") == "in_progress":
        return "in progress"
    return due_words(due_on=changes.get("due_date")).replace("due on", "due")


def change_summary(changes: Mapping[str, object], *, what: str, titles: list[str]) -> str:
    """The card's headline for a change to tasks: "Make 1 task matching “buy milk” urgent"."""
    if "title" in changes:
        return f"Rename “{titles[0]}” to “{changes['title']}”"
    if changes.get("status") == "in_progress":
        return f"Start {what} (mark in progress)"
    return f"Make {what} {_new_values(changes)}"


def already_so(changes: Mapping[str, object], tasks: list[dict]) -> str:
    names = ", ".join(f"**{t['title']}**" for t in tasks[:5]) + (f" and {len(tasks) - 5} more" if len(tasks) > 5 else "")
    verb = "is" if len(tasks) == 1 else "are"
    return f"{names} {verb} already {_new_values(changes)}, so there is nothing to change."


def which_of(tasks: list[dict], *, search: str) -> str:
    """A new title is for one task: several match, so it asks for the full title of one."""
    names = "\n".join(f"- **{t['title']}**" for t in tasks[:10])
    return (
        f"Several tasks match “{search}”, and a new title is for one of them, so nothing was changed:\n\n{names}\n\n"
        "Say the full title of the one to rename: “rename the task <its title> to …”."
    )


def which_note(notes: list[dict], *, search: str) -> str:
    """A change to one note (text added, a new title): none or several match, so it says which there are."""
    if not notes:
        return f"I found no note called “{search}”, so nothing was changed. Say “show my notes” to see their titles."
    names = "\n".join(f"- **{n['title']}**" for n in notes[:10])
    return (
        f"Several notes match “{search}”, and the change is for one of them, so nothing was changed:\n\n{names}\n\n"
        "Say the note's full title."
    )


def operations_outcome(result: dict, *, more: int = 0) -> str:
    status = result.get("status")
    if status in ("applied", "applied_in_part"):
        parts = []
        for op, count in result.get("by_operation", {}).items():
            verb, noun = VERBS.get(op, (op, "item"))
            parts.append(f"{verb} {count} {noun}{'s' if count != 1 else ''}")
        text = "Done — " + ", ".join(parts) + "."
        if refused := result.get("refused_changes"):
            text += f" You left out {len(refused)} of the {len(refused) + result.get('applied', 0)} proposed changes; they were not made."
        if more:
            text += f" {more} more matched but were not included; ask again to handle them."
        return text
    if status == "timed_out":
        return "You didn't confirm in time, so nothing was changed."
    if status == "failed":
        return f"Nothing was changed: {result.get('error', 'the changes could not be applied')}"
    return "Cancelled — nothing was changed."


def workspace_instead(tasks: dict, notes: dict, *, search: str) -> str:
    """The knowledge base had no answer, and the person's task titles or notes have the words
    asked about: what matched, and where it comes from."""
    parts = _matches(tasks, notes, search=search)
    where = "tasks and notes" if len(parts) == 2 else "tasks" if tasks["tasks"] else "notes"
    return "\n\n".join(parts) + f"\n\nThe knowledge base doesn't cover that; these are from your {where}."


def knowledge_answer(result: dict) -> str:
    if result.get("should_reply"):
        return result["answer"]
    closest = ""
    if pages := result.get("closest_pages"):
        links = " · ".join(f"[{_link_text(p['title'])}]({_link_url(p['url'])})" for p in pages)
        closest = f"The closest {'pages' if len(pages) > 1 else 'page'}: {links}. "
    return (
        f"The knowledge base doesn't cover that, so I won't guess. {closest}"
        "I can also answer questions about your projects, tasks and notes — say “help” to see what I understand."
    )


def _link_text(title: str) -> str:
    """A page title as a Markdown link's text: brackets in it would end the text early."""
    return title.replace("[", "(").replace("]", ")")


def _link_url(url: str) -> str:
    """A URL as a Markdown link's target: a parenthesis or space in it would end the target early."""
    return url.replace("(", "%28").replace(")", "%29").replace(" ", "%20")
