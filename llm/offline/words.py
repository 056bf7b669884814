"""The words of requests the offline engine reads, and the intent it reads a request as.

Shared by the reading of questions (intents.py) and of changes (changes.py): statuses,
priorities, project names, search terms, and days and dates as people say them.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TypedDict

from wordfreq import zipf_frequency

from llm.offline.phrasing import WEEKDAYS


@dataclass(frozen=True)
class Intent:
    # read: "tasks" | "count_tasks" | "notes" | "count_notes" | "projects" | "knowledge" | "help"
    #   | "cannot" (a change it does not make offline, such as rewriting a note: it says so, changes nothing)
    #   | "cleanup" (a cleanup it cannot decide on: it lists the tasks and says so)
    #   | "which_task" (a change to "it" or "this task": it asks for the task's name, changes nothing)
    #   | "project_status" (how one project stands: its counts, then what is still open in it)
    #   | "maybe_project" (a bare name, "Atlas": that project's status if there is one, else a "find")
    #   | "no_such_date" (a due date the calendar does not have, "Nov 31": it says so, `search` holds it)
    #   | "thanks" (a thank-you: it says you're welcome)
    #   | "misread" ("that's wrong": it says it reads each message alone, and how to say the request again)
    #   | "today" | "time" (the person's date, which the query tool reads in their time zone; and the time there)
    #   | "open_range" (due before, after or between days: no window says which, so it says what it can list)
    #   | "one_window" (a change to the tasks due in two windows: it says to name one at a time, changes nothing)
    #   | "overview" (how the person stands: open, overdue, due soon, recently completed)
    #   | "focus" (what to do first: the open tasks that are overdue, due today or urgent)
    #   | "find" (a word looked up in the task titles and the notes at once)
    # write (always proposed, never applied without confirmation):
    #   "delete_tasks" | "complete_tasks" | "reopen_tasks" | "move_tasks" | "update_tasks" | "create_task"
    #   | "create_note" | "delete_notes" | "move_notes" | "create_project" | "update_project" | "delete_project"
    #   | "finish_project" (a project said to be done: its open tasks completed and the project archived)
    #   | "append_note" (text, in `content`, added at the end of the note `search` names; with `title`, a new
    #     task of that title when no note has exactly that name: "add milk to my shopping list")
    #   | "rename_note" (the note `search` names gets the title `new_title`)
    #   | "name_needed" (a new task, note or project with no name, `search` says which: it asks for one)
    kind: str
    status: str = "all"
    search: str | None = None
    project_name: str | None = None
    target_project: str | None = None  # move_tasks: where to
    title: str | None = None  # create_*: what to call it
    due: str | None = None  # tasks/count_tasks: one of workspace.selectors.DUE_WINDOWS; create_task: the day it is due
    also_due: str | None = None  # tasks/count_tasks: a second window ("due today or tomorrow"), listed after the first
    priority: str | None = None  # tasks/count_tasks: this priority or higher ("high", "urgent")
    due_on: str | None = None  # tasks/count_tasks and changes: due on this date (ISO), one no window names
    completed: str | None = None  # tasks: completed in this window, one of workspace.selectors.PAST_WINDOWS
    added: str | None = None  # tasks: added in this window, one of workspace.selectors.PAST_WINDOWS
    undated: bool = False  # tasks/count_tasks and changes: only tasks with no due date
    unfiled: bool = False  # tasks/count_tasks and changes: only tasks in no project
    changed: str | None = None  # notes/count_notes: added or edited in this window, one of workspace.selectors.PAST_WINDOWS
    archived: bool = False  # projects: the archived ones alone
    newest: bool = False  # notes: the one most recently changed, shown whole ("what's my latest note?"); tasks: the one added last
    oldest: bool = False  # tasks: the one added longest ago ("my oldest open task")
    content: str = ""  # create_note: what the note says
    # update_tasks: what changes (None: stays as it is)
    new_priority: str | None = None
    new_due: str | None = None  # a day the query tool dates ("tomorrow", "friday", "next_week")
    new_due_on: str | None = None  # a date (ISO)
    new_status: str | None = None  # "in_progress": the task is started
    new_title: str | None = None  # one task only; update_project: the project's new name; rename_note: the note's
    new_archived: bool | None = None  # update_project: archived, or no longer


STATUS_WORDS: list[tuple[str, str]] = [
    # "In progress and to do": both, which is what is open.
    (r"\bin[- ]progress\s+(?:and|or|&)\s+to[- ]?dos?\b|\bto[- ]?dos?\s+(?:and|or|&)\s+in[- ]progress\b", "open"),
    (r"\bnot (?:yet )?(?:started|begun)\b|\bhaven[’']?t (?:i |we )?(?:yet )?(?:started|begun)\b", "todo"),  # before "started"
    (r"\bin[- ]progress\b|\bworking on\b|\bstarted\b|\bdoing\b|\bongoing\b|\bactive\b", "in_progress"),
    # What is left is everything not completed, started or not: "what's left in Harbor?", "what's not done?"
    (
        r"\bnot (?:yet )?(?:done|finished|completed?)\b|\bunfinished\b|\bincomplete\b|\bopen\b|\bleft\b|\bremaining\b|\boutstanding\b",
        "open",
    ),
    (r"\bcomplete(d)?\b|\bdone\b|\bfinished\b|\bclosed\b", "completed"),
    (r"\bto[- ]?dos?\b|\bpending\b", "todo"),
]
# Words that end a quoted-less search phrase ("notes about the launch in Atlas").
_PHRASE_STOP = r"(?=\s+(?:in|for|from|under)\s+(?:the\s+)?(?:project\s+)?[A-Z]|[?.!,]|$)"
_SEARCH = re.compile(
    r"\b(?:about|on|mentioning|mention|containing|regarding|re|with|titled|called|named|matching|for)\s+(?P<term>.+?)" + _PHRASE_STOP,
    re.IGNORECASE,
)
_PROJECT = re.compile(
    r"\b(?:in|for|from|under|of)\s+(?:the\s+|my\s+)?(?:project\s+)?(?P<name>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)(?:\s+project)?\b"
)
_PROJECT_SUFFIX = re.compile(r"\b(?P<name>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)\s+project\b")
# "Show all Harbor tasks", "complete the Atlas to-dos": a capitalised name before the tasks is a project's.
PROJECT_ADJECTIVE = re.compile(
    r"\b(?i:the|my|all|all\s+the|all\s+my|these|those)\s+(?P<name>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)?)\s+(?i:tasks?|to-?dos?|notes?)\b"
)
# "Does Atlas have open tasks?": the project as the subject of the question.
_PROJECT_SUBJECT = re.compile(r"^(?i:does|did|has)\s+(?i:the\s+)?(?P<name>[A-Z][\w&.-]*)\s+(?i:have|has|got)\b")
# "What's on my plate (today)?", "what should I work on (or finish) next?" ask for the tasks not done yet;
# the plate and "next" are not words to search them for.
WHAT_IS_OPEN = re.compile(
    r"\b(?:on (?:my|our) plate|(?:should|could|can|do|shall) (?:i|we) work on|(?:should|shall) (?:i|we) (?:do|finish|tackle|start(?: on)?|focus on)"
    r"|(?:i|we) (?:still )?(?:have|need|got) to do|what(?:'s|\s+is)\s+(?:up\s+)?next)\b"
    r"(?:\s+(?:next|first|today|this week|right now|now))?",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“'‘](?P<term>[^\"”'’]{2,80})[\"”'’]")
FILLER = re.compile(r"^(?:the|my|a|an|any|all)\s+", re.IGNORECASE)
GENERIC_TERMS = {"tasks", "task", "notes", "note", "it", "them", "everything", "anything", "me", "my tasks", "my notes"}


DELETE_WORDS = r"delete|remove|erase|get rid of|clear out|clear(?=\s+(?:away\s+)?(?:my|the|all|every|completed|done|finished)\b)"
# "the design tasks", "these launch tasks": a word or two before "tasks" that is a search term.
_ADJECTIVE_TERM = re.compile(
    r"\b(?:the|my|these|those|all(?:\s+(?:the|my))?)\s+(?P<term>[\w-]+(?:\s+[\w-]+)?)\s+(?:tasks?|to-?dos?)\b", re.IGNORECASE
)
# One task named after the word "task" ("delete the task buy milk", "mark the task call Bob as
# done"): its title is what to look for, up to "as done" or the project. The same for "mark buy
# milk as done", which names no task at all.
DONE = r"as\s+(?:done|complete|completed|finished)\b"
_NAMED_TASK = re.compile(
    r"\b(?:task|to-?do)\s+(?!(?:about|called|named|titled|matching|mentioning|containing|in|for|from|under|as)\b)"
    rf"(?P<term>.+?)(?=\s+{DONE}|\s+(?:in|from|under)\s+(?:the\s+)?(?:project\s+)?[A-Z]|\s*[?.!,]|\s*$)",
    re.IGNORECASE,
)
# What a named change may not name: a word pointing back at the conversation, or a note or a project.
POINTERS = {"it", "them", "that", "this", "those", "these"}
NOTE_OR_PROJECT = re.compile(r"\b(?:notes?|projects?)\b", re.IGNORECASE)
# "What's urgent?", "which tasks are high priority?": tasks of that priority or higher.
_PRIORITIES = [
    (r"\burgent\b|\basap\b", "urgent"),
    (r"\bhigh[- ]priority\b|\bpriority is high\b|\bare high priority\b|\bimportant\b|\btop priority\b", "high"),
]
# How a request for a change may open: "please …", "could you …", "I want to …".
POLITELY = r"^(?:please\s+|(?:can|could|would) you\s+|i (?:want|need) to\s+)?"
# Days up to today, as people say them: when tasks were completed ("what did I finish this week?")
# or added ("what did I add today?").
PAST_WINDOWS = {
    "today": "today",
    "yesterday": "yesterday",
    "this week": "this_week",
    "last week": "last_week",
    "past week": "last_7_days",
    "lately": "last_7_days",
    "recently": "last_7_days",
    "recent": "last_7_days",
    "this month": "this_month",
    "last month": "last_month",
    # "What did I finish on Monday?": the last Monday, today included.
    **{day: day for day in WEEKDAYS},
}
# "What did I add today?", "which tasks did I create this week?", "tasks I added yesterday": the
# tasks added then (or all, newest first). Notes have no such listing.
WHAT_WAS_ADDED = re.compile(
    r"\b(?:(?:what|which)\s+(?:new\s+)?(?:tasks?\s+|to-?dos?\s+)?(?:did|have|'ve)\s+(?:i|we)\s+(?:just\s+)?(?:add(?:ed)?|create(?:d)?)"
    r"|(?:tasks?|to-?dos?)\s+(?:(?:that\s+)?(?:i|we)\s+(?:have\s+|'ve\s+)?)?(?:added|created))\b"
    rf"(?:.*?\b(?P<when>{'|'.join(PAST_WINDOWS)}))?",
    re.IGNORECASE,
)
NOTES_WHEN = re.compile(rf"\b(?:from|since|during|over|in|of|for)?\s*\b(?P<when>{'|'.join(PAST_WINDOWS)})\b", re.IGNORECASE)
_NOT_TERMS = {
    "all",
    "my",
    "the",
    "completed",
    "complete",
    "done",
    "finished",
    "open",
    "to-do",
    "todo",
    "remaining",
    "pending",
    "in-progress",
    "in progress",
    "progress",
    "current",
    "old",
    "other",
    "of my",
    "of the",
}
IN_PROJECT_AT_END = re.compile(r"\s*\b(?:in|from|under)\s+(?:the\s+)?(?:project\s+)?(?P<name>[A-Z][\w&.-]*)(?:\s+project)?\s*$")
EVERY = r"\b(?:all|every|everything)\b"


class Dates(TypedDict, total=False):
    """The Intent fields that pick tasks by a date."""

    due: str
    also_due: str
    due_on: str
    added: str
    completed: str
    undated: bool


# "Tasks without a due date", "which tasks have no deadline?", "undated tasks".
UNDATED = re.compile(
    r"\b(?:without|with\s+no|have\s+no|has\s+no|having\s+no|missing|lacking|no)\s+(?:a\s+|any\s+)?(?:due(?:\s+date)?|deadlines?)\b|\bundated\b",
    re.IGNORECASE,
)
COMPLETED_IN = re.compile(rf"\b(?:completed|finished|done|closed)\b.*?\b(?P<when>{'|'.join(PAST_WINDOWS)})\b", re.IGNORECASE)


def by_due_date(raw: str) -> Dates:
    """What a request says of the due date, as Intent fields: none, a date, or a window."""
    if UNDATED.search(raw):
        return {"undated": True}
    if due_on := due_date(raw):
        return {"due_on": due_on}
    if _JUST_DUE.search(raw):
        return {"due": "overdue", "also_due": "next_7_days"}  # "what's due?": what is late, then what comes next
    if two := _TWO_WINDOWS.search(raw.lower()):
        first, second = (AGENDA_DAYS.get(two[k], two[k]) for k in ("first", "second"))
        return {"due": first, "also_due": second} if first != second else {"due": first}
    if due := _due_window(raw.lower()):
        return {"due": due}
    return {}


def picked_by_date(raw: str) -> Dates:
    """The one date a change picks its tasks by, as Intent fields: the due date, else the day
    they were added, else the day they were completed."""
    if due := by_due_date(raw):
        return due
    if (added := WHAT_WAS_ADDED.search(raw)) and added["when"]:
        return {"added": PAST_WINDOWS[added["when"].lower()]}
    if done := COMPLETED_IN.search(raw):
        return {"completed": PAST_WINDOWS[done["when"].lower()]}
    return {}


_DUE_WINDOWS = [
    (r"\boverdue\b|\bpast due\b|\blate\b", "overdue"),
    (
        r"\bdue\b.*\b(?:next|coming)\s+(?:7|seven)\s+days\b|\b(?:next|coming)\s+(?:7|seven)\s+days\b.*\bdue\b|\bdue soon\b"
        r"|\bcoming up\b|\bupcoming\b",
        "next_7_days",
    ),
    (
        r"\bdue\s+(?:with)?in\s+(?:the\s+next\s+)?(?:(?:a|one|1|[2-7]|two|three|four|five|six|seven)\s+days?|(?:a|one|1)\s+weeks?)\b",
        "next_7_days",
    ),
    (r"\bdue\b.*\bend\s+of\s+(?:the\s+|this\s+)?month\b", "this_month"),
    (r"\bdue\b.*\bthis week\b|\bthis week\b.*\bdue\b", "this_week"),
    (r"\bdue\b.*\bnext week\b|\bnext week\b.*\bdue\b", "next_week"),
    (r"\bdue\b.*\b(?:this|the)\s+weekend\b|\b(?:this|the)\s+weekend\b.*\bdue\b", "weekend"),
    (r"\bdue\b.*\bthis month\b|\bthis month\b.*\bdue\b", "this_month"),
    (r"\bdue\b.*\bnext month\b|\bnext month\b.*\bdue\b", "next_month"),
    (r"\bdue\b.*\btoday\b|\btoday\b.*\bdue\b", "today"),
    (r"\bdue\b.*\btomorrow\b|\btomorrow\b.*\bdue\b", "tomorrow"),
    *((rf"\bdue\b.*\b{day}\b|\b{day}\b.*\bdue\b", day) for day in WEEKDAYS),
]
# "due Friday", "that are due this week": a due window said after the tasks it picks.
DUE_WINDOW = re.compile(
    r"\s*\b(?:that(?:'s|\s+is|\s+are)\s+|which\s+(?:is|are)\s+)?due\b(?:\s+(?:on|by))?\s+"
    rf"(?:today|tonight|tomorrow|soon|(?:this|next)\s+(?:week|month)|(?:this|the)\s+weekend|{'|'.join(WEEKDAYS)})\b",
    re.IGNORECASE,
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = rf"(?:{'|'.join(_MONTHS)})[a-z]*\.?"
MONTH_NAME = re.compile(
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?",
    re.IGNORECASE,
)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
DATE = rf"(?:(?P<month>{_MONTH})\s+(?P<day>{_DAY})|(?P<day2>{_DAY})\s+(?:of\s+)?(?P<month2>{_MONTH})|(?P<iso>\d{{4}}-\d{{2}}-\d{{2}}))\b"
A_DATE = re.compile(rf"\b(?:the\s+)?{DATE}", re.IGNORECASE)
# "Due on Dec 5", "due December 5th", "due on the 5th of December", "due 2026-12-05".
DUE_DATE = re.compile(rf"\bdue\b(?:\s+(?:on|by))?(?:\s+the)?\s+{DATE}", re.IGNORECASE)
# The same at the end of a new task: "pay rent by Dec 5", "renew the passport on 12 January".
DATE_AT_END = re.compile(rf"\s+(?:due(?:\s+on|\s+by)?|by|on)\s+(?:the\s+)?{DATE}\s*[.!]?$", re.IGNORECASE)


def due_date(raw: str, *, pattern: re.Pattern[str] = DUE_DATE, today: dt.date | None = None) -> str | None:
    """The date a "due on Dec 5" names, as an ISO date: of the years around `today` (the server's),
    the one that puts it nearest, so "Dec 31" asked on New Year's Day is the day before."""
    if not (match := pattern.search(raw)):
        return None
    try:
        if match["iso"]:
            return dt.date.fromisoformat(match["iso"]).isoformat()
        month = _MONTHS.index((match["month"] or match["month2"])[:3].lower()) + 1
        day = int(re.sub(r"\D", "", match["day"] or match["day2"]))
    except ValueError:
        return None
    today = today or dt.date.today()
    candidates = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            candidates.append(dt.date(year, month, day))
        except ValueError:  # Feb 29 of a year that has none, Nov 31
            continue
    return min(candidates, key=lambda d: abs((d - today).days)).isoformat() if candidates else None


def _due_window(lower: str) -> str | None:
    for pattern, window in _DUE_WINDOWS:
        if re.search(pattern, lower):
            return window
    if open_ := WHAT_IS_OPEN.search(lower):
        # "What do I need to do tomorrow?" is that day's; "... today?" is what needs doing first (the
        # focus list), and "what's on my plate?" everything not done yet.
        day = _A_DAY.search(lower, open_.start())
        return AGENDA_DAYS[day[0]] if day and AGENDA_DAYS[day[0]] != "today" else None
    if agenda := _AGENDA.search(lower):
        return AGENDA_DAYS[agenda["when"]]
    if (said := _TASKS_FOR.search(lower)) and not re.search(r"\b(?:finish\w*|complet\w*|done|closed|add\w*|creat\w*)\b", lower):
        return AGENDA_DAYS[said["when"] or said["whose"] or said["shown"]]
    return None


# A day's or week's agenda asked for without the word "due": "what do I have tomorrow?", "what's
# on today?", "what's happening this weekend?", "my tasks for Saturday". Not what was done or added.
AGENDA_DAYS = {
    "today": "today", "tonight": "today", "tomorrow": "tomorrow", "this week": "this_week", "next week": "next_week",
    "this weekend": "weekend", "the weekend": "weekend", **{day: day for day in WEEKDAYS},
}  # fmt: skip
_AGENDA_DAY = rf"today|tonight|tomorrow|this week|next week|this weekend|the weekend|{'|'.join(WEEKDAYS)}"
_AGENDA_WHEN = rf"(?P<when>{_AGENDA_DAY})"
_A_DAY = re.compile(rf"\b(?:{_AGENDA_DAY})\b")
_AGENDA = re.compile(
    r"^(?:what|anything|(?:do|have)\s+(?:i|we)\s+(?=(?:have|got)\s+anything\b)|is\s+there\s+anything)\b"
    r"(?:(?!\b(?:did|done|finish\w*|complet\w*|add\w*|creat\w*)\b).)*?"
    rf"\b(?:have|got|on|for|happening|planned|scheduled)\b.*?\b{_AGENDA_WHEN}\b"
)
# "What's due?", "anything due?": due, and no day said.
_JUST_DUE = re.compile(
    r"^(?:what(?:'s|\s+is|\s+are)?|anything|is\s+anything|(?:what|which|how\s+many)\s+tasks\s+are|do\s+i\s+have\s+anything)\s+due\s*[?.!]*$",
    re.IGNORECASE,
)
# "Due today or tomorrow", "overdue and due today": two windows, each listed.
_TWO_WINDOWS = re.compile(rf"\b(?P<first>overdue|{_AGENDA_DAY})\s+(?:or|and|&)\s+(?:(?:due|on)\s+)?(?P<second>overdue|{_AGENDA_DAY})\b")
# "Tasks for Saturday", "tasks this week", "today's tasks", "what's left this week?", "show today".
_TASKS_FOR = re.compile(
    rf"\b(?:tasks?|to-?dos?|left|remaining)\s+(?:(?:for|on)\s+)?{_AGENDA_WHEN}\b"
    rf"|^(?P<whose>{_AGENDA_DAY})'s\s+(?:tasks|to-?dos|agenda|list)\b"
    rf"|^(?:show|list)\s+(?:me\s+)?(?P<shown>{_AGENDA_DAY})\s*[?.!]*$"
)


def term_before_tasks(text: str) -> str | None:
    if match := _ADJECTIVE_TERM.search(text):
        if PROJECT_ADJECTIVE.search(text):
            return None  # "the Harbor tasks": a project's, not a title's word
        term = match["term"].strip().lower()
        words = [w for w in term.split() if w not in _NOT_TERMS]
        if (
            words
            and term not in _NOT_TERMS
            and not any(re.search(p, term) for p, _ in STATUS_WORDS)
            and not _due_window(term)
            and not priority(term)
        ):
            return " ".join(words)
    return None


def named_task(raw: str) -> str | None:
    if match := _NAMED_TASK.search(raw):
        return match["term"].strip(" \"'“”") or None
    return None


def priority(lower: str) -> str | None:
    for pattern, priority in _PRIORITIES:
        if re.search(pattern, lower):
            return priority
    return None


def status(lower: str) -> str:
    for pattern, status in STATUS_WORDS:
        if re.search(pattern, lower):
            return status
    return "all"


def project_name(raw: str) -> str | None:
    raw = A_DATE.sub("", raw)  # "due on the 5th of December" names no project "December"
    for pattern in (_PROJECT_SUFFIX, _PROJECT, _PROJECT_SUBJECT, PROJECT_ADJECTIVE):
        if match := pattern.search(raw):
            name = match.group("name").strip()
            if name.lower() not in {"i", "my", "the", *WEEKDAYS} and not MONTH_NAME.fullmatch(name):  # "anything for Saturday?" names a day
                return name
    return None


def search_term(raw: str, project_name: str | None) -> str | None:
    if match := _QUOTED.search(raw):
        return match.group("term").strip()
    for match in _SEARCH.finditer(raw):
        term = FILLER.sub("", match.group("term").strip()).strip()
        if project_name and term.lower() in {project_name.lower(), f"{project_name.lower()} project", f"project {project_name.lower()}"}:
            continue
        if term and term.lower() not in GENERIC_TERMS and term.lower() not in AGENDA_DAYS:  # "done for today" searches no "today"
            return term
    return None


_NOTE_TITLED = re.compile(
    r"^(?:the\s+|my\s+)?notes?\s+(?:called\s+|named\s+|titled\s+)?(?!(?:about|on|regarding|mentioning|containing|with|in|from)\b)(?P<title>\S.*)$",
    re.IGNORECASE,
)
_TITLE_THEN_NOTE = re.compile(r"^(?:the\s+|my\s+)(?P<title>.+?)\s+notes?$", re.IGNORECASE)


def note_title(what: str) -> str | None:
    """ "the note Venue ideas", "the landlord note": the title; not "my latest notes"."""
    if not (titled := _NOTE_TITLED.match(what) or _TITLE_THEN_NOTE.match(what)):
        return None
    title = titled["title"].strip(" \"'“”")
    return None if re.fullmatch(r"(?:latest|recent|newest|last|old|older|new|all|every)(?:\s+\d+)?|\d+", title, re.IGNORECASE) else title


# Words of a question that name nothing: what is left names what to look for in the notes when the
# knowledge base has no answer ("where did I put the wifi password?": wifi password).
_NAMING_NOTHING = frozenset(
    """a an the my our your his her their its this that these those it i we you me us is are was were be been am do does did
    done have has had can could would should will shall may might must what whats where when which who whom whose why how
    put keep kept store stored save saved write wrote written find found look get got know tell show give any some
    there here of in on at to for from with about into by and or not no again please remind remember thing things stuff
    leave left place placed set need want use used say says said mention mentioned told much many""".split()
)


# "Why did we drop the account wall?": what was done to a thing is the asker's word, and maybe not
# the note's ("Decision: onboarding without an account wall"); a task's title may well start with
# it ("did I call the landlord?": "Call landlord about the faucet").
_WHAT_WAS_DONE_TO = re.compile(r"\b(?:did|do|does|should|shall|will|would|could|can)\s+(?:i|we|you|they)\s+(?P<verb>[a-z]+)\b")


def narrower(search: str, *, question: str) -> str | None:
    """The words of a search but the verb of what was done to the thing asked about, else its
    commonest in English, when it has more than one: a note that says "faucet" is what "faucet
    issue" was after, and "decide" is not written in "Decision: keep the current CMS"."""
    found = search.split()
    if len(found) < 2:
        return None
    done = _WHAT_WAS_DONE_TO.search(question.lower())
    left_out = done["verb"] if done and done["verb"] in found else max(found, key=lambda w: zipf_frequency(w, "en"))
    return " ".join(w for w in found if w != left_out)


# Endings a title may not share with the word asked: "renewal" is found as "renew", "receipts" as
# "receipt". Four letters at least are left.
_TITLE_ENDING = re.compile(r"(?<=[a-z]{4})(?:ments?|als?|ings?|s)$")


def title_word(search: str) -> str | None:
    """The rarest word in English of a search of several, cut to its stem, for looking through
    titles once more: "passport renewal" finds "Renew passport" by "renew"."""
    found = _naming_words(search)
    if len(found) < 2:
        return None
    return _TITLE_ENDING.sub("", min(found, key=lambda w: zipf_frequency(w, "en")))


def key_words(question: str, *, most: int = 4) -> str | None:
    return " ".join(dict.fromkeys(_naming_words(question)[:most])) or None


def _naming_words(text: str) -> list[str]:
    """The words of a text that may name a thing to look for, in order, lower case."""
    return [
        w
        for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower().replace("’", "'"))
        if len(w) > 2 and w.replace("'", "") not in _NAMING_NOTHING
    ]
