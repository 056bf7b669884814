"""Requests for changes, read into intents the engine proposes on a confirmation card: tasks
added, completed, reopened, started, rescheduled, re-prioritised, renamed, moved or deleted;
notes added, moved or deleted; projects created, renamed, archived or deleted. Nothing here
writes: the person confirms every change first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

from llm.offline import words
from llm.offline.phrasing import WEEKDAYS
from llm.offline.words import Intent

# "Add a note to Harbor: call the venue": the project first, then the title.
_PROJECT_THEN_TITLE = re.compile(
    r"^(?:to|in|for|under)\s+(?:the\s+)?(?:project\s+)?(?P<project>[A-Z][\w&.-]*)(?:\s+project)?\s*[:–—-]\s*(?P<title>.+)$"
)
# "Add a task to buy milk": the task is "buy milk" ("to" joins the request to what is to be done).
_TO_DO_WHAT = re.compile(r"^to\s+(?=[a-z])")
_DELETE = re.compile(rf"\b(?:{words.DELETE_WORDS})\b", re.IGNORECASE)
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
    r"|(?:add|put)\s+(?P<item>.+?)\s+(?:on|to)\s+my\s+(?:to-?do\s+|task\s+)?list"
    r"|schedule\s+(?:a\s+|an\s+)?(?P<event>.+?\s+(?:for|on)\s+\S.*?)|(?:add\s*:|\+)\s*(?P<added>.+?))[.!]?$",
    re.IGNORECASE,
)
# "Add Dune to my reading list": the end of the note of that title ("Reading list") if there is
# one, else a new task, as on a to-do list.
_ON_A_NAMED_LIST = re.compile(
    r"^(?:please\s+)?(?:add|put)\s+(?P<item>.+?)\s+(?:on|to)\s+(?:my|the)\s+(?P<list>(?!to-?do\b|task\b)[\w-]+(?:\s+[\w-]+)?\s+list)[.!]?$",
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
# "I finished buy milk", "done with the passport task", "the venue task is done": a task said to be done.
_SAID_DONE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well),?\s+)?(?:i(?:'ve|\s+have)?\s+(?:just\s+|already\s+|now\s+)?(?:finished|completed|done)\s+(?!(?:all|every|everything|my|\d+)\b)(?P<what>.+?)"
    r"|(?:i'?m\s+|i\s+am\s+)?(?:all\s+)?done\s+with\s+(?!(?:all|every|everything|it|that|this|them)\b)(?P<with>.+?)"
    r"|(?!(?:what|which|how|is|are|everything|all|it|that|this)\b)(?P<is>[^?]+?)\s+(?:is|are)\s+(?:now\s+)?(?:done|finished|complete|completed))\s*[.!]*$",
    re.IGNORECASE,
)
# A project named as done: "Atlas", "Atlas Web", "the Atlas project", "project Atlas".
_A_PROJECT = re.compile(
    r"(?:the\s+)?(?:(?P<before>project)\s+)?(?P<name>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)(?(before)|(?:\s+(?P<after>project))?)"
)
# A note's new title: "rename the note Retro to Launch retro", "rename the Retro note to …", "change
# the title of the note Retro to …".
_RENAME_NOTE = re.compile(
    words.POLITELY + r"(?:(?:rename|retitle)\s+(?:the\s+|my\s+)?|(?:change|set)\s+the\s+(?:title|name)\s+of\s+(?:the\s+|my\s+)?)"
    r"(?:note\s+(?P<old>.+?)|(?P<old2>.+?)\s+note)\s+(?:to|as)\s+(?:(?P<new>.+?)|“(?P<new2>.+?)”)[.!?]?$",
    re.IGNORECASE,
)
# Text added at the end of a note: "append to the note Reading list: Dune", "add Dune to my
# Reading list note", "add 'call the caterer' to the note Venue ideas".
_APPEND_TO = re.compile(
    r"^(?:please\s+)?(?:append|add)\s+to\s+(?:the\s+|my\s+)?(?:note\s+(?P<title>[^:]+?)|(?P<title2>[^:]+?)\s+note)\s*:\s*(?P<text>.+?)\s*$",
    re.IGNORECASE | re.DOTALL,
)
_APPEND = re.compile(
    r"^(?:please\s+)?(?:append|add)\s+(?P<text>.+?)\s+to\s+(?:the\s+|my\s+)?(?:note\s+(?P<title>.+?)|(?P<title2>.+?)\s+note)\s*[.!]?$",
    re.IGNORECASE | re.DOTALL,
)
_MARK_DONE = re.compile(rf"^(?:please\s+)?mark\s+(?P<term>.+?)\s+{words.DONE}", re.IGNORECASE)
_DELETE_NAMED = re.compile(rf"{words.POLITELY}(?:delete|remove)\s+(?P<term>[^?]+?)[.!]?$", re.IGNORECASE)
_MOVE_NAMED = re.compile(
    r"^(?i:please\s+)?(?:(?i:move)\s+(?P<term>.+?)\s+(?i:to|into)|(?i:put|file)\s+(?P<term2>.+?)\s+(?i:in|into|under))"
    r"\s+(?i:(?:the\s+)?(?:project\s+)?)(?P<target>[A-Z][\w&.-]*)(?i:\s+project)?[.!]?$"
)
_ONE_TASK = re.compile(r"\b(?:task|to-?do)\b(?!s)", re.IGNORECASE)
# "Reopen the task buy milk", "mark buy milk as not done", "set the design tasks back to to-do":
# completed tasks made to-do again (the undo of completing them).
_NOT_DONE = r"(?:not\s+(?:yet\s+)?(?:done|completed?|finished)|undone|incomplete|uncompleted|to-?do|open)"
_REOPEN = re.compile(
    rf"{words.POLITELY}(?:(?:reopen|re-open|uncomplete|unmark)\s+(?P<what>.+?)"
    rf"|(?:mark|set|put|move|turn)\s+(?P<marked>.+?)\s+(?:as\s+|back\s+(?:to|as|into)\s+|to\s+){_NOT_DONE}(?:\s+again)?)\s*[.!]?$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Target:
    """The tasks a change to named tasks picks: "the task buy milk in Atlas", "the design tasks"."""

    said: str  # as said, without the project
    search: str | None
    project_name: str | None

    @property
    def pointer(self) -> bool:
        """ "it", "that one": only a model could read which task that is."""
        return words.FILLER.sub("", self.said).lower() in words.POINTERS

    def names_none(self, picked: words.Dates) -> bool:
        """ "Reopen the task", "start the task": no task named, so none may be proposed (never every one)."""
        return self.search is None and not picked and not self.project_name and not re.search(words.EVERY, self.said, re.IGNORECASE)


def _target(said: str) -> _Target | None:
    """None when the words said name a note or a project, which these changes do not touch."""
    said = said.strip(" \"'“”")
    # Only "in Atlas" at the end names a project: "for Sam" in "buy a present for Sam" is the title's.
    project_name = (where := words.IN_PROJECT_AT_END.search(said)) and where["name"]
    if where:
        said = said[: where.start()]
    elif adjective := words.PROJECT_ADJECTIVE.search(said):  # "all Harbor tasks": the project's
        project_name = adjective["name"]
    if words.NOTE_OR_PROJECT.search(said):
        return None
    if re.search(r"\b(?:tasks?|to-?dos?)\b", said, re.IGNORECASE):
        search = words.named_task(said) or words.term_before_tasks(said)
    else:
        # "Push everything due today to tomorrow": the day picks the tasks; it is no part of a title.
        search = words.FILLER.sub("", words.DUE_WINDOW.sub("", said)).strip(" \"'“”") or None
    if search and search.lower() in {"everything", "all", "all of them", "completed", "done", "finished"}:
        search = None
    return _Target(said, search, project_name or None)


def _reopen(raw: str) -> Intent | None:
    if not (match := _REOPEN.match(raw)) or (target := _target(match["what"] or match["marked"])) is None:
        return None
    picked = words.picked_by_date(raw)
    if target.pointer or target.names_none(picked):
        return Intent("which_task", search=target.said)
    return Intent("reopen_tasks", status="completed", search=target.search, project_name=target.project_name, **picked)


def write_intent(raw: str) -> Intent | None:
    intent = _write_intent(raw)
    if intent is not None and intent.also_due:
        return Intent("one_window")  # "delete the tasks due today or tomorrow": one change, one window
    return intent


def _write_intent(raw: str) -> Intent | None:
    lower = raw.lower()
    if renamed := _RENAME_NOTE.match(raw):
        old, new = ((renamed[k] or renamed[k + "2"]).strip(" \"'“”") for k in ("old", "new"))
        return Intent("rename_note", search=old, new_title=new[:300]) if old and new else None
    if appended := _APPEND_TO.match(raw) or _APPEND.match(raw):
        title = (appended["title"] or appended["title2"] or "").strip(" \"'“”")
        return Intent("append_note", search=title, content=appended["text"].strip(" \"'“”"))
    if reopened := _reopen(raw):
        return reopened
    if changed := _task_change(raw):
        return changed
    if deleted := _delete_notes(raw):
        return deleted
    if to_project := _project_change(raw):
        return to_project
    if (said := _SAID_DONE.match(raw)) and (named := _A_PROJECT.fullmatch((said["what"] or said["with"] or said["is"]).strip())):
        # "Atlas is done", "the Atlas project is finished": a project's name; a task's if no project has it.
        name = named["name"]
        return Intent("finish_project", project_name=name, search=None if named["before"] or named["after"] else name)
    if said and (target := _target(said["what"] or said["with"] or said["is"])) and target.search and not target.pointer:
        return Intent("complete_tasks", search=target.search, project_name=target.project_name)
    if match := _ERRAND.match(raw):
        errand = (match["todo"] or match["item"] or match["event"] or match["added"]).strip(" \"'“”")
        if match["event"]:  # "schedule a call for Friday": what is scheduled for a day is on that day
            errand = re.sub(r"\s+for\s+(?=\S+$)", " on ", errand)
        if match["event"] and not _due_at_end(errand)[1]:
            return None  # "schedule a review for the team": no day, so no errand
        return new_task(errand)
    if listed := _ON_A_NAMED_LIST.match(raw):
        item = listed["item"].strip(" \"'“”")
        return Intent("append_note", search=listed["list"], content=item, title=item[:300])
    if unnamed := re.fullmatch(r"(?:please\s+)?(?:create|add|make|new)\s+(?:a\s+|an\s+)?(?:new\s+)?(task|note|to-?do)\s*[.!?]*", raw, re.I):
        return Intent("name_needed", search="note" if unnamed[1].lower() == "note" else "task")
    if match := _CREATE.match(raw):
        title, project = match["title"].strip(" \"'“”"), match["project"]
        if _CREATE_IN_PROJECT.fullmatch(f" {title}"):  # "add a task to Harbor": where, but no name
            return Intent("name_needed", search="note" if match["kind"].lower() == "note" else "task")
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
    # "Delete everything due today" is about tasks too: only tasks are due.
    mentions_tasks = bool(re.search(r"\btasks?\b|\bto-?dos?\b|\b(?:everything|all)\b(?=.*\bdue\b)", lower))
    if not mentions_tasks:
        return _mark_done(raw) or _move_named(raw) or _delete_named(raw)
    move = _MOVE.search(raw)
    project_name = None if move else words.project_name(raw)
    if move:
        search = words.term_before_tasks(move["what"]) or words.search_term(raw, None) or words.named_task(move["what"])
    else:
        # "due on Dec 5", "due Friday", "with no due date" pick by date: they are no title to search for
        plain = words.UNDATED.sub("", words.DUE_WINDOW.sub("", words.DUE_DATE.sub("", raw)))
        search = words.search_term(plain, project_name) or words.term_before_tasks(plain) or words.named_task(plain)
    if search is None and _ONE_TASK.search(raw) and not re.search(r"\b(?:all|every|each)\b", lower):
        return None  # "delete the task" names no task: never propose every one of them
    # Which tasks, as a listing would pick them: "delete the tasks due today", "complete all the
    # urgent tasks", "delete the tasks I added yesterday" touch those tasks and no others.
    picked = words.picked_by_date(raw)
    if move:
        return Intent(
            "move_tasks", status=words.status(lower), target_project=move["target"], priority=words.priority(lower), search=search, **picked
        )
    if _DELETE.search(raw):
        return Intent(
            "delete_tasks", status=words.status(lower), project_name=project_name, priority=words.priority(lower), search=search, **picked
        )
    if _COMPLETE.search(raw):
        return Intent("complete_tasks", status="all", project_name=project_name, priority=words.priority(lower), search=search, **picked)
    return None


def new_task(said: str) -> Intent:
    """A task said as an errand ("call Bob tomorrow"): its title, and the day at its end it is due."""
    title, due = _due_at_end(said.strip(" \"'“”"))
    return Intent("create_task", title=title[:300], **due)


def _due_at_end(title: str) -> tuple[str, words.Dates]:
    """A new task's title without the day it is due, and that day as Intent fields: a due window
    ("tomorrow", "friday") or a date ("due on Dec 5")."""
    if (dated := words.DATE_AT_END.search(title)) and dated.start() > 0 and (due_on := words.due_date(title, pattern=words.DATE_AT_END)):
        return title[: dated.start()].strip(" \"'“”,"), {"due_on": due_on}
    match = _DUE_AT_END.search(title)
    if match is None or match.start() == 0:
        return title, {}
    day = (match["day"] or match["weekday"]).lower()
    return title[: match.start()].strip(" \"'“”,"), {"due": words.AGENDA_DAYS.get(re.sub(r"\s+", " ", day), day)}


def _mark_done(raw: str) -> Intent | None:
    """ "Mark buy milk as done", "mark everything in Atlas as done"; not "mark it as done", whose
    "it" only a model could read."""
    if not (match := _MARK_DONE.match(raw)):
        return None
    project_name = words.project_name(raw)
    term = words.FILLER.sub("", words.DUE_WINDOW.sub("", match["term"]).strip(" \"'“”"))
    if project_name:
        term = re.sub(rf"\s*\b(?:in|from|under)\s+(?:the\s+)?(?:project\s+)?{re.escape(project_name)}(?:\s+project)?$", "", term)
    if term.lower() in {"everything", "all", "all of them", "every one", ""}:
        return Intent("complete_tasks", project_name=project_name, **words.picked_by_date(match["term"]))
    if term.lower() in words.POINTERS or words.NOTE_OR_PROJECT.search(term):
        return None  # a note or a project is not marked done
    return Intent("complete_tasks", search=term, project_name=project_name)


def _delete_named(raw: str) -> Intent | None:
    """ "Delete buy milk": one task named without the word "task". Not "delete it" (only a model
    could read "it"), nor everything, nor a note, a project or a part of Clarion itself."""
    if not (match := _DELETE_NAMED.match(raw)):
        return None
    if named := _A_PROJECT.fullmatch(match["term"].strip()):  # "delete Atlas": named as projects are
        return Intent("delete_project", project_name=named["name"])
    if re.search(r"\b(?:conversations?|chats?|messages?|accounts?|passwords?|sources?|data)\b", match["term"], re.IGNORECASE):
        return None
    target = _target(match["term"])
    if target is None or target.pointer or not target.search or target.search.lower() in {"everything", "all", "all of them"}:
        return None
    return Intent("delete_tasks", search=target.search, project_name=target.project_name)


def _move_named(raw: str) -> Intent | None:
    """ "Move buy milk to Harbor": one task named without the word "task", to a project named as
    projects are (capitalised). Not "move it to Harbor" (only a model could read "it"), nor a note."""
    if not (match := _MOVE_NAMED.match(raw)):
        return None
    term = words.FILLER.sub("", (match["term"] or match["term2"]).strip(" \"'“”"))
    if term.lower() in words.POINTERS | {"everything", "all"} or words.NOTE_OR_PROJECT.search(term):
        return None
    return Intent("move_tasks", search=term, target_project=match["target"].rstrip("."))


# Changes to named tasks besides completing, reopening and moving them: a new priority ("make buy
# milk urgent"), a new due day ("push the passport task to Friday"), starting one ("start working on
# buy milk") and a new title ("rename the task buy milk to buy oat milk").
_NEW_PRIORITY = r"(?:an?\s+)?(?P<priority>urgent|high|medium|normal|low)(?:[- ]priority)?"
_NEW_DAY = rf"(?P<new_day>(?:the\s+)?(?:(?P<when>today|tonight|tomorrow|next\s+week|this\s+weekend|weekend|(?:(?:next|this)\s+)?(?:{'|'.join(WEEKDAYS)}))\b|{words.DATE}))"
_CHANGE_END = r"\s*[.!?]?$"  # "can you make buy milk urgent?" asks for the change
_TASK_CHANGES = [
    re.compile(rf"{words.POLITELY}(?:set|change|raise|lower|bump|make)\s+(?:the\s+)?priority\s+(?:of|on|for)\s+(?P<what>.+?)\s+(?:to\s+)?{_NEW_PRIORITY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{words.POLITELY}(?:change|set|move|push|update)\s+(?:the\s+)?(?:due\s+date|deadline)\s+(?:of|on|for)\s+(?P<what>.+?)\s+to\s+{_NEW_DAY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{words.POLITELY}(?:make|set|mark|bump|raise|lower|change|put|turn)\s+(?P<what>.+?)\s+(?:(?:up\s+|down\s+)?to\s+|as\s+|at\s+)?{_NEW_PRIORITY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{words.POLITELY}(?P<lower>de-?)?prioriti[sz]e\s+(?P<what>.+?){_CHANGE_END}", re.IGNORECASE),
    re.compile(
        rf"{words.POLITELY}(?:move|push|postpone|reschedule|defer|delay|bump|change|set|make)\s+(?P<what>.+?)\s+"
        rf"(?:(?:back\s+|out\s+)?to|until|till|for|due(?:\s+on|\s+by)?)\s+{_NEW_DAY}{_CHANGE_END}",
        re.IGNORECASE,
    ),
    re.compile(rf"{words.POLITELY}give\s+(?P<what>.+?)\s+a\s+(?:due\s+date|deadline)\s+(?:of\s+|on\s+)?{_NEW_DAY}{_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{words.POLITELY}(?P<start>start|begin)\s+(?:working\s+on\s+|work\s+on\s+|on\s+|with\s+)?(?!(?:a|an|new|over|again|today|(?:the|my)\s+(?:day|week))\b)(?P<what>.+?){_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{words.POLITELY}(?:mark|set|move|put|turn)\s+(?P<what>.+?)\s+(?:as\s+|to\s+|into\s+)?(?P<start>in[- ]progress|started){_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{words.POLITELY}(?:rename|retitle)\s+(?P<what>.+?)\s+(?:to|as)\s+(?P<title>.+?){_CHANGE_END}", re.IGNORECASE),
    re.compile(rf"{words.POLITELY}(?:change|set)\s+(?:the\s+)?(?:title|name)\s+of\s+(?P<what>.+?)\s+to\s+(?P<title>.+?){_CHANGE_END}", re.IGNORECASE),
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
    picked = words.picked_by_date(target.said)  # "make the tasks due today urgent"; not the new day
    if target.pointer or target.names_none(picked):
        return Intent("which_task", search=target.said)
    if groups.get("title"):
        if target.search is None:
            return Intent("which_task", search=target.said)  # a new title is for one task, named
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
    elif due_on := words.due_date(match["new_day"], pattern=words.A_DATE):
        change = {"new_due_on": due_on}
    else:
        return Intent("no_such_date", search=match["new_day"])
    # What is changed is still to do; a new title may go to a finished task too.
    status = "all" if "new_title" in change else "open"
    return Intent("update_tasks", status=status, search=target.search, project_name=target.project_name, **picked, **change)


# "Delete the note Venue ideas", "remove my notes about the landlord", "delete the notes in Atlas".
_DELETE_NOTES = re.compile(rf"{words.POLITELY}(?:{words.DELETE_WORDS})\s+(?P<what>(?:.+?\s+)?notes?\b.*?){_CHANGE_END}", re.IGNORECASE)
# "Move the note Venue ideas to Harbor": to a project named as projects are (capitalised).
_MOVE_NOTES = re.compile(
    rf"{words.POLITELY}(?i:move|put|file)\s+(?P<what>(?:.+?\s+)?(?i:notes?)\b.*?)\s+(?i:(?:in)?to\s+(?:the\s+)?(?:project\s+)?)"
    r"(?P<target>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)(?i:\s+project)?\s*[.!?]?$"
)


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
    if where := words.IN_PROJECT_AT_END.search(what):
        what, project_name = what[: where.start()], where["name"]
    if re.fullmatch(r"(?:this|that|these|those)\s+notes?|it|them", what, re.IGNORECASE):
        return Intent("which_task", search=what)  # which note "this note" is, only a model could read
    if re.search(r"\b(?:tasks?|to-?dos?)\b", what, re.IGNORECASE):
        return None  # "delete the task about notes" is about a task
    changed = None
    if when := words.NOTES_WHEN.search(what):  # "the notes I wrote yesterday": picked by when, not a title
        changed, title = words.PAST_WINDOWS[when["when"].lower()], None
    else:
        title = words.note_title(what)
    search = title or words.search_term(what, project_name)
    if search and re.fullmatch(r"(?:all|every|everything|all of them)", search, re.IGNORECASE):
        search = None
    if search is None and not project_name and not changed and not re.search(rf"{words.EVERY}|^my\s+notes$", what, re.IGNORECASE):
        return Intent("which_task", search=what)  # "delete the note" names none: never propose every one
    return Intent(kind, search=search, project_name=project_name, changed=changed, target_project=target_project)


# Changes to a project, named as people name projects: "create a project called Garden", "archive
# Atlas", "rename the Atlas project to Atlas 2", "delete the Harbor project".
_NAMED_PROJECT = r"(?:the\s+)?(?:project\s+(?P<name>.+?)|(?P<name2>.+?)\s+project)"
_NEW_PROJECT = re.compile(
    rf"{words.POLITELY}(?:create|add|make|start|set\s+up|open|new)\s+(?:a\s+|an\s+)?(?:new\s+)?project\b\s*(?:called|named|titled|for|:|-)?\s*(?P<name>.*?){_CHANGE_END}",
    re.IGNORECASE,
)
_ARCHIVE_PROJECT = re.compile(
    rf"{words.POLITELY}(?P<verb>archive|unarchive|un-archive)\s+(?:the\s+)?(?:project\s+)?(?P<name>.+?)(?:\s+project)?{_CHANGE_END}",
    re.IGNORECASE,
)
_RENAME_PROJECT = re.compile(
    rf"{words.POLITELY}(?:rename|retitle)\s+{_NAMED_PROJECT}\s+(?:to|as)\s+(?P<new>.+?){_CHANGE_END}", re.IGNORECASE
)
_DELETE_PROJECT = re.compile(rf"{words.POLITELY}(?:{words.DELETE_WORDS})\s+{_NAMED_PROJECT}{_CHANGE_END}", re.IGNORECASE)


def _project_change(raw: str) -> Intent | None:
    def name(match: re.Match[str], group: str = "name") -> str:
        return (match[group] or "").strip(" \"'“”")

    if created := _NEW_PROJECT.match(raw):
        title = re.sub(r"^(?:the|a|an|my)\s+", "", name(created), flags=re.IGNORECASE)  # "a project for the garden": "garden"
        return Intent("create_project", title=title[:200]) if title else Intent("name_needed", search="project")
    archived = _ARCHIVE_PROJECT.match(raw)
    renamed = _RENAME_PROJECT.match(raw)
    deleted = _DELETE_PROJECT.match(raw)
    match = archived or renamed or deleted
    if match is None:
        return None
    project = name(match) or name(match, "name2")
    if words.FILLER.sub("", project).lower() in words.POINTERS or re.search(
        rf"{words.EVERY}|\b(?:my|projects|tasks?|notes?)\b", project, re.I
    ):
        return None  # "archive it", "delete all my projects": refused in words
    if archived:
        return Intent("update_project", project_name=project, new_archived=archived["verb"].lower() == "archive")
    if renamed:
        return Intent("update_project", project_name=project, new_title=name(renamed, "new")[:200])
    return Intent("delete_project", project_name=project)
