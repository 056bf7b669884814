"""Plain-language requests the offline engine understands, parsed into a small intent object.

Deterministic rules, no model: the point is that a fresh install with no key still does the
useful read-side things, and says honestly what it cannot do.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, replace
from typing import TypedDict

from llm.offline.phrasing import WEEKDAYS

STATUS_WORDS: list[tuple[str, str]] = [
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
# "Does Atlas have open tasks?": the project as the subject of the question.
_PROJECT_SUBJECT = re.compile(r"^(?i:does|did|has)\s+(?i:the\s+)?(?P<name>[A-Z][\w&.-]*)\s+(?i:have|has|got)\b")
# "What's on my plate (today)?", "what should I work on (or finish) next?" ask for the tasks not done yet;
# the plate and "next" are not words to search them for.
_WHAT_IS_OPEN = re.compile(
    r"\b(?:on (?:my|our) plate|(?:should|could|can|do|shall) (?:i|we) work on|(?:should|shall) (?:i|we) (?:do|finish|tackle|start(?: on)?|focus on)"
    r"|(?:i|we) (?:still )?(?:have|need|got) to do|what(?:'s|\s+is)\s+(?:up\s+)?next)\b"
    r"(?:\s+(?:next|first|today|this week|right now|now))?",
    re.IGNORECASE,
)
# "Add a note to Harbor: call the venue": the project first, then the title.
_PROJECT_THEN_TITLE = re.compile(
    r"^(?:to|in|for|under)\s+(?:the\s+)?(?:project\s+)?(?P<project>[A-Z][\w&.-]*)(?:\s+project)?\s*[:–—-]\s*(?P<title>.+)$"
)
# "Add a task to buy milk": the task is "buy milk" ("to" joins the request to what is to be done).
_TO_DO_WHAT = re.compile(r"^to\s+(?=[a-z])")
_QUOTED = re.compile(r"[\"“'‘](?P<term>[^\"”'’]{2,80})[\"”'’]")
_FILLER = re.compile(r"^(?:the|my|a|an|any|all)\s+", re.IGNORECASE)
_GENERIC_TERMS = {"tasks", "task", "notes", "note", "it", "them", "everything", "anything", "me", "my tasks", "my notes"}


@dataclass(frozen=True)
class Intent:
    # read: "tasks" | "count_tasks" | "notes" | "count_notes" | "projects" | "knowledge" | "help"
    #   | "cannot" (a change to notes or projects it does not make: it says so, changes nothing)
    #   | "cleanup" (a cleanup it cannot decide on: it lists the tasks and says so)
    #   | "which_task" (a change to "it" or "this task": it asks for the task's name, changes nothing)
    #   | "project_status" (how one project stands: its counts, then what is still open in it)
    #   | "maybe_project" (a bare name, "Atlas": that project's status if there is one, else a "find")
    #   | "no_such_date" (a due date the calendar does not have, "Nov 31": it says so, `search` holds it)
    #   | "thanks" (a thank-you: it says you're welcome)
    #   | "today" | "time" (the person's date, which the query tool reads in their time zone; and the time there)
    #   | "open_range" (due before, after or between days: no window says which, so it says what it can list)
    #   | "overview" (how the person stands: open, overdue, due soon, recently completed)
    #   | "focus" (what to do first: the open tasks that are overdue, due today or urgent)
    #   | "find" (a word looked up in the task titles and the notes at once)
    # write (always proposed, never applied without confirmation):
    #   "delete_tasks" | "complete_tasks" | "reopen_tasks" | "move_tasks" | "update_tasks" | "create_task"
    #   | "create_note" | "delete_notes" | "move_notes" | "create_project" | "update_project" | "delete_project"
    #   | "name_needed" (a new task, note or project with no name, `search` says which: it asks for one)
    kind: str
    status: str = "all"
    search: str | None = None
    project_name: str | None = None
    target_project: str | None = None  # move_tasks: where to
    title: str | None = None  # create_*: what to call it
    due: str | None = None  # tasks/count_tasks: one of workspace.selectors.DUE_WINDOWS; create_task: the day it is due
    priority: str | None = None  # tasks/count_tasks: this priority or higher ("high", "urgent")
    due_on: str | None = None  # tasks/count_tasks and changes: due on this date (ISO), one no window names
    completed: str | None = None  # tasks: completed in this window, one of workspace.selectors.PAST_WINDOWS
    added: str | None = None  # tasks: added in this window, one of workspace.selectors.PAST_WINDOWS
    undated: bool = False  # tasks/count_tasks and changes: only tasks with no due date
    unfiled: bool = False  # tasks/count_tasks and changes: only tasks in no project
    changed: str | None = None  # notes/count_notes: added or edited in this window, one of workspace.selectors.PAST_WINDOWS
    archived: bool = False  # projects: the archived ones alone
    content: str = ""  # create_note: what the note says
    # update_tasks: what changes (None: stays as it is)
    new_priority: str | None = None
    new_due: str | None = None  # a day the query tool dates ("tomorrow", "friday", "next_week")
    new_due_on: str | None = None  # a date (ISO)
    new_status: str | None = None  # "in_progress": the task is started
    new_title: str | None = None  # one task only; update_project: the project's new name
    new_archived: bool | None = None  # update_project: archived, or no longer


_DELETE_WORDS = r"delete|remove|erase|get rid of|clear out|clear(?=\s+(?:away\s+)?(?:my|the|all|every|completed|done|finished)\b)"
_DELETE = re.compile(rf"\b(?:{_DELETE_WORDS})\b", re.IGNORECASE)
_COMPLETE = re.compile(
    r"^(?:please\s+)?(?:complete|finish|close)\b|\bmark\b.*\b(?:as\s+)?(?:done|complete|completed|finished)\b", re.IGNORECASE
)
_MOVE = re.compile(
    r"\bmove\b\s+(?P<what>.+?)\s+\bto\b\s+(?:the\s+)?(?:project\s+)?(?P<target>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)", re.IGNORECASE
)
_CREATE = re.compile(
    r"^(?:please\s+)?(?:create|add|make|new)\s+(?:a\s+|an\s+)?(?:new\s+)?(?P<kind>task|note|to-?do)\b\s*(?:called|named|titled|:|-)?\s*(?P<title>.+?)"
    r"(?:\s+(?:in|to|for|under)\s+(?:the\s+)?(?:project\s+)?(?P<project>[A-Z][\w&.-]*)(?:\s+project)?)?[.!]?$",
    re.IGNORECASE,
)
_CREATE_IN_PROJECT = re.compile(r"\s+(?:in|to|for|under)\s+(?:the\s+)?(?:project\s+)?(?P<project>[A-Z][\w&.-]*)(?:\s+project)?$")
# A task said the way people say it to a person: "remind me to call Bob", "put milk on my list".
# The whole of what follows is the title ("in Paris" is part of the errand, not a project).
_ERRAND = re.compile(
    r"^(?:please\s+)?(?:(?:remind\s+me|don'?t\s+let\s+me\s+forget)\s+to\s+(?P<todo>.+?)"
    r"|(?:add|put)\s+(?P<item>.+?)\s+(?:on|to)\s+my\s+(?:to-?do\s+|task\s+)?list)[.!]?$",
    re.IGNORECASE,
)
# When a new task is due, said at the end of it: "remind me to call Bob tomorrow", "add a task pay
# rent by Friday". A weekday needs its preposition: "prepare for Friday" is an errand, not a date.
_DUE_AT_END = re.compile(
    r"\s+(?:(?:due|by|on|for|over)\s+)?(?P<day>today|tonight|tomorrow|this\s+weekend|the\s+weekend)"
    rf"|\s+(?:due(?:\s+on|\s+by)?|by|on|this)\s+(?P<weekday>{'|'.join(WEEKDAYS)})"
    r"\s*[.!]?$",
    re.IGNORECASE,
)
_PASSWORD = re.compile(r"\bpasswords?\b", re.IGNORECASE)
# "the design tasks", "these launch tasks": a word or two before "tasks" that is a search term.
_ADJECTIVE_TERM = re.compile(
    r"\b(?:the|my|these|those|all(?:\s+(?:the|my))?)\s+(?P<term>[\w-]+(?:\s+[\w-]+)?)\s+(?:tasks?|to-?dos?)\b", re.IGNORECASE
)
# One task named after the word "task" ("delete the task buy milk", "mark the task call Bob as
# done"): its title is what to look for, up to "as done" or the project. The same for "mark buy
# milk as done", which names no task at all.
_DONE = r"as\s+(?:done|complete|completed|finished)\b"
_NAMED_TASK = re.compile(
    r"\b(?:task|to-?do)\s+(?!(?:about|called|named|titled|matching|mentioning|containing|in|for|from|under|as)\b)"
    rf"(?P<term>.+?)(?=\s+{_DONE}|\s+(?:in|from|under)\s+(?:the\s+)?(?:project\s+)?[A-Z]|\s*[?.!,]|\s*$)",
    re.IGNORECASE,
)
# "I finished buy milk", "done with the passport task", "the venue task is done": a task said to be done.
_SAID_DONE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well),?\s+)?(?:i(?:'ve|\s+have)?\s+(?:just\s+|already\s+|now\s+)?(?:finished|completed|done)\s+(?!(?:all|every|everything|my|\d+)\b)(?P<what>.+?)"
    r"|(?:i'?m\s+|i\s+am\s+)?(?:all\s+)?done\s+with\s+(?!(?:all|every|everything|it|that|this|them)\b)(?P<with>.+?)"
    r"|(?!(?:what|which|how|is|are|everything|all|it|that|this)\b)(?P<is>[^?]+?)\s+(?:is|are)\s+(?:now\s+)?(?:done|finished|complete|completed))\s*[.!]*$",
    re.IGNORECASE,
)
_MARK_DONE = re.compile(rf"^(?:please\s+)?mark\s+(?P<term>.+?)\s+{_DONE}", re.IGNORECASE)
_MOVE_NAMED = re.compile(
    r"^(?i:please\s+)?(?i:move)\s+(?P<term>.+?)\s+(?i:to\s+(?:the\s+)?(?:project\s+)?)(?P<target>[A-Z][\w&.-]*)(?i:\s+project)?[.!]?$"
)
_ONE_TASK = re.compile(r"\b(?:task|to-?do)\b(?!s)", re.IGNORECASE)
# What a named change may not name: a word pointing back at the conversation, or a note or a project.
_POINTERS = {"it", "them", "that", "this", "those", "these"}
_NOTE_OR_PROJECT = re.compile(r"\b(?:notes?|projects?)\b", re.IGNORECASE)
# "What's urgent?", "which tasks are high priority?": tasks of that priority or higher.
_PRIORITIES = [
    (r"\burgent\b|\basap\b", "urgent"),
    (r"\bhigh[- ]priority\b|\bpriority is high\b|\bare high priority\b|\bimportant\b|\btop priority\b", "high"),
]
# How a request for a change may open: "please …", "could you …", "I want to …".
_POLITELY = r"^(?:please\s+|(?:can|could|would) you\s+|i (?:want|need) to\s+)?"
# Changes to notes and projects other than adding a note: offline, these are refused in words.
_OTHER_CHANGE = re.compile(
    _POLITELY + rf"(?:(?:{_DELETE_WORDS}|archive|unarchive|rename|edit|update|mark)\b"
    r"|(?:create|add|make|start|new)\b.*\bprojects?\b)",
    re.IGNORECASE,
)
# Changes to tasks other than adding, completing, moving and deleting ("rename the task…", "set buy
# milk to high priority", "start the task…", "mark buy milk as in progress"): refused in words.
_OTHER_TASK_CHANGE = re.compile(
    _POLITELY
    + r"(?:rename|edit|update|change|set(?!\s+up\b)|start|begin|reopen|re-open|reschedule|postpone|prioriti[sz]e|deprioriti[sz]e|assign|unassign"
    r"|mark\b(?!.*\b(?:done|complete|completed|finished)\b))\b",
    re.IGNORECASE,
)
# "Mark it as done", "delete this task": a change to a task named only by a word pointing back at
# the conversation, which the offline engine does not read.
_POINTED_AT_CHANGE = re.compile(
    r"^(?:please\s+|(?:can|could|would) you\s+)?"
    rf"(?:{_DELETE_WORDS}|complete|finish|close|mark|move)\s+(?P<what>(?:it|them|that|this|those|these)"
    r"(?:\s+(?:one|ones|tasks?|to-?dos?))?)"
    r"(?=\s*(?:[?.!,]|$)|\s+(?:as|to|please|now|for me)\b|\s+(?:done|complete|completed|finished)\s*(?:[?.!,]|$))",
    re.IGNORECASE,
)
# Days up to today, as people say them: when tasks were completed ("what did I finish this week?")
# or added ("what did I add today?").
_PAST_WINDOWS = {
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
}
# "What did I finish this week?", "what have I got done?": the tasks completed then (or ever).
_WHAT_WAS_DONE = re.compile(
    r"(?:\bwhat|^(?:did|have))\s+(?:did\s+|have\s+|'ve\s+)?(?:i|we)\s+(?:finish(?:ed)?|complete(?:d)?|close(?:d)?|get(?:\s+\w+)?\s+done|got(?:\s+\w+)?\s+done|gotten done|done"
    r"|(?:do|work on|worked on)\b(?=.*\b(?:today|yesterday|(?:this|last) (?:week|month))\b))\b"
    rf"(?:.*?\b(?P<when>{'|'.join(_PAST_WINDOWS)}))?",
    re.IGNORECASE,
)
# "What did I add today?", "which tasks did I create this week?", "tasks I added yesterday": the
# tasks added then (or all, newest first). Notes have no such listing.
_WHAT_WAS_ADDED = re.compile(
    r"\b(?:(?:what|which)\s+(?:new\s+)?(?:tasks?\s+|to-?dos?\s+)?(?:did|have|'ve)\s+(?:i|we)\s+(?:just\s+)?(?:add(?:ed)?|create(?:d)?)"
    r"|(?:tasks?|to-?dos?)\s+(?:(?:that\s+)?(?:i|we)\s+(?:have\s+|'ve\s+)?)?(?:added|created))\b"
    rf"(?:.*?\b(?P<when>{'|'.join(_PAST_WINDOWS)}))?",
    re.IGNORECASE,
)
_NOTES_WHEN = re.compile(rf"\b(?:from|since|during|over|in|of|for)?\s*\b(?P<when>{'|'.join(_PAST_WINDOWS)})\b", re.IGNORECASE)
_PROJECTS_COMPARED = re.compile(
    r"^(?:which|what)\s+projects?\s+(?:has|have|is|are)\s+(?:the\s+)?(?:most|fewest|least|biggest|busiest|largest|smallest)\b"
    r"|\b(?:busiest|biggest|largest)\s+project\b|^(?:which|what)\s+projects?\s+(?:has|have|are)\s+(?:no|empty)\b"
)
_DID_FINISH = re.compile(
    r"\b(?:did|have|'ve)\s+(?:i|we)\s+(?:finish(?:ed)?|complete(?:d)?|close(?:d)?|get\s+done|got\s+done|gotten\s+done|done)\b"
    rf"(?:.*?\b(?P<when>{'|'.join(_PAST_WINDOWS)}))?",
    re.IGNORECASE,
)
_ADDED_TO = re.compile(r"\b(?:to|into)\s+(?:the\s+)?(?:project\s+)?(?P<name>[A-Z][\w&.-]*)")
# "Clean up my tasks (only the stale ones)": no rule says which tasks, so nothing is proposed.
_CLEANUP = re.compile(r"\b(?:clean ?up|tidy(?: up)?|sort out|declutter|prune)\b", re.IGNORECASE)
_QUESTION = re.compile(r"^(how|what|why|where|when|which|who|can|could|does|do|is|are|should)\b", re.IGNORECASE)
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


# Questions about how something works or what something is belong to the knowledge base, even
# when they name workspace things: "how do I export my tasks to CSV?" asks for instructions, not
# for the task list, and "what do I need to do to connect a model?" for steps, not for to-dos.
# "How many ..." counts the workspace.
_HOW_TO = re.compile(
    r"^(?:(?:please|so|and|but|ok|okay),?\s+)?(?:how\s+(?!many\b|much\b)(?:do|does|did|can|could|should|would|will|is|are|to)\b"
    r"|(?:is it possible|is there a way|what(?:'s| is) the (?:best )?way)\s+to\b|can i\b|where (?:do|can|should) i\b"
    r"|explain\b|what(?:'s| is| are) the difference\b"
    r"|.*?\b(?:(?:have|need) to|should (?:i|we)) do(?: next| first)? (?:to|in order to)\b)",  # "what do I need to do to connect a model?"
    re.IGNORECASE,
)
_CONCEPT = re.compile(
    r"\bdifference between\b|^(?:why\b|what(?:'s| is| are| does)\s+(?:an?|the)\b"
    r"(?!.*\b(?:on my|left|due|overdue|urgent|important|priority|next)\b)|what does .+ mean\b)",
    re.IGNORECASE,
)
_MY_WORKSPACE = re.compile(r"\b(?:my|our)\s+(?:\w+\s+)?(?:tasks?|notes?|projects?|to-?dos?|plate)\b", re.IGNORECASE)
# Questions about how Clarion behaves belong to the user guide even when they use a status word
# or name tasks: in "what happens to what I type while a question is pending?" the pending thing
# is a question card, and "what happens to my tasks when I delete a project?" asks for a rule.
_BEHAVIOUR = re.compile(
    r"^(?:(?:so|and|but|ok|okay),?\s+)?(?:what\s+(?:happens|happened|will happen|would happen)\b|what if\b"
    r"|how\s+(?:long|soon|often)\b(?!\s+ago\b)|how much time\b"
    r"|why\s+(?:does|did|do|is|are|was|were|can't|won't|doesn't|didn't|isn't|wasn't)\b|when\s+(?:does|do|will)\b"
    r"|is there (?:a|an|any)\s+(?:way|limit|setting|shortcut|option|timeout|maximum)\b)",
    re.IGNORECASE,
)
# Clarion's own vocabulary: a question in these words is about the product, unless it also names
# the workspace's tasks, notes or projects ("which notes mention the admin?").
_PRODUCT = re.compile(
    r"\b(?:clarion|the assistant|questions?|cards?|countdown|timer|deadlines?|default option|chat box|composer|what i type"
    r"|typing|shortcuts?|keyboard|knowledge base|citations?|sources?|user guide|offline engine|api key|adapters?|admin"
    r"|prompts?|settings?|confirmations?|environment variables?)\b",
    re.IGNORECASE,
)
_WORKSPACE_NOUN = re.compile(r"\b(?:tasks?|notes?|projects?|to-?dos?|on my plate)\b", re.IGNORECASE)
# What tasks, notes, projects or the assistant are or can do, asked of the kind rather than of
# one's data: "do notes support markdown?", "are my tasks backed up?", "can the assistant delete
# my notes?", "where are my notes stored?", "how many tasks can I have?". Not "are my tasks done?"
# nor "does Atlas have open tasks?", which ask about the data.
_PROPERTY = re.compile(
    r"^(?:(?:can|could|does|do|is|are|will|would)\s+(?:(?:a|an|the|my|our)\s+)?"
    r"(?:tasks?|notes?|projects?|to-?dos?|assistant|clarion|other\s+users?|other\s+people|anyone|someone)\b"
    r"(?!.*\b(?:due|overdue|urgent|left|open|done|complete|completed|finished|in\s+progress|started|today|tomorrow|this\s+week)\b)"
    r".*\b(?:support\w*|have|has|belong|stored?|saved|kept|backed\s+up|sync\w*|encrypted|private|shared?|visible|see|attach\w*"
    r"|recur\w*|repeat\w*|import\w*|export\w*|know|change|delete|edit|limit\w*|link\w*|nest\w*|tag\w*|assign\w*)\b"
    r"|where\s+(?:are|is)\s+(?:my|our|the)\s+.*\b(?:stored|saved|kept)\b|who\s+(?:else\s+)?(?:can|could|is\s+able\s+to)\s+(?:see|read|access|edit|change)\b"
    r"|are\s+there\s+(?:any\s+)?limits?\b"
    r"|how\s+many\s+.*\bcan\s+(?:i|we|you)\s+(?:have|create|add|make|store|keep)\b"
    r"|what\s+(?:does|can|do)\s+(?:the\s+assistant|clarion|it|you)\s+(?:know|see|read|remember)\b)",
    re.IGNORECASE,
)


def is_knowledge_question(text: str) -> bool:
    """A how-to, conceptual or how-does-Clarion-behave question, for the knowledge base rather
    than the workspace."""
    raw = text.strip()
    if _HOW_TO.search(raw) or _BEHAVIOUR.search(raw) or _PROPERTY.search(raw):
        return True
    if _CONCEPT.search(raw) and not _MY_WORKSPACE.search(raw):
        return True
    is_question = bool(_QUESTION.match(raw)) or raw.endswith("?")
    return is_question and bool(_PRODUCT.search(raw)) and not _WORKSPACE_NOUN.search(raw)


# "What's the status of Atlas?", "how is the Harbor project going?", "where are we on Atlas?": a
# project named as projects are (capitalised), asked about as a whole.
_PROJECT_STATUS = re.compile(
    r"^(?i:(?:please\s+)?(?:what(?:'s|\s+is)\s+(?:the\s+)?(?:status|progress|state)\s+(?:of|on|in|with)"
    r"|how(?:'s|\s+is)|how\s+are\s+things\s+(?:in|on|with)|where\s+are\s+we\s+(?:on|with)|what(?:'s|\s+is)\s+happening\s+(?:in|on|with)"
    r"|(?:give\s+me\s+)?(?:an?\s+)?(?:status|summary|overview|update)\s+(?:of|on|for)|tell\s+me\s+about"
    r"|(?:show|open|view|go\s+to)(?:\s+me)?)\s+(?:the\s+)?(?:project\s+)?)"
    r"(?P<name>[A-Z][\w&-]*)(?i:\s+project)?(?i:\s+(?:going|doing|coming\s+along|looking))?\s*[?.!]*$"
)


# "How am I doing?", "summarize my week", "give me an overview": how the person stands as a whole.
# Only the whole message: "a summary of the release notes" asks for something else.
_OVERVIEW = re.compile(
    r"^(?:(?:please|so|ok|okay),?\s+)?(?:(?:can|could|would)\s+you\s+)?(?:"
    r"how\s+am\s+i\s+doing(?:\s+(?:this\s+week|today|with\s+my\s+(?:tasks|work|to-?dos)))?"
    r"|how(?:'s|\s+is)\s+my\s+(?:week|day|workload)(?:\s+(?:looking|going))?"
    r"|what\s+does\s+my\s+(?:week|day)\s+look\s+like|where\s+do\s+i\s+stand|catch\s+me\s+up"
    r"|(?:give\s+me\s+)?(?:an?\s+|my\s+)?(?:weekly\s+|daily\s+)?(?:overview|summary|recap|rundown|status\s+(?:report|update))"
    r"(?:\s+(?:of|on|for)\s+(?:my\s+)?(?:week|day|tasks|work|workload|progress|everything|today|this\s+week))?"
    r"|summari[sz]e\s+(?:my\s+)?(?:week|day|tasks|work|workload|progress|everything)|(?:help\s+me\s+)?plan\s+(?:my|the)\s+week"
    r")(?:\s+please)?\s*[?.!]*$",
    re.IGNORECASE,
)


# "What should I focus on?", "what's next?", "where should I start?": what needs doing first, not
# every open task.
_FOCUS = re.compile(
    r"\b(?:(?:should|shall|could|can|do)\s+(?:i|we)\s+(?:focus\s+on|tackle|prioriti[sz]e|start(?:\s+on|\s+with)?"
    r"|(?:work\s+on|do|finish)\s+(?:next|first|today|now|right\s+now))"
    r"|where\s+(?:should|shall|do)\s+(?:i|we)\s+start|what(?:'s|\s+is)\s+(?:up\s+)?next|needs?\s+my\s+attention"
    r"|what(?:'s|\s+is)\s+(?:my|our)\s+next\s+(?:task|to-?do|thing)"
    r"|(?:my|our)\s+priorities|\bplan\s+(?:my|the)\s+day)\b",
    re.IGNORECASE,
)


# "Is the passport task done?", "have I finished buy milk?": the tasks of that title, with their status.
_IS_IT_DONE = re.compile(
    r"^(?:is|are|was|were)\s+(?:the\s+|my\s+)?(?:task\s+)?(?P<term>.+?)\s+(?:task\s+)?(?:done|finished|complete|completed)(?:\s+yet)?\s*\??$"
    r"|^(?:have|did)\s+(?:i|we)\s+(?:already\s+)?(?:finish(?:ed)?|complete(?:d)?|do(?:ne)?)\s+(?:the\s+|my\s+)?(?:task\s+)?(?P<term2>.+?)(?:\s+task)?(?:\s+yet)?\s*\??$",
    re.IGNORECASE,
)
_NOT_ONE_TASK = re.compile(
    rf"^(?:it|them|that|this|those|these)$|\b(?:all|every|everything|any|anything|tasks|notes?|{'|'.join(_PAST_WINDOWS)})\b", re.IGNORECASE
)
# "When is the passport due?", "when's buy milk due?": the tasks of that title, with their due dates.
_WHEN_DUE = re.compile(
    r"^when(?:'s|\s+is|\s+are|\s+was|\s+were)\s+(?:the\s+|my\s+)?(?:task\s+)?(?P<term>.+?)\s+(?:task\s+)?due\s*\??$", re.IGNORECASE
)


_THANKS = re.compile(
    r"^(?:thanks?(?:\s+you)?|thx|ty|cheers|great|perfect|awesome|nice|cool|ok(?:ay)?|got it)(?:[,!.\s]+(?:so much|a lot|again|mate))?[!. ]*$",
    re.IGNORECASE,
)
_WHAT_DAY = re.compile(
    r"^(?:what(?:'s|\s+is)\s+(?:the\s+)?(?:today'?s\s+)?(?:date|day)(?:\s+today)?|what\s+day\s+is\s+(?:it|today)(?:\s+today)?"
    r"|(?P<time>what(?:'s|\s+is)\s+the\s+time|what\s+time\s+is\s+it))(?:\s+now)?\s*\??$",
    re.IGNORECASE,
)
# "Find milk", "search for the landlord", "look for anything about the venue": a word looked up in
# the tasks and the notes at once. Not "find notes about …", which names where to look, nor "find
# out how …", a question.
_FIND_ANYWHERE = re.compile(
    r"^(?:please\s+)?(?:search|find|look)\s+(?:for\s+|up\s+)?(?:(?:anything|everything|something|stuff)\s+(?:about|on|regarding|mentioning|with)\s+)?"
    r"(?!(?:out|how|what|why|where|when|which|who|my|all|every)\b)(?P<term>(?:(?!\b(?:tasks?|notes?|projects?|to-?dos?|docs|documentation|guide|knowledge\s+base)\b).)+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_SEARCH_DOCS = re.compile(
    r"^(?:please\s+)?(?:search|look\s+(?:in|up|through)|check)\s+(?:in\s+)?(?:the\s+)?(?:docs|documentation|guide|user\s+guide|knowledge\s+base|help)"
    r"\s+(?:for|about|on)\s+(?P<question>.+?)\s*$|^find\s+out\s+(?P<question2>.+?)\s*$",
    re.IGNORECASE,
)
_SHOW_ONE_NOTE = re.compile(
    r"^(?:please\s+)?(?:show|open|read|view|get|display)\s+(?:me\s+)?(?P<what>(?:the|my)\s+(?:.+?\s+)?notes?\b.*?)\s*[?.!]*$"
    r"|^what(?:'s|\s+is)\s+in\s+(?P<what2>(?:the|my)\s+(?:.+?\s+)?notes?\b.*?)\s*[?.!]*$",
    re.IGNORECASE,
)
_SHOW_ONE_TASK = re.compile(
    r"^(?:please\s+)?(?:show|find|open|view|display|get)\s+(?:me\s+)?(?:the\s+|my\s+)?(?:task|to-?do)\s+(?!(?:about|called|named|titled|matching|in|for)\b)"
    r"(?P<term>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)


# "Rename this conversation to Planning", "switch to dark mode", "change my password": done in
# Clarion's pages, not to the workspace; the guide says how.
_CHANGE_TO_THE_APP = re.compile(
    rf"(?P<polite>{_POLITELY})(?:rename|delete|remove|change|set|switch|turn|make|pin|unpin|export|start|open)\b.*"
    r"\b(?:conversations?|chats?|threads?|theme|dark\s+mode|light\s+mode|fonts?|passwords?)\b",
    re.IGNORECASE,
)
# "Which tasks aren't in a project?", "tasks with no project", "unfiled tasks".
_UNFILED = re.compile(
    r"\b(?:without|with\s+no|have\s+no|has\s+no|having\s+no|not\s+in|aren[’']?t\s+in|isn[’']?t\s+in|outside(?:\s+of)?|no)\s+"
    r"(?:a\s+|any\s+)?projects?\b|\bunfiled\b",
    re.IGNORECASE,
)


def parse(text: str) -> Intent:
    intent = _parse(text)
    if intent.kind in ("tasks", "count_tasks") and _UNFILED.search(text):
        return replace(intent, unfiled=True, project_name=None)
    return intent


def _parse(text: str) -> Intent:
    raw = text.strip()
    lower = raw.lower()
    if not raw or re.fullmatch(
        r"(hi|hello|hey|help|\?|what can you do\??|who are you\??|how are you(?: doing)?\??|good (?:morning|afternoon|evening)|(?:hi|hey) there)[!. ]*",
        lower,
    ):
        return Intent("help")
    if _OVERVIEW.match(raw):
        return Intent("overview")
    if _THANKS.match(raw):
        return Intent("thanks")
    if day := _WHAT_DAY.match(raw):
        return Intent("time" if day["time"] else "today")
    if (note := _SHOW_ONE_NOTE.match(raw)) and (title := _note_title(note["what"] or note["what2"])):
        return Intent("notes", search=title)  # "show the note Venue ideas": that note
    if shown := _SHOW_ONE_TASK.match(raw):  # "show the task Renew passport (in Home)"
        term, where = shown["term"], _IN_PROJECT_AT_END.search(shown["term"])
        return Intent("tasks", search=(term[: where.start()] if where else term).strip(" \"'“”"), project_name=where and where["name"])
    if (about := _PROJECT_STATUS.match(raw)) and not _PRODUCT.search(about["name"]):
        return Intent("project_status", project_name=about["name"])
    if re.fullmatch(r"[A-Z][\w&-]*(?:\s+[A-Z][\w&-]*){0,2}\s*[?.!]*", raw) and lower.strip("?.! ") not in _AGENDA_DAYS:
        return Intent("maybe_project", project_name=raw.strip("?.! "))
    if day := re.fullmatch(r"(today|tonight|tomorrow|this week|next week|this weekend)\s*[?.!]*", lower):
        return Intent("tasks", due=_AGENDA_DAYS[day[1]])  # "tomorrow?": what is due then
    if _PROJECTS_COMPARED.search(raw.lower()):
        return Intent("projects")  # "which project has the most open tasks?": every project's counts answer it
    if found := _FIND_ANYWHERE.match(raw):
        return Intent("find", search=_FILLER.sub("", found["term"].strip(" \"'“”")))
    if found := _SEARCH_DOCS.match(raw):
        return Intent("knowledge", search=found["question"] or found["question2"])
    if is_knowledge_question(raw):
        return Intent("knowledge", search=raw)
    if (app := _CHANGE_TO_THE_APP.match(raw)) and not _WORKSPACE_NOUN.search(raw):
        # Asked of the knowledge base as the question it is: "how do I rename this conversation?" (the new name is no part of it)
        change = re.sub(r"^((?:rename|retitle)\b.*?)\s+(?:to|as)\s+.+$", r"\1", raw[app.end("polite") :].rstrip(".!?"), flags=re.IGNORECASE)
        return Intent("knowledge", search=f"How do I {change}?")
    if (asked := _IS_IT_DONE.match(raw)) and (term := (asked["term"] or asked["term2"]).strip(" \"'“”")) and not _NOT_ONE_TASK.search(term):
        return Intent("tasks", search=term)  # "is the passport task done?": that task, with its status
    if done := _WHAT_WAS_DONE.search(raw):
        when = (done["when"] or "").lower()
        return Intent("tasks", status="completed", project_name=_project_name(raw), completed=_PAST_WINDOWS.get(when))
    if pointed := _POINTED_AT_CHANGE.match(raw):
        return Intent("which_task", search=pointed["what"])
    if write := _write_intent(raw):
        return write
    if (when := _WHEN_DUE.match(raw)) and when["term"].lower() not in _POINTERS | _GENERIC_TERMS:
        return Intent("tasks", search=when["term"].strip(" \"'“”"))
    if _FOCUS.search(raw) and not re.search(r"\bnotes?\b|\bprojects?\b", lower) and not _by_due_date(raw):
        return Intent("focus", project_name=_project_name(raw))
    if (added := _WHAT_WAS_ADDED.search(raw)) and not re.search(r"\bnotes?\b", lower):
        when = (added["when"] or "").lower()
        project_name = _project_name(raw) or ((to := _ADDED_TO.search(raw)) and to["name"]) or None
        return Intent("tasks", status=_status(lower), project_name=project_name, added=_PAST_WINDOWS.get(when))
    if _PASSWORD.search(raw) and not _WORKSPACE_NOUN.search(raw):
        return Intent("knowledge", search=raw)  # the guide says how; nothing in the workspace does it
    if _OTHER_TASK_CHANGE.match(raw) or re.match(_POLITELY + r"(?:archive|unarchive)\b", raw, re.IGNORECASE):
        return Intent("cannot")

    # "What did I write about the landlord?": what one writes down is in the notes.
    mentions_notes = bool(
        re.search(
            r"\bnotes?\b|\b(?:write|wrote|written|jot(?:ted)?)\s+(?:down\s+)?(?:about|on|regarding)\b|\b(?:did|have)\s+i\s+(?:write|written|jot|jotted)\b",
            lower,
        )
    )
    mentions_tasks = bool(re.search(r"\btasks?\b|\bto[- ]?dos?\b|\bon my plate\b|\bwork(ing)? on\b|\b(?:over)?due\b", lower))
    mentions_projects = bool(re.search(r"\bprojects?\b", lower))
    owns_projects = mentions_projects and bool(re.search(r"\b(?:my|i have|i've got|we have)\b", lower))
    status = _status(_WHAT_IS_OPEN.sub("", lower))  # "what do I have to do?" asks for more than to-dos
    project_name = _project_name(raw)
    search = _search_term(_WHAT_IS_OPEN.sub("", raw), project_name)
    if _WHAT_IS_OPEN.search(raw) and status == "all":
        status = "open"  # what is on one's plate, or left to work on, is what is not done yet

    if (mentions_notes or mentions_projects) and not mentions_tasks and _OTHER_CHANGE.match(raw):
        return Intent("cannot")
    if mentions_projects and re.search(r"\barchived\s+projects?\b|\bprojects?\b.*\barchived\b", lower):
        return Intent("projects", archived=True)  # "list my archived projects", "which projects are archived?"
    # "Tasks about the urgent fix" searches for a title; "urgent tasks" asks for a priority.
    priority = None if mentions_notes or (search and _priority(search.lower())) else _priority(lower)
    if priority and status == "all":
        status = "open"  # what is urgent is what is still to do, unless the question names a status
    counting = bool(re.search(r"\bhow many\b|\bcount\b|\bnumber of\b", lower))
    if re.search(r"\bdue\s+(?:(?:any\s*time|sometime)\s+)?(?:after|before|between|until|from)\b", lower):
        return Intent("open_range")  # "due after Friday": a listing of one day or window would be wrong
    if (dated := _DUE_DATE.search(raw)) and _due_date(raw) is None:  # "due on Nov 31": no listing would be right
        return Intent("no_such_date", search=re.sub(r"^due\s+(?:(?:on|by)\s+)?(?:the\s+)?", "", dated[0], flags=re.IGNORECASE))
    if due := _by_due_date(raw):
        # "What's due this week?", "what's due on Dec 5?", "anything overdue in Atlas?", "tasks with no due date"
        return Intent("count_tasks" if counting else "tasks", status=status, project_name=project_name, priority=priority, **due)
    if counting and (finished := _DID_FINISH.search(raw)):
        # "How many tasks did I finish this week?": those completed then (or ever).
        when = _PAST_WINDOWS.get((finished["when"] or "").lower())
        return Intent("count_tasks", status="completed", project_name=project_name, priority=priority, completed=when)
    if counting and (mentions_tasks or status != "all"):
        return Intent("count_tasks", status=status, project_name=project_name, priority=priority)
    if priority:
        return Intent("tasks", status=status, search=search, project_name=project_name, priority=priority)
    if mentions_notes:
        # "Any notes from last week?", "notes I wrote today": the notes added or edited then.
        when = _NOTES_WHEN.search(raw)
        changed = _PAST_WINDOWS[when["when"].lower()] if when else None
        if when and search and when["when"].lower() in search.lower():
            search = _search_term(raw[: when.start()] + raw[when.end() :], project_name)
        return Intent("count_notes" if counting else "notes", search=search, project_name=project_name, changed=changed)
    if mentions_tasks and _CLEANUP.search(raw):
        return Intent("cleanup", project_name=project_name)
    if mentions_tasks or status != "all":
        return Intent("tasks", status=status, search=search, project_name=project_name)
    if project_name and (mentions_projects or re.search(r"\b(?:everything|all|anything)\b|^what(?:'s| is) in\b", lower)):
        # "What's in the Atlas project?", "show me everything in Harbor"
        return Intent("tasks", status=status, search=search, project_name=project_name)
    if mentions_projects and (owns_projects or not _QUESTION.match(raw)):
        return Intent("projects")
    if _QUESTION.match(raw) or raw.endswith("?"):
        # Not about the workspace, but a question: the knowledge base may answer it.
        return Intent("knowledge", search=raw)
    if mentions_projects:
        return Intent("projects")
    return Intent("help")


# "Reopen the task buy milk", "mark buy milk as not done", "set the design tasks back to to-do":
# completed tasks made to-do again (the undo of completing them).
_NOT_DONE = r"(?:not\s+(?:yet\s+)?(?:done|completed?|finished)|undone|incomplete|uncompleted|to-?do|open)"
_REOPEN = re.compile(
    rf"{_POLITELY}(?:(?:reopen|re-open|uncomplete|unmark)\s+(?P<what>.+?)"
    rf"|(?:mark|set|put|move|turn)\s+(?P<marked>.+?)\s+(?:as\s+|back\s+(?:to|as|into)\s+|to\s+){_NOT_DONE}(?:\s+again)?)\s*[.!]?$",
    re.IGNORECASE,
)


_IN_PROJECT_AT_END = re.compile(r"\s*\b(?:in|from|under)\s+(?:the\s+)?(?:project\s+)?(?P<name>[A-Z][\w&.-]*)(?:\s+project)?\s*$")


@dataclass(frozen=True)
class _Target:
    """The tasks a change to named tasks picks: "the task buy milk in Atlas", "the design tasks"."""

    words: str  # as said, without the project
    search: str | None
    project_name: str | None

    @property
    def pointer(self) -> bool:
        """ "it", "that one": only a model could read which task that is."""
        return _FILLER.sub("", self.words).lower() in _POINTERS

    def names_none(self, picked: _Dates) -> bool:
        """ "Reopen the task", "start the task": no task named, so none may be proposed (never every one)."""
        return self.search is None and not picked and not self.project_name and not re.search(_EVERY, self.words, re.IGNORECASE)


_EVERY = r"\b(?:all|every|everything)\b"


def _target(words: str) -> _Target | None:
    """None when the words name a note or a project, which these changes do not touch."""
    words = words.strip(" \"'“”")
    # Only "in Atlas" at the end names a project: "for Sam" in "buy a present for Sam" is the title's.
    project_name = (where := _IN_PROJECT_AT_END.search(words)) and where["name"]
    if where:
        words = words[: where.start()]
    if _NOTE_OR_PROJECT.search(words):
        return None
    if re.search(r"\b(?:tasks?|to-?dos?)\b", words, re.IGNORECASE):
        search = _named_task(words) or _term_before_tasks(words)
    else:
        search = _FILLER.sub("", words).strip(" \"'“”") or None
    if search and search.lower() in {"everything", "all", "all of them", "completed", "done", "finished"}:
        search = None
    return _Target(words, search, project_name or None)


def _reopen(raw: str) -> Intent | None:
    if not (match := _REOPEN.match(raw)) or (target := _target(match["what"] or match["marked"])) is None:
        return None
    picked = _picked_by_date(raw)
    if target.pointer or target.names_none(picked):
        return Intent("which_task", search=target.words)
    return Intent("reopen_tasks", status="completed", search=target.search, project_name=target.project_name, **picked)


def _write_intent(raw: str) -> Intent | None:
    lower = raw.lower()
    if reopened := _reopen(raw):
        return reopened
    if changed := _task_change(raw):
        return changed
    if deleted := _delete_notes(raw):
        return deleted
    if to_project := _project_change(raw):
        return to_project
    if (
        (said := _SAID_DONE.match(raw))
        and (target := _target(said["what"] or said["with"] or said["is"]))
        and target.search
        and not target.pointer
    ):
        return Intent("complete_tasks", search=target.search, project_name=target.project_name)
    if match := _ERRAND.match(raw):
        title, due = _due_at_end((match["todo"] or match["item"]).strip(" \"'“”"))
        return Intent("create_task", title=title[:300], **due)
    if unnamed := re.fullmatch(r"(?:please\s+)?(?:create|add|make|new)\s+(?:a\s+|an\s+)?(?:new\s+)?(task|note|to-?do)\s*[.!?]*", raw, re.I):
        return Intent("name_needed", search="note" if unnamed[1].lower() == "note" else "task")
    if match := _CREATE.match(raw):
        title, project = match["title"].strip(" \"'“”"), match["project"]
        if not project and (first := _PROJECT_THEN_TITLE.match(title)):
            title, project = first["title"].strip(" \"'“”"), first["project"]
        title = _TO_DO_WHAT.sub("", title)
        if match["kind"].lower() == "note":
            # "Add a note called Venue ideas: the old mill, the boathouse": a short title, then what it says.
            if (said := re.match(r"^(?P<title>[^:]{1,80}?)\s*:\s+(?P<content>\S.*)$", title)) is not None:
                title, content = said["title"], said["content"]
                return Intent("create_note", title=title[:300], project_name=project, content=content)
            return Intent("create_note", title=title[:300], project_name=project) if title else None
        title, due = _due_at_end(title)
        if not project and due and (where := _CREATE_IN_PROJECT.search(title)):
            title, project = title[: where.start()], where["project"]  # "call the venue in Harbor by Friday"
        return Intent("create_task", title=title[:300], project_name=project, **due) if title else None
    mentions_tasks = bool(re.search(r"\btasks?\b|\bto-?dos?\b", lower))
    if not mentions_tasks:
        return _mark_done(raw) or _move_named(raw)
    move = _MOVE.search(raw)
    project_name = None if move else _project_name(raw)
    if move:
        search = _term_before_tasks(move["what"]) or _search_term(raw, None) or _named_task(move["what"])
    else:
        # "due on Dec 5", "due Friday", "with no due date" pick by date: they are no title to search for
        plain = _UNDATED.sub("", _DUE_WINDOW.sub("", _DUE_DATE.sub("", raw)))
        search = _search_term(plain, project_name) or _term_before_tasks(plain) or _named_task(plain)
    if search is None and _ONE_TASK.search(raw) and not re.search(r"\b(?:all|every|each)\b", lower):
        return None  # "delete the task" names no task: never propose every one of them
    # Which tasks, as a listing would pick them: "delete the tasks due today", "complete all the
    # urgent tasks", "delete the tasks I added yesterday" touch those tasks and no others.
    picked = _picked_by_date(raw)
    if move:
        return Intent(
            "move_tasks", status=_status(lower), target_project=move["target"], priority=_priority(lower), search=search, **picked
        )
    if _DELETE.search(raw):
        return Intent("delete_tasks", status=_status(lower), project_name=project_name, priority=_priority(lower), search=search, **picked)
    if _COMPLETE.search(raw):
        return Intent("complete_tasks", status="all", project_name=project_name, priority=_priority(lower), search=search, **picked)
    return None


class _Dates(TypedDict, total=False):
    """The Intent fields that pick tasks by a date."""

    due: str
    due_on: str
    added: str
    completed: str
    undated: bool


# "Tasks without a due date", "which tasks have no deadline?", "undated tasks".
_UNDATED = re.compile(
    r"\b(?:without|with\s+no|have\s+no|has\s+no|having\s+no|missing|lacking|no)\s+(?:a\s+|any\s+)?(?:due(?:\s+date)?|deadlines?)\b|\bundated\b",
    re.IGNORECASE,
)
_COMPLETED_IN = re.compile(rf"\b(?:completed|finished|done|closed)\b.*?\b(?P<when>{'|'.join(_PAST_WINDOWS)})\b", re.IGNORECASE)


def _by_due_date(raw: str) -> _Dates:
    """What a request says of the due date, as Intent fields: none, a date, or a window."""
    if _UNDATED.search(raw):
        return {"undated": True}
    if due_on := _due_date(raw):
        return {"due_on": due_on}
    if due := _due_window(raw.lower()):
        return {"due": due}
    return {}


def _picked_by_date(raw: str) -> _Dates:
    """The one date a change picks its tasks by, as Intent fields: the due date, else the day
    they were added, else the day they were completed."""
    if due := _by_due_date(raw):
        return due
    if (added := _WHAT_WAS_ADDED.search(raw)) and added["when"]:
        return {"added": _PAST_WINDOWS[added["when"].lower()]}
    if done := _COMPLETED_IN.search(raw):
        return {"completed": _PAST_WINDOWS[done["when"].lower()]}
    return {}


_DUE_WINDOWS = [
    (r"\boverdue\b|\bpast due\b|\blate\b", "overdue"),
    (
        r"\bdue\b.*\b(?:next|coming)\s+(?:7|seven)\s+days\b|\b(?:next|coming)\s+(?:7|seven)\s+days\b.*\bdue\b|\bdue soon\b"
        r"|\bcoming up\b|\bupcoming\b",
        "next_7_days",
    ),
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
_DUE_WINDOW = re.compile(
    r"\s*\b(?:that(?:'s|\s+is|\s+are)\s+|which\s+(?:is|are)\s+)?due\b(?:\s+(?:on|by))?\s+"
    rf"(?:today|tonight|tomorrow|soon|(?:this|next)\s+(?:week|month)|(?:this|the)\s+weekend|{'|'.join(WEEKDAYS)})\b",
    re.IGNORECASE,
)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = rf"(?:{'|'.join(_MONTHS)})[a-z]*\.?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_DATE = rf"(?:(?P<month>{_MONTH})\s+(?P<day>{_DAY})|(?P<day2>{_DAY})\s+(?:of\s+)?(?P<month2>{_MONTH})|(?P<iso>\d{{4}}-\d{{2}}-\d{{2}}))\b"
_A_DATE = re.compile(rf"\b(?:the\s+)?{_DATE}", re.IGNORECASE)
# "Due on Dec 5", "due December 5th", "due on the 5th of December", "due 2026-12-05".
_DUE_DATE = re.compile(rf"\bdue\b(?:\s+(?:on|by))?(?:\s+the)?\s+{_DATE}", re.IGNORECASE)
# The same at the end of a new task: "pay rent by Dec 5", "renew the passport on 12 January".
_DATE_AT_END = re.compile(rf"\s+(?:due(?:\s+on|\s+by)?|by|on)\s+(?:the\s+)?{_DATE}\s*[.!]?$", re.IGNORECASE)


def _due_date(raw: str, *, pattern: re.Pattern[str] = _DUE_DATE, today: dt.date | None = None) -> str | None:
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
    if _WHAT_IS_OPEN.search(lower):
        return None  # "what's on my plate today?" is everything not done yet, due or not
    if agenda := _AGENDA.search(lower) or _TASKS_FOR.search(lower):
        return _AGENDA_DAYS[agenda["when"]]
    return None


# A day's or week's agenda asked for without the word "due": "what do I have tomorrow?", "what's
# on today?", "what's happening this weekend?", "my tasks for Saturday". Not what was done or added.
_AGENDA_DAYS = {
    "today": "today", "tonight": "today", "tomorrow": "tomorrow", "this week": "this_week", "next week": "next_week",
    "this weekend": "weekend", "the weekend": "weekend", **{day: day for day in WEEKDAYS},
}  # fmt: skip
_AGENDA_WHEN = rf"(?P<when>today|tonight|tomorrow|this week|next week|this weekend|the weekend|{'|'.join(WEEKDAYS)})"
_AGENDA = re.compile(
    r"^(?:what|anything)\b(?:(?!\b(?:did|done|finish\w*|complet\w*|add\w*|creat\w*)\b).)*?"
    rf"\b(?:have|got|on|for|happening|planned|scheduled)\b.*?\b{_AGENDA_WHEN}\b"
)
_TASKS_FOR = re.compile(rf"\b(?:tasks?|to-?dos?)\s+(?:for|on)\s+{_AGENDA_WHEN}\b")


def _due_at_end(title: str) -> tuple[str, _Dates]:
    """A new task's title without the day it is due, and that day as Intent fields: a due window
    ("tomorrow", "friday") or a date ("due on Dec 5")."""
    if (dated := _DATE_AT_END.search(title)) and dated.start() > 0 and (due_on := _due_date(title, pattern=_DATE_AT_END)):
        return title[: dated.start()].strip(" \"'“”,"), {"due_on": due_on}
    match = _DUE_AT_END.search(title)
    if match is None or match.start() == 0:
        return title, {}
    day = (match["day"] or match["weekday"]).lower()
    return title[: match.start()].strip(" \"'“”,"), {"due": _AGENDA_DAYS.get(re.sub(r"\s+", " ", day), day)}


def _term_before_tasks(text: str) -> str | None:
    if match := _ADJECTIVE_TERM.search(text):
        term = match["term"].strip().lower()
        words = [w for w in term.split() if w not in _NOT_TERMS]
        if (
            words
            and term not in _NOT_TERMS
            and not any(re.search(p, term) for p, _ in STATUS_WORDS)
            and not _due_window(term)
            and not _priority(term)
        ):
            return " ".join(words)
    return None


def _mark_done(raw: str) -> Intent | None:
    """ "Mark buy milk as done", "mark everything in Atlas as done"; not "mark it as done", whose
    "it" only a model could read."""
    if not (match := _MARK_DONE.match(raw)):
        return None
    project_name = _project_name(raw)
    term = _FILLER.sub("", match["term"].strip(" \"'“”"))
    if project_name:
        term = re.sub(rf"\s*\b(?:in|from|under)\s+(?:the\s+)?(?:project\s+)?{re.escape(project_name)}(?:\s+project)?$", "", term)
    if term.lower() in {"everything", "all", "all of them", "every one", ""}:
        return Intent("complete_tasks", project_name=project_name)
    if term.lower() in _POINTERS or _NOTE_OR_PROJECT.search(term):
        return None  # a note or a project is not marked done
    return Intent("complete_tasks", search=term, project_name=project_name)


def _move_named(raw: str) -> Intent | None:
    """ "Move buy milk to Harbor": one task named without the word "task", to a project named as
    projects are (capitalised). Not "move it to Harbor" (only a model could read "it"), nor a note."""
    if not (match := _MOVE_NAMED.match(raw)):
        return None
    term = _FILLER.sub("", match["term"].strip(" \"'“”"))
    if term.lower() in _POINTERS | {"everything", "all"} or _NOTE_OR_PROJECT.search(term):
        return None
    return Intent("move_tasks", search=term, target_project=match["target"].rstrip("."))


def _named_task(raw: str) -> str | None:
    if match := _NAMED_TASK.search(raw):
        return match["term"].strip(" \"'“”") or None
    return None


def _priority(lower: str) -> str | None:
    for pattern, priority in _PRIORITIES:
        if re.search(pattern, lower):
            return priority
    return None


def _status(lower: str) -> str:
    for pattern, status in STATUS_WORDS:
        if re.search(pattern, lower):
            return status
    return "all"


def _project_name(raw: str) -> str | None:
    raw = _A_DATE.sub("", raw)  # "due on the 5th of December" names no project "December"
    for pattern in (_PROJECT_SUFFIX, _PROJECT, _PROJECT_SUBJECT):
        if match := pattern.search(raw):
            name = match.group("name").strip()
            if name.lower() not in {"i", "my", "the", *WEEKDAYS}:  # "anything for Saturday?" names a day
                return name
    return None


def _search_term(raw: str, project_name: str | None) -> str | None:
    if match := _QUOTED.search(raw):
        return match.group("term").strip()
    for match in _SEARCH.finditer(raw):
        term = _FILLER.sub("", match.group("term").strip()).strip()
        if project_name and term.lower() in {project_name.lower(), f"{project_name.lower()} project", f"project {project_name.lower()}"}:
            continue
        if term and term.lower() not in _GENERIC_TERMS and term.lower() not in _AGENDA_DAYS:  # "done for today" searches no "today"
            return term
    return None


# Changes to named tasks besides completing, reopening and moving them: a new priority ("make buy
# milk urgent"), a new due day ("push the passport task to Friday"), starting one ("start working on
# buy milk") and a new title ("rename the task buy milk to buy oat milk").
_NEW_PRIORITY = r"(?:an?\s+)?(?P<priority>urgent|high|medium|normal|low)(?:[- ]priority)?"
_NEW_DAY = rf"(?P<new_day>(?:the\s+)?(?:(?P<when>today|tonight|tomorrow|next\s+week|this\s+weekend|weekend|(?:(?:next|this)\s+)?(?:{'|'.join(WEEKDAYS)}))\b|{_DATE}))"
_CHANGE_END = r"\s*[.!?]?$"  # "can you make buy milk urgent?" asks for the change
_TASK_CHANGES = [
    re.compile(rf"{_POLITELY}(?:set|change|raise|lower|bump|make)\s+(?:the\s+)?priority\s+(?:of|on|for)\s+(?P<what>.+?)\s+(?:to\s+)?{_NEW_PRIORITY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{_POLITELY}(?:change|set|move|push|update)\s+(?:the\s+)?(?:due\s+date|deadline)\s+(?:of|on|for)\s+(?P<what>.+?)\s+to\s+{_NEW_DAY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{_POLITELY}(?:make|set|mark|bump|raise|lower|change|put|turn)\s+(?P<what>.+?)\s+(?:(?:up\s+|down\s+)?to\s+|as\s+|at\s+)?{_NEW_PRIORITY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{_POLITELY}(?P<lower>de-?)?prioriti[sz]e\s+(?P<what>.+?){_CHANGE_END}", re.IGNORECASE),
    re.compile(
        rf"{_POLITELY}(?:move|push|postpone|reschedule|defer|delay|bump|change|set|make)\s+(?P<what>.+?)\s+"
        rf"(?:(?:back\s+|out\s+)?to|until|till|for|due(?:\s+on|\s+by)?)\s+{_NEW_DAY}{_CHANGE_END}",
        re.IGNORECASE,
    ),
    re.compile(rf"{_POLITELY}give\s+(?P<what>.+?)\s+a\s+(?:due\s+date|deadline)\s+(?:of\s+|on\s+)?{_NEW_DAY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{_POLITELY}(?P<start>start|begin)\s+(?:working\s+on\s+|work\s+on\s+|on\s+|with\s+)?(?!(?:a|an|new|over|again|today|(?:the|my)\s+(?:day|week))\b)(?P<what>.+?){_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{_POLITELY}(?:mark|set|move|put|turn)\s+(?P<what>.+?)\s+(?:as\s+|to\s+|into\s+)?(?P<start>in[- ]progress|started){_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{_POLITELY}(?:rename|retitle)\s+(?P<what>.+?)\s+(?:to|as)\s+(?P<title>.+?){_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{_POLITELY}(?:change|set)\s+(?:the\s+)?(?:title|name)\s+of\s+(?P<what>.+?)\s+to\s+(?P<title>.+?){_CHANGE_END}", re.IGNORECASE),
]  # fmt: skip


class _Change(TypedDict, total=False):
    """The Intent fields that say what a change to tasks makes them."""

    new_title: str
    new_priority: str
    new_status: str
    new_due: str
    new_due_on: str


def _task_change(raw: str) -> Intent | None:
    match = next(filter(None, (pattern.match(raw) for pattern in _TASK_CHANGES)), None)
    if match is None or (target := _target(match["what"])) is None:
        return None
    groups = match.groupdict()
    picked = _picked_by_date(target.words)  # "make the tasks due today urgent"; not the new day
    if target.pointer or target.names_none(picked):
        return Intent("which_task", search=target.words)
    if groups.get("title"):
        if target.search is None:
            return Intent("which_task", search=target.words)  # a new title is for one task, named
        change: _Change = {"new_title": groups["title"].strip(" \"'“”")[:500]}
    elif groups.get("priority"):
        change = {"new_priority": {"normal": "medium"}.get(groups["priority"].lower(), groups["priority"].lower())}
    elif "lower" in groups:
        change = {"new_priority": "low" if groups["lower"] else "high"}
    elif groups.get("start"):
        change = {"new_status": "in_progress"}
    elif when := groups.get("when"):
        day = re.sub(r"^(?:next|this)\s+(?=\w+day$)", "", when.lower())  # "next Friday": the coming one
        change = {"new_due": {"tonight": "today", "next week": "next_week", "this weekend": "weekend"}.get(re.sub(r"\s+", " ", day), day)}
    elif due_on := _due_date(match["new_day"], pattern=_A_DATE):
        change = {"new_due_on": due_on}
    else:
        return Intent("no_such_date", search=match["new_day"])
    # What is changed is still to do; a new title may go to a finished task too.
    status = "all" if "new_title" in change else "open"
    return Intent("update_tasks", status=status, search=target.search, project_name=target.project_name, **picked, **change)


# "Delete the note Venue ideas", "remove my notes about the landlord", "delete the notes in Atlas".
_DELETE_NOTES = re.compile(rf"{_POLITELY}(?:{_DELETE_WORDS})\s+(?P<what>(?:.+?\s+)?notes?\b.*?){_CHANGE_END}", re.IGNORECASE)
_NOTE_TITLED = re.compile(
    r"^(?:the\s+|my\s+)?notes?\s+(?:called\s+|named\s+|titled\s+)?(?!(?:about|on|regarding|mentioning|containing|with|in|from)\b)(?P<title>\S.*)$",
    re.IGNORECASE,
)
_TITLE_THEN_NOTE = re.compile(r"^(?:the\s+|my\s+)(?P<title>.+?)\s+notes?$", re.IGNORECASE)


# "Move the note Venue ideas to Harbor": to a project named as projects are (capitalised).
_MOVE_NOTES = re.compile(
    rf"{_POLITELY}(?i:move|put|file)\s+(?P<what>(?:.+?\s+)?(?i:notes?)\b.*?)\s+(?i:(?:in)?to\s+(?:the\s+)?(?:project\s+)?)"
    r"(?P<target>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)(?i:\s+project)?\s*[.!?]?$"
)


def _note_title(what: str) -> str | None:
    """ "the note Venue ideas", "the landlord note": the title; not "my latest notes"."""
    if not (titled := _NOTE_TITLED.match(what) or _TITLE_THEN_NOTE.match(what)):
        return None
    title = titled["title"].strip(" \"'“”")
    return None if re.fullmatch(r"(?:latest|recent|newest|last|old|older|new|all|every)(?:\s+\d+)?|\d+", title, re.IGNORECASE) else title


def _delete_notes(raw: str) -> Intent | None:
    if match := _DELETE_NOTES.match(raw):
        return _notes_change("delete_notes", match["what"])
    if match := _MOVE_NOTES.match(raw):
        return _notes_change("move_notes", match["what"], target_project=match["target"])
    return None


def _notes_change(kind: str, what: str, *, target_project: str | None = None) -> Intent | None:
    """The notes a deletion or a move names: by title, by what they say, by project or by when they changed."""
    what = what.strip()
    project_name = None
    if where := _IN_PROJECT_AT_END.search(what):
        what, project_name = what[: where.start()], where["name"]
    if re.fullmatch(r"(?:this|that|these|those)\s+notes?|it|them", what, re.IGNORECASE):
        return Intent("which_task", search=what)  # which note "this note" is, only a model could read
    if re.search(r"\b(?:tasks?|to-?dos?)\b", what, re.IGNORECASE):
        return None  # "delete the task about notes" is about a task
    changed = None
    if when := _NOTES_WHEN.search(what):  # "the notes I wrote yesterday": picked by when, not a title
        changed, title = _PAST_WINDOWS[when["when"].lower()], None
    else:
        title = _note_title(what)
    search = title or _search_term(what, project_name)
    if search and re.fullmatch(r"(?:all|every|everything|all of them)", search, re.IGNORECASE):
        search = None
    if search is None and not project_name and not changed and not re.search(rf"{_EVERY}|^my\s+notes$", what, re.IGNORECASE):
        return Intent("which_task", search=what)  # "delete the note" names none: never propose every one
    return Intent(kind, search=search, project_name=project_name, changed=changed, target_project=target_project)


# Changes to a project, named as people name projects: "create a project called Garden", "archive
# Atlas", "rename the Atlas project to Atlas 2", "delete the Harbor project".
_NAMED_PROJECT = r"(?:the\s+)?(?:project\s+(?P<name>.+?)|(?P<name2>.+?)\s+project)"
_NEW_PROJECT = re.compile(
    rf"{_POLITELY}(?:create|add|make|start|set\s+up|open|new)\s+(?:a\s+|an\s+)?(?:new\s+)?project\b\s*(?:called|named|titled|for|:|-)?\s*(?P<name>.*?){_CHANGE_END}",
    re.IGNORECASE,
)
_ARCHIVE_PROJECT = re.compile(
    rf"{_POLITELY}(?P<verb>archive|unarchive|un-archive)\s+(?:the\s+)?(?:project\s+)?(?P<name>.+?)(?:\s+project)?{_CHANGE_END}",
    re.IGNORECASE,
)
_RENAME_PROJECT = re.compile(rf"{_POLITELY}(?:rename|retitle)\s+{_NAMED_PROJECT}\s+(?:to|as)\s+(?P<new>.+?){_CHANGE_END}", re.IGNORECASE)
_DELETE_PROJECT = re.compile(rf"{_POLITELY}(?:{_DELETE_WORDS})\s+{_NAMED_PROJECT}{_CHANGE_END}", re.IGNORECASE)


def _project_change(raw: str) -> Intent | None:
    def name(match: re.Match[str], group: str = "name") -> str:
        return (match[group] or "").strip(" \"'“”")

    if created := _NEW_PROJECT.match(raw):
        return Intent("create_project", title=name(created)[:200]) if name(created) else Intent("name_needed", search="project")
    archived = _ARCHIVE_PROJECT.match(raw)
    renamed = _RENAME_PROJECT.match(raw)
    deleted = _DELETE_PROJECT.match(raw)
    match = archived or renamed or deleted
    if match is None:
        return None
    project = name(match) or name(match, "name2")
    if _FILLER.sub("", project).lower() in _POINTERS or re.search(rf"{_EVERY}|\b(?:my|projects|tasks?|notes?)\b", project, re.I):
        return None  # "archive it", "delete all my projects": refused in words
    if archived:
        return Intent("update_project", project_name=project, new_archived=archived["verb"].lower() == "archive")
    if renamed:
        return Intent("update_project", project_name=project, new_title=name(renamed, "new")[:200])
    return Intent("delete_project", project_name=project)
