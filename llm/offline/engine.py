"""The offline engine: an LLMClient that needs no model and no network.

It reads the conversation the way a model would — the last user message and the tool results
that followed it — and answers with the same tool calls a model would make, then phrases the
results. Stateless and deterministic: the same conversation always produces the same reply.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, replace
from typing import AsyncIterator

from llm.budget import CallBudget
from llm.errors import LLMError
from llm.offline import phrasing, words
from llm.offline.intents import Intent, asks_how_clarion_works, parse
from llm.types import ChatMessage, Completion, StreamDone, T, TextDelta, ToolCall, ToolSpec, Usage

MODEL_NAME = "clarion-offline"


@dataclass(frozen=True)
class _Step:
    name: str
    arguments: dict
    result: dict


class OfflineEngine:
    name = "Offline engine"
    is_offline = True

    def __init__(self, *, stream_delay: float = 0.0) -> None:
        # A small pause between streamed words makes the reply read like a model's; 0 in tests.
        self.stream_delay = stream_delay

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSpec] | None = None,
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> Completion:
        started = time.perf_counter()
        content, tool_calls = self._respond(messages, available={t.name for t in tools or []})
        return Completion(
            content=content,
            tool_calls=tool_calls,
            usage=Usage(),
            model=MODEL_NAME,
            finish_reason="tool_calls" if tool_calls else "stop",
            seconds=time.perf_counter() - started,
        )

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSpec] | None = None,
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> AsyncIterator[TextDelta | StreamDone]:
        completion = await self.complete(messages, tools=tools, timeout=timeout)
        for chunk in _chunks(completion.content):
            yield TextDelta(text=chunk)
            if self.stream_delay:
                await asyncio.sleep(self.stream_delay)
        yield StreamDone(completion=completion)

    async def structured(
        self, messages: list[ChatMessage], *, schema: type[T], timeout: float | None = None, budget: CallBudget | None = None
    ) -> T:
        raise LLMError("bad_request", f"The offline engine cannot produce a {schema.__name__}.", retryable=False)

    # --- the rules -------------------------------------------------------------------------

    def _respond(self, messages: list[ChatMessage], *, available: set[str]) -> tuple[str, list[ToolCall]]:
        request, steps = _current_request(messages)
        intent = parse(request)
        action = _next_action(intent, steps)
        if isinstance(action, str):
            return action, []
        wanted = action if isinstance(action, list) else [action]  # a list: looked up together, as a model may
        if any(name not in available for name, _ in wanted):
            return phrasing.CAPABILITIES, []
        calls = [
            ToolCall(id=f"offline-{len(messages)}-{i}-{name}", name=name, arguments=json.dumps(arguments))
            for i, (name, arguments) in enumerate(wanted)
        ]
        return "", calls


def _current_request(messages: list[ChatMessage]) -> tuple[str, list[_Step]]:
    """The last user message, and the tool calls made (with their results) since it."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last_user is None:
        return "", []
    results = {m.tool_call_id: m.content for m in messages[last_user:] if m.role == "tool"}
    steps: list[_Step] = []
    for message in messages[last_user + 1 :]:
        for call in message.tool_calls if message.role == "assistant" else []:
            steps.append(_Step(call.name, _loads(call.arguments), _loads(results.get(call.id) or "{}")))
    return messages[last_user].content or "", steps


Call = tuple[str, dict]  # a tool's name and its arguments

# What "how am I doing?" looks up, in the order phrasing.overview_answer takes the results: the
# open tasks (counted), the overdue ones, those due in the next seven days, and those completed in
# the last seven (counted).
OVERVIEW_QUERIES = (
    ({"status": "open"}, 1),
    ({"status": "open", "due": "overdue"}, 10),
    ({"status": "open", "due": "next_7_days"}, 10),
    ({"status": "completed", "completed": "last_7_days"}, 1),
)
# What "what should I focus on?" looks up: the open tasks that are overdue, due today or urgent.
FOCUS_QUERIES = (
    {"status": "open", "due": "overdue"},
    {"status": "open", "due": "today"},
    {"status": "open", "priority_at_least": "urgent"},
)
FOCUS_LIMIT = 20
FIND_LIMIT = 10  # of each: tasks, notes
WORKSPACE_FALLBACK_LIMIT = 5  # tasks and notes shown when the knowledge base has no answer
WRITE_KINDS = {
    "delete_tasks", "complete_tasks", "reopen_tasks", "move_tasks", "update_tasks", "create_task", "create_note", "delete_notes",
    "move_notes", "create_project", "update_project", "delete_project", "finish_project",
    "append_note", "rename_note",
}  # fmt: skip
BULK_LIMIT = 500
NOTES_LIMIT = 200  # the most query_notes lists at once
SUMMARY_LIMIT = 300


def _next_action(intent: Intent, steps: list[_Step]) -> str | Call | list[Call]:
    if failed := [s for s in steps if "error" in s.result and "status" not in s.result]:
        return phrasing.tool_failed(failed[0].result["error"])
    if intent.kind in WRITE_KINDS:
        return _write_action(intent, steps)
    if intent.kind == "help":
        return phrasing.CAPABILITIES
    if intent.kind == "cannot":
        return phrasing.CANNOT_CHANGE
    if intent.kind == "name_needed":
        return phrasing.name_needed(intent.search or "task")
    if intent.kind == "thanks":
        return phrasing.THANKS
    if intent.kind == "misread":
        return phrasing.MISREAD
    if intent.kind in ("today", "time"):
        if not steps:
            return "query_tasks", {"due": "today", "limit": 1}  # its result says the person's date and zone
        return phrasing.today_answer(steps[-1].result, with_time=intent.kind == "time")
    if intent.kind == "open_range":
        return phrasing.OPEN_RANGE
    if intent.kind == "one_window":
        return phrasing.ONE_WINDOW_AT_A_TIME
    if intent.kind == "no_such_date":
        return phrasing.no_such_date(intent.search or "")
    if intent.kind == "which_task":
        return phrasing.which_task(intent.search or "it")
    if intent.kind == "knowledge":
        if not steps:
            return "search_knowledge_base", {"question": intent.search}
        answered = steps[0].result.get("should_reply")
        # What the documentation does not say may be in the person's tasks or notes ("did I call
        # the landlord?", "what did Bob say about the budget?"), even when some page came close; not
        # a question about how Clarion works that the documentation came close to ("how do I
        # export my data?"), whose closest pages are the answer.
        about_clarion = bool(steps[0].result.get("closest_pages")) and asks_how_clarion_works(intent.search or "")
        if answered or about_clarion:
            return phrasing.knowledge_answer(steps[0].result)
        # The tasks and notes are searched for the question's words, and once more without the
        # commonest of them when nothing has them all.
        searched = steps[-1].arguments.get("search_term") if len(steps) > 1 else None
        if searched and (steps[-2].result.get("tasks") or steps[-1].result.get("notes")):
            return phrasing.workspace_instead(steps[-2].result, steps[-1].result, search=searched)
        if searched is None:
            wanted = words.key_words(intent.search or "")
        elif len(steps) == 3:
            wanted = words.narrower(searched, question=intent.search or "")
        else:
            wanted = None  # searched twice
        if wanted:
            return [
                ("query_tasks", {"search": wanted, "limit": WORKSPACE_FALLBACK_LIMIT}),
                ("query_notes", {"search_term": wanted, "limit": WORKSPACE_FALLBACK_LIMIT}),
            ]
        return phrasing.knowledge_answer(steps[0].result)
    if intent.kind == "overview":
        if not steps:
            return [("query_tasks", {**filters, "limit": limit}) for filters, limit in OVERVIEW_QUERIES]
        return phrasing.overview_answer(*(step.result for step in steps))
    if intent.kind == "find":
        return _find(intent.search or "", steps)
    if intent.kind == "projects":
        if not steps:
            return "query_projects", {"include_stats": True}
        return phrasing.projects_answer(steps[-1].result, archived_only=intent.archived)

    project_id = None
    if intent.project_name:
        if not steps:
            return "query_projects", {"include_stats": intent.kind in ("project_status", "maybe_project")}
        projects = steps[0].result.get("projects", [])
        project = _match_project(intent.project_name, projects, exact=intent.kind == "maybe_project")
        if project is None and intent.kind == "maybe_project":  # a word that names no project: looked up everywhere
            return _find(intent.project_name, steps[1:])
        if project is None:
            return phrasing.project_not_found(intent.project_name, projects)
        project_id = project["id"]
        steps = steps[1:]
        if intent.kind in ("project_status", "maybe_project"):
            if not steps:
                return "query_tasks", {"status": "open", "project_id": project_id, "limit": 50}
            return phrasing.project_status_answer(project, steps[-1].result)
    project_name = _display_name(intent, project_id, steps)

    if intent.kind == "focus":
        if not steps:
            return [
                ("query_tasks", _without_none({**filters, "project_id": project_id, "limit": FOCUS_LIMIT})) for filters in FOCUS_QUERIES
            ]
        return phrasing.focus_answer(*(step.result for step in steps), project_name=project_name)
    if intent.kind in ("notes", "count_notes"):
        if not steps:
            # A count needs the total alone; "my latest note" the newest one.
            limit = 1 if intent.kind == "count_notes" or intent.newest else 20
            return "query_notes", _without_none(
                {"search_term": intent.search, "project_id": project_id, "changed": intent.changed, "limit": limit}
            )
        if intent.kind == "count_notes":
            return phrasing.note_count_answer(steps[-1].result, project_name=project_name, search=intent.search)
        if intent.newest:
            return phrasing.newest_note_answer(steps[-1].result, project_name=project_name, search=intent.search)
        return phrasing.notes_answer(steps[-1].result, project_name=project_name, search=intent.search)
    if intent.kind == "count_tasks":
        if not steps:
            return _task_queries(intent, project_id=project_id, limit=1)
        return "\n\n".join(phrasing.count_answer(step.result, project_name=project_name) for step in steps)
    if not steps:
        return _task_queries(intent, project_id=project_id, limit=1 if intent.newest or intent.oldest else 50)
    if intent.newest or intent.oldest:
        return phrasing.task_at_end_answer(steps[-1].result, oldest=intent.oldest, project_name=project_name)
    if intent.kind == "cleanup":
        return phrasing.cleanup_answer(steps[-1].result, project_name=project_name)
    # A title says it its own way ("Renew passport" for "passport renewal"): when no title has the
    # words as asked, once more with the rarest of them, in a shorter form.
    if intent.search and steps[-1].arguments.get("search") != intent.search:
        return phrasing.tasks_answer(
            steps[-1].result, project_name=project_name, search=steps[-1].arguments["search"], instead_of=intent.search
        )
    if intent.search and len(steps) == 1 and not steps[0].result.get("tasks") and (word := words.title_word(intent.search)):
        return "query_tasks", {**steps[0].arguments, "search": word}
    return "\n\n".join(phrasing.tasks_answer(step.result, project_name=project_name, search=intent.search) for step in steps)


def _task_queries(intent: Intent, *, project_id: int | None, limit: int) -> Call | list[Call]:
    """The listing's query; with a second due window ("due today or tomorrow"), one per window."""
    filters = _without_none({**_task_filters(intent), "project_id": project_id, "limit": limit})
    if not intent.also_due:
        return "query_tasks", filters
    return [("query_tasks", filters), ("query_tasks", {**filters, "due": intent.also_due})]


def _find(search: str, steps: list[_Step]) -> str | list[Call]:
    if not steps:
        return [("query_tasks", {"search": search, "limit": FIND_LIMIT}), ("query_notes", {"search_term": search, "limit": FIND_LIMIT})]
    return phrasing.find_answer(steps[0].result, steps[1].result, search=search)


def _write_action(intent: Intent, steps: list[_Step]) -> str | Call:
    """Writes are proposed, never applied: the person confirms the whole list first."""
    if intent.kind == "finish_project":
        return _finish_project(intent, steps)
    if intent.kind in ("append_note", "rename_note"):
        return _note_change(intent, steps)
    project_id = target_id = None
    if intent.project_name or intent.target_project:
        if not steps:
            return "query_projects", {"include_stats": False}
        projects = steps[0].result.get("projects", [])
        matched: dict[str, dict] = {}
        for name in filter(None, [intent.project_name, intent.target_project]):
            match = _match_project(name, projects)
            if match is None:
                return phrasing.project_not_found(name, projects)
            matched[name] = match
        project_id = intent.project_name and matched[intent.project_name]["id"]
        target_id = intent.target_project and matched[intent.target_project]["id"]
        steps = steps[1:]

    if intent.kind in ("create_task", "create_note"):
        op: dict = {"op": intent.kind, "title": intent.title}
        when = ""
        if intent.due:
            # Which date "tomorrow" or "Friday" is in the person's calendar: the query tool says,
            # with the tasks already due then.
            if not steps:
                return "query_tasks", {"status": "open", "due": intent.due, "limit": 1}
            op["due_date"], when = steps[0].result.get("due_from"), phrasing.due_day(steps[0].result)
            steps = steps[1:]
        elif intent.due_on:  # a date needs no calendar to read it
            op["due_date"], when = intent.due_on, f", {phrasing.due_words(due_on=intent.due_on)}"
        if not steps:
            if project_id:
                op["project_id"] = project_id
            if intent.content:
                op["content"] = intent.content
            noun = "task" if intent.kind == "create_task" else "note"
            return _propose(f"Create the {noun} “{intent.title}”{when}", [op])
        return phrasing.operations_outcome(steps[-1].result)

    if intent.kind in ("delete_notes", "move_notes"):
        return _notes_change(intent, steps, project_id=project_id or None, target_id=target_id or None)
    if intent.kind in ("update_project", "delete_project"):
        return _project_change(intent, matched[str(intent.project_name)], steps)
    if intent.kind == "create_project":
        return _create_project(intent, steps)
    changes: dict = {}
    if intent.kind == "update_tasks":
        changes = _without_none({"title": intent.new_title, "priority": intent.new_priority, "status": intent.new_status})
        if intent.new_due:  # which date "Friday" is in the person's calendar: the query tool says
            if not steps:
                return "query_tasks", {"status": "open", "due": intent.new_due, "limit": 1}
            changes["due_date"] = steps[0].result.get("due_from")
            steps = steps[1:]
        elif intent.new_due_on:
            changes["due_date"] = intent.new_due_on
    if not steps:
        return "query_tasks", _without_none({**_task_filters(intent), "project_id": project_id, "limit": BULK_LIMIT})
    found = steps[0].result
    if len(steps) > 1:
        return phrasing.operations_outcome(steps[-1].result, more=found.get("more", 0))
    tasks = found.get("tasks", [])
    if intent.kind == "complete_tasks":
        tasks = [t for t in tasks if t["status"] != "completed"]
    if intent.kind == "move_tasks":
        tasks = [t for t in tasks if (t.get("project") or {}).get("id") != target_id]
    if intent.kind == "update_tasks":
        named = _exactly_named(tasks, intent.search)
        tasks = [t for t in named if any(t.get(field) != value for field, value in changes.items())]
        if named and not tasks:
            return phrasing.already_so(changes, named)
        if "title" in changes and len(tasks) > 1:
            return phrasing.which_of(tasks, search=intent.search or "")
    action = {"delete_tasks": "delete", "complete_tasks": "complete", "reopen_tasks": "reopen", "move_tasks": "move"}.get(
        intent.kind, "rename" if "title" in changes else "change"
    )
    if not tasks:
        return phrasing.nothing_to_change(action, noun=_picked_noun(intent), search=intent.search, project_name=intent.project_name)
    if intent.kind == "delete_tasks":
        ops = [{"op": "delete_task", "task_id": t["id"]} for t in tasks]
    elif intent.kind == "complete_tasks":
        ops = [{"op": "complete_task", "task_id": t["id"]} for t in tasks]
    elif intent.kind == "reopen_tasks":
        ops = [{"op": "update_task", "task_id": t["id"], "status": "todo"} for t in tasks]
    elif intent.kind == "update_tasks":
        ops = [{"op": "update_task", "task_id": t["id"], **changes} for t in tasks]
    else:
        ops = [{"op": "move_task", "task_id": t["id"], "project_id": target_id} for t in tasks]
    what = f"{len(ops)} {_picked_noun(intent, count=len(ops))}"
    scope = phrasing.scope(intent.project_name, intent.search)
    summary = {
        "delete_tasks": f"Delete {what}{scope}",
        "complete_tasks": f"Mark {what}{scope} completed",
        "reopen_tasks": f"Reopen {what}{scope} as to do",
        "move_tasks": f"Move {what}{scope} to {intent.target_project}",
        "update_tasks": phrasing.change_summary(changes, what=f"{what}{scope}", titles=[t["title"] for t in tasks]),
    }[intent.kind]
    return _propose(summary, ops)


def _notes_change(intent: Intent, steps: list[_Step], *, project_id: int | None, target_id: int | None) -> str | Call:
    if not steps:
        filters = {"search_term": intent.search, "project_id": project_id, "changed": intent.changed, "limit": NOTES_LIMIT}
        return "query_notes", _without_none(filters)
    if len(steps) > 1:
        return phrasing.operations_outcome(steps[-1].result, more=steps[0].result.get("more", 0))
    notes = steps[0].result.get("notes", [])
    notes = _exactly_named(notes, intent.search)
    where = phrasing.scope(intent.project_name, intent.search) + phrasing.changed_words(steps[0].result)
    if intent.kind == "move_notes":
        notes = [n for n in notes if (n.get("project") or {}).get("id") != target_id]
    verb = "delete" if intent.kind == "delete_notes" else f"move to {intent.target_project}"
    if not notes:
        return f"You have no notes{where} to {verb}, so there is nothing to change."
    what = f"{len(notes)} note{'s' if len(notes) != 1 else ''}{where}"
    if intent.kind == "move_notes":
        return _propose(
            f"Move {what} to {intent.target_project}", [{"op": "move_note", "note_id": n["id"], "project_id": target_id} for n in notes]
        )
    return _propose(f"Delete {what}", [{"op": "delete_note", "note_id": n["id"]} for n in notes])


def _project_change(intent: Intent, project: dict, steps: list[_Step]) -> str | Call:
    if steps:
        return phrasing.operations_outcome(steps[-1].result)
    name = f"**{project['name']}**"
    if intent.kind == "delete_project":
        return _propose(f"Delete the project “{project['name']}”", [{"op": "delete_project", "project_id": project["id"]}])
    if intent.new_title:
        if intent.new_title == project["name"]:
            return f"The project is already called {name}, so there is nothing to change."
        return _propose(
            f"Rename the project “{project['name']}” to “{intent.new_title}”",
            [{"op": "update_project", "project_id": project["id"], "name": intent.new_title}],
        )
    if project.get("archived") == intent.new_archived:
        return f"{name} is {'already' if intent.new_archived else 'not'} archived, so there is nothing to change."
    verb = "Archive" if intent.new_archived else "Unarchive"
    return _propose(
        f"{verb} the project “{project['name']}”", [{"op": "update_project", "project_id": project["id"], "archived": intent.new_archived}]
    )


def _finish_project(intent: Intent, steps: list[_Step]) -> str | Call:
    """ "Atlas is done": its open tasks completed and the project archived, on one card (either
    part can be left out there). A name that is no project's is a task's: "Groceries is done"."""
    if not steps:
        return "query_projects", {"include_stats": False}
    project = _match_project(str(intent.project_name), steps[0].result.get("projects", []), exact=True)
    if project is None:
        if intent.search:
            return _write_action(replace(intent, kind="complete_tasks", project_name=None), steps[1:])
        return phrasing.project_not_found(str(intent.project_name), steps[0].result.get("projects", []))
    steps = steps[1:]
    if not steps:
        return "query_tasks", {"status": "open", "project_id": project["id"], "limit": BULK_LIMIT}
    if len(steps) > 1:
        return phrasing.operations_outcome(steps[-1].result, more=steps[0].result.get("more", 0))
    ops = [{"op": "complete_task", "task_id": t["id"]} for t in steps[0].result.get("tasks", [])]
    name = project["name"]
    completing = f"Mark the {len(ops)} open task{'s' if len(ops) != 1 else ''} in “{name}” completed"
    if project.get("archived"):
        return _propose(completing, ops) if ops else f"**{name}** is archived and has no open tasks, so there is nothing to change."
    archive = {"op": "update_project", "project_id": project["id"], "archived": True}
    if not ops:
        return _propose(f"Archive the project “{name}” (it has no open tasks)", [archive])
    return _propose(f"{completing} and archive the project", [*ops, archive])


def _note_change(intent: Intent, steps: list[_Step]) -> str | Call:
    """ "Add Dune to my Reading list note" (text at the end of it), "rename the note Retro to
    Launch retro": a change to one note, named. "Add milk to my shopping list" with no note of
    that title is a new task, as on a to-do list."""
    if not steps:
        return "query_notes", {"search_term": intent.search, "limit": NOTES_LIMIT}
    if len(steps) > 1:
        return phrasing.operations_outcome(steps[-1].result)
    found = steps[0].result.get("notes", [])
    notes = _exactly_named(found, intent.search)
    if intent.kind == "append_note" and intent.title and notes is found:
        return _write_action(replace(intent, kind="create_task", search=None, content=""), [])
    if len(notes) != 1:
        return phrasing.which_note(notes, search=intent.search or "")
    note = notes[0]
    if intent.kind == "rename_note":
        if note["title"] == intent.new_title:
            return f"The note is already called **{note['title']}**, so there is nothing to change."
        return _propose(
            f"Rename the note “{note['title']}” to “{intent.new_title}”",
            [{"op": "update_note", "note_id": note["id"], "title": intent.new_title}],
        )
    return _propose(
        f"Add “{intent.content}” to the end of the note “{note['title']}”",
        [{"op": "update_note", "note_id": note["id"], "append": intent.content}],
    )


def _create_project(intent: Intent, steps: list[_Step]) -> str | Call:
    if not steps:
        return "query_projects", {"include_stats": False}  # a project of that name already?
    if len(steps) > 1:
        return phrasing.operations_outcome(steps[-1].result)
    if same := _match_project(str(intent.title), steps[0].result.get("projects", []), exact=True):
        return f"You already have a project called **{same['name']}**, so nothing was created."
    return _propose(f"Create the project “{intent.title}”", [{"op": "create_project", "name": intent.title}])


def _exactly_named(rows: list[dict], search: str | None) -> list[dict]:
    """ "Rename buy milk", "delete the note Venue ideas": the row of that very title when there is
    one, not every row whose title or text contains it."""
    exact = [r for r in rows if search and r["title"].casefold() == search.casefold()]
    return exact or rows


def _propose(summary: str, operations: list[dict]) -> Call:
    # The card's headline holds 300 characters; a long title in it is cut, the operations keep it whole.
    return "propose_operations", {
        "summary": summary if len(summary) <= SUMMARY_LIMIT else summary[: SUMMARY_LIMIT - 1] + "…",
        "operations": operations,
    }


def _picked_noun(intent: Intent, *, count: int = 2) -> str:
    """ "completed tasks", "tasks due today", "urgent task": the tasks a change picks, in words."""
    noun = phrasing.task_noun(_task_filters(intent))
    return noun if count != 1 else re.sub(r"\btasks\b", "task", noun)


def _task_filters(intent: Intent) -> dict:
    """The query_tasks filters an intent names (None: not named)."""
    return {
        "status": intent.status,
        "search": intent.search,
        "due": intent.due,
        "due_on": intent.due_on,
        "completed": intent.completed,
        "added": intent.added,
        "no_due_date": intent.undated or None,
        "no_project": intent.unfiled or None,
        "priority_at_least": intent.priority,
        "oldest_first": intent.oldest or None,
    }


def _match_project(name: str, projects: list[dict], *, exact: bool = False) -> dict | None:
    wanted = name.lower()
    predicates = [lambda p: p["name"].lower() == wanted] + ([] if exact else [lambda p: wanted in p["name"].lower()])
    for predicate in predicates:
        matches = [p for p in projects if predicate(p)]
        if matches:
            return matches[0]
    return None


def _display_name(intent: Intent, project_id: int | None, steps: list[_Step]) -> str | None:
    return intent.project_name if project_id is not None else None


def _without_none(arguments: dict) -> dict:
    return {k: v for k, v in arguments.items() if v is not None}


def _loads(text: str) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {"error": "the tool returned something that is not JSON"}
    return value if isinstance(value, dict) else {"value": value}


def _chunks(text: str) -> list[str]:
    # Word-sized pieces, keeping the whitespace, so the streamed text reassembles exactly.
    pieces, current = [], ""
    for char in text:
        current += char
        if char in " \n":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces
