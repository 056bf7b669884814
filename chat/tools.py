"""The tool registry: what the model may call, with pydantic-validated arguments.

The acting user is injected here by the app, never an argument the model sees or controls. A
bad call (unknown tool, malformed JSON, invalid arguments, a project that isn't the user's)
becomes a tool error the model can read and correct; it never raises out of the turn.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import json
import uuid
import zoneinfo
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal

from channels.db import database_sync_to_async
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from knowledge import services as knowledge
from llm import ToolCall, ToolSpec
from project.text import NUL
from questions import services as questions
from questions.models import QuestionGroup
from questions.schemas import AskUserArgs, OptionSpec, QuestionSpec
from workspace import operations
from workspace import selectors as workspace
from workspace.models import Note, Project, Task

if TYPE_CHECKING:
    from project.users import User

NOTE_CONTENT_CHARS = 2000


class ToolError(Exception):
    """A failure the model should read and may correct."""


class MalformedArguments(ToolError):
    """The call's arguments are not a JSON object at all."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Days up to today in the user's calendar: when tasks were completed or added.
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
PastWindow = Literal["today", "yesterday", "this_week", "last_week", "last_7_days", "this_month", "last_month", Weekday]


class QueryTasksArgs(_Args):
    status: Literal["todo", "in_progress", "completed", "open", "all"] = Field(
        "all",
        description="Filter by status; 'open' for to-do and in-progress together, 'all' for everything. "
        "Newest first; completed tasks alone, the most recently completed first.",
    )
    project_id: int | None = Field(None, description="Only tasks in this project (an id from query_projects).")
    search: str | None = Field(None, max_length=200, description="Case-insensitive text the task title must contain.")
    due: (
        Literal[
            "overdue",
            "today",
            "tomorrow",
            "this_week",
            "next_week",
            "weekend",
            "next_7_days",
            "this_month",
            "next_month",
            Weekday,
        ]
        | None
    ) = Field(
        None,
        description="Only tasks due in this window of the user's calendar (this_week and next_week: Monday to Sunday; weekend: the coming Saturday and Sunday; "
        "this_month and next_month: the whole calendar month; a weekday: the next such day, today included), soonest first; "
        "completed tasks are left out unless status is 'completed'. The result says the user's date today.",
    )
    due_on: dt.date | None = Field(
        None,
        description="Only tasks due on this date (YYYY-MM-DD) of the user's calendar, for a date no window names "
        "(\"due on Dec 5\"); completed tasks are left out unless status is 'completed'.",
    )
    no_due_date: bool = Field(False, description="Only tasks that have no due date; not together with due or due_on.")
    no_project: bool = Field(False, description="Only tasks that are in no project; not together with project_id.")
    completed: PastWindow | None = Field(
        None,
        description="Only tasks completed in this window of the user's calendar (this_week: Monday to today; "
        "last_week: Monday to Sunday; this_month: the 1st to today; a weekday: the last such day, today included), most recently completed first; not together with due, due_on or added.",
    )
    added: PastWindow | None = Field(
        None,
        description="Only tasks added (created) in this window of the user's calendar, the same windows as completed; "
        "newest first; not together with due, due_on or completed.",
    )
    priority_at_least: Literal["medium", "high", "urgent"] | None = Field(
        None, description="Only tasks of this priority or higher ('high': high and urgent)."
    )
    oldest_first: bool = Field(
        False,
        description='List the tasks added longest ago first ("my oldest open task") instead of the newest first; '
        "not together with due, due_on or completed, which have an order of their own.",
    )
    limit: int = Field(100, ge=1, le=500, description="Max results (default 100, max 500).")

    @model_validator(mode="after")
    def _one_date_window(self) -> QueryTasksArgs:
        if sum(window is not None for window in (self.due, self.due_on, self.completed, self.added)) > 1:
            raise ValueError("use one of due, due_on, completed and added at most")
        if self.no_due_date and (self.due is not None or self.due_on is not None):
            raise ValueError("no_due_date lists the tasks without one: not together with due or due_on")
        if self.no_project and self.project_id is not None:
            raise ValueError("no_project lists the tasks in none: not together with project_id")
        if self.oldest_first and (self.due is not None or self.due_on is not None or self.completed is not None):
            raise ValueError("oldest_first orders by when tasks were added: not together with due, due_on or completed")
        return self


class QueryNotesArgs(_Args):
    project_id: int | None = Field(None, description="Only notes in this project (an id from query_projects).")
    search_term: str | None = Field(None, max_length=200, description="Full-text search over title and content.")
    changed: PastWindow | None = Field(
        None,
        description="Only notes added or last edited in this window of days up to today in the user's calendar "
        "(this_week: Monday to today; last_7_days: today and the six days before; a weekday: the last such day, today included). The result says the user's date today.",
    )
    limit: int = Field(50, ge=1, le=200, description="Max results (default 50, max 200). Most recently changed first.")


class QueryProjectsArgs(_Args):
    include_stats: bool = Field(True, description="Include task counts by status and note counts.")


class SearchKnowledgeBaseArgs(_Args):
    question: str = Field(min_length=1, max_length=1000, description="The user's question, self-contained.")


@dataclass(frozen=True)
class ToolContext:
    """What the app injects into every tool call; never visible to or settable by the model."""

    user: User
    conversation_id: uuid.UUID
    tool_call_id: str
    in_reply_to_id: int
    timeouts: questions.QuestionTimeouts
    # The user's IANA time zone (see chat.selectors.TurnContext.time_zone): what "today" means.
    time_zone: str


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    # Called with the context and the parsed `arguments` (Any: each tool takes its own model).
    # Query tools return a dict (the result; an async tool, its coroutine); asking tools return
    # the QuestionGroup that now waits for the person — its answers become the result, later.
    run: Callable[[ToolContext, Any], dict | QuestionGroup | Awaitable[dict]]

    def spec(self) -> ToolSpec:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(name=self.name, description=self.description, parameters=schema)


@dataclass(frozen=True)
class ToolOutcome:
    content: str  # JSON text handed back to the model ("" while waiting for the person)
    is_error: bool
    waiting_on: QuestionGroup | None = None
    # Sources the result cites (numbered as the model sees them); the final reply links the ones it uses.
    citations: tuple[dict, ...] = ()
    # The model's arguments could not be read (not JSON, wrong shape): a mistake of the model's
    # output, not of the request, so it is not worth repeating to the model on a retry.
    malformed: bool = False


def _owned_project_id(user: User, project_id: int | None) -> int | None:
    if project_id is None:
        return None
    try:
        return workspace.project_for_user(user=user, project_id=project_id).pk
    except Project.DoesNotExist:
        raise ToolError(f"Project {project_id} was not found. Call query_projects to see the valid ids.") from None


def _page_fields(page: workspace.Page) -> dict:
    return {"returned": len(page.items), "total": page.total, "truncated": page.truncated, "more": page.more}


def _project_ref(project: Project | None) -> dict | None:
    return None if project is None else {"id": project.pk, "name": project.name}


def _task(task: Task, zone: dt.tzinfo) -> dict:
    row = {
        "id": task.pk,
        "title": task.title,
        "status": task.status,
        "priority": task.priority,
        "due_date": task.due_date.isoformat() if task.due_date else None,
        "project": _project_ref(task.project),
    }
    if task.completed_at is not None:
        row["completed_on"] = timezone.localdate(task.completed_at, timezone=zone).isoformat()  # the user's day
    return row


def _note(note: Note) -> dict:
    content = note.content
    return {
        "id": note.pk,
        "title": note.title,
        "content": content[:NOTE_CONTENT_CHARS],
        "content_truncated": len(content) > NOTE_CONTENT_CHARS,
        "project": _project_ref(note.project),
        "updated_at": note.updated_at.isoformat(),
    }


def query_tasks(ctx: ToolContext, args: QueryTasksArgs) -> dict:
    user = ctx.user
    project_id = _owned_project_id(user, args.project_id)
    zone, today = _calendar(ctx)
    due = workspace.due_window(name=args.due, today=today) if args.due is not None else None
    if args.due_on is not None:
        due = workspace.DayWindow("due_on", args.due_on, args.due_on)
    completed = workspace.past_window(name=args.completed, today=today) if args.completed is not None else None
    added = workspace.past_window(name=args.added, today=today) if args.added is not None else None
    page = workspace.tasks_for_user(
        user=user,
        status=args.status,
        project_id=project_id,
        search=args.search,
        due=due,
        completed=completed,
        added=added,
        undated=args.no_due_date,
        unfiled=args.no_project,
        time_zone=zone,
        priority_at_least=args.priority_at_least,
        oldest_first=args.oldest_first,
        limit=args.limit,
    )
    found = {"tasks": [_task(t, zone) for t in page.items], **_page_fields(page), "filters": args.model_dump(mode="json")}
    if due is not None:
        found |= {"due_from": _day(due.first), "due_until": _day(due.last)}
    elif completed is not None:
        found |= {"completed_from": _day(completed.first), "completed_until": _day(completed.last)}
    elif added is not None:
        found |= {"added_from": _day(added.first), "added_until": _day(added.last)}
    # The person's date with every listing, so "due tomorrow" and "overdue" read the same in each.
    return {**found, "today": today.isoformat(), "time_zone": ctx.time_zone}


def _calendar(ctx: ToolContext) -> tuple[zoneinfo.ZoneInfo, dt.date]:
    """The user's time zone, and today's date in it: what the date windows count days in."""
    zone = zoneinfo.ZoneInfo(ctx.time_zone)
    return zone, timezone.localdate(timezone=zone)


def _day(day: dt.date | None) -> str | None:
    return day.isoformat() if day else None


def query_notes(ctx: ToolContext, args: QueryNotesArgs) -> dict:
    user = ctx.user
    project_id = _owned_project_id(user, args.project_id)
    zone, today = _calendar(ctx)
    changed = workspace.past_window(name=args.changed, today=today) if args.changed is not None else None
    page = workspace.notes_for_user(
        user=user, project_id=project_id, search_term=args.search_term, changed=changed, time_zone=zone, limit=args.limit
    )
    found = {"notes": [_note(n) for n in page.items], **_page_fields(page), "filters": args.model_dump()}
    if changed is None:
        return found
    return {
        **found,
        "changed_from": _day(changed.first),
        "changed_until": _day(changed.last),
        "today": today.isoformat(),
        "time_zone": ctx.time_zone,
    }


def query_projects(ctx: ToolContext, args: QueryProjectsArgs) -> dict:
    if not args.include_stats:
        rows = [_project(p) for p in workspace.projects_for_user(user=ctx.user)]
    else:
        rows = [
            {
                **_project(s.project),
                "stats": {"todo": s.todo, "in_progress": s.in_progress, "completed": s.completed, "tasks": s.tasks, "notes": s.notes},
            }
            for s in workspace.project_stats_for_user(user=ctx.user)
        ]
    return {"projects": rows, "total": len(rows)}


def _project(project: Project) -> dict:
    return {"id": project.pk, "name": project.name, "description": project.description, "archived": project.archived}


async def search_knowledge_base(ctx: ToolContext, args: SearchKnowledgeBaseArgs) -> dict:
    result = await knowledge.answer_from_knowledge_base(question=args.question)
    if not result.should_reply:
        if not result.closest_pages:
            return {
                "should_reply": False,
                "note": "The knowledge base does not cover this. Tell the user so plainly; do not answer from memory.",
            }
        return {
            "should_reply": False,
            "closest_pages": [{"title": p.title, "url": p.url} for p in result.closest_pages],
            "note": "The knowledge base does not answer this. Tell the user so plainly; do not answer from memory. "
            "You may name the closest pages as links, saying they do not answer it.",
        }
    return {
        "should_reply": True,
        "answer": result.reply_text,
        "citations": [c.model_dump() for c in result.citations],
        "note": "Give the user this answer, keeping its [n] citation markers; the sources are shown beside it.",
    }


def ask_user(ctx: ToolContext, args: AskUserArgs) -> QuestionGroup:
    try:
        return questions.ask(
            user=ctx.user,
            conversation_id=ctx.conversation_id,
            kind=QuestionGroup.Kind.ASK,
            specs=args.questions,
            tool_call_id=ctx.tool_call_id,
            tool_name="ask_user",
            payload={"in_reply_to_id": ctx.in_reply_to_id},
            timeouts=ctx.timeouts,
        )
    except questions.AskRejected as exc:
        raise ToolError(str(exc)) from None


APPLY, CANCEL = 0, 1


def propose_operations(ctx: ToolContext, args: operations.ProposeOperationsArgs) -> QuestionGroup:
    try:
        lines = operations.check(user=ctx.user, operations=args.operations)
    except operations.OperationRejected as exc:
        raise ToolError(str(exc)) from None
    count = len(lines)
    destructive = any(line["destructive"] for line in lines)
    confirm = QuestionSpec(
        question=f"{args.summary} — apply {count} change{'s' if count != 1 else ''}?",
        header="Confirm",
        options=[
            OptionSpec(label="Apply", description="Make 1 change listed above" if count == 1 else f"Make all {count} changes listed above"),
            OptionSpec(label="Cancel", description="Change nothing"),
        ],
        allow_custom=False,
    )
    try:
        return questions.ask(
            user=ctx.user,
            conversation_id=ctx.conversation_id,
            kind=QuestionGroup.Kind.CONFIRM,
            specs=[confirm],
            tool_call_id=ctx.tool_call_id,
            tool_name="propose_operations",
            payload={
                "in_reply_to_id": ctx.in_reply_to_id,
                "summary": args.summary,
                "operations": [op.model_dump(mode="json") for op in args.operations],
                "lines": lines,
            },
            destructive=destructive,
            default_indexes=[[CANCEL]],
            timeouts=ctx.timeouts,
        )
    except questions.AskRejected as exc:
        raise ToolError(str(exc)) from None


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in [
        Tool(
            "query_tasks",
            "List the user's tasks with optional filters. Use for complete listings, bulk work and searching; "
            "the workspace snapshot only shows a few tasks.",
            QueryTasksArgs,
            query_tasks,
        ),
        Tool(
            "query_notes",
            "List or full-text search the user's notes (title and content).",
            QueryNotesArgs,
            query_notes,
        ),
        Tool("query_projects", "List the user's projects, optionally with task and note counts.", QueryProjectsArgs, query_projects),
        Tool(
            "search_knowledge_base",
            "Answer a question about Clarion's documentation and the knowledge base (how to use it, configure a "
            "model, tune prompts…). Returns a verified answer with numbered citations, or says the knowledge base "
            "does not cover it.",
            SearchKnowledgeBaseArgs,
            search_knowledge_base,
        ),
        Tool(
            "ask_user",
            "Ask the user 1-4 multiple-choice questions instead of guessing when the request is ambiguous. "
            "Each question has 2-6 options (short labels); the user may also type their own answer unless "
            "allow_custom is false. Your turn ends; the answers arrive as this tool's result, each marked "
            "answered, timed_out (a default may have been applied) or skipped.",
            AskUserArgs,
            ask_user,
        ),
        Tool(
            "propose_operations",
            "Propose changes to the user's tasks, notes or projects (create, update, complete, move, delete). "
            "Nothing changes until the user confirms the whole list; your turn ends and the result says whether "
            "the changes were applied, cancelled or timed out. For bulk work, first use the query tools to get "
            "every id, then propose all operations in one call.",
            operations.ProposeOperationsArgs,
            propose_operations,
        ),
    ]
}


@functools.cache
def tool_specs() -> list[ToolSpec]:
    # Static, and generating JSON schemas is the slowest part of a turn's bookkeeping.
    return [tool.spec() for tool in TOOLS.values()]


async def execute(*, ctx: ToolContext, call: ToolCall) -> ToolOutcome:
    """Run one tool call for the context's user: async tools on the loop, ORM tools in a thread."""
    try:
        tool = TOOLS.get(call.name)
        if tool is None:
            raise ToolError(f"Unknown tool '{call.name}'. Available tools: {', '.join(TOOLS)}.")
        args = _parse_arguments(tool, call.arguments)
        if inspect.iscoroutinefunction(tool.run):
            result = await tool.run(ctx, args)
        else:
            result = await database_sync_to_async(tool.run)(ctx, args)
    except ToolError as exc:
        return ToolOutcome(content=json.dumps({"error": str(exc)}), is_error=True, malformed=isinstance(exc, MalformedArguments))
    if isinstance(result, QuestionGroup):
        return ToolOutcome(content="", is_error=False, waiting_on=result)
    return ToolOutcome(content=json.dumps(result, ensure_ascii=False), is_error=False, citations=tuple(result.get("citations") or ()))


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return NUL in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    return isinstance(value, list) and any(_holds_nul(v) for v in value)


def _parse_arguments(tool: Tool, raw: str) -> BaseModel:
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise MalformedArguments(f"The arguments for {tool.name} are not valid JSON ({exc.msg}). Send a JSON object.") from None
    except RecursionError:
        raise MalformedArguments(f"The arguments for {tool.name} are nested too deeply. Send a flat JSON object.") from None
    if not isinstance(data, dict):
        raise MalformedArguments(f"The arguments for {tool.name} must be a JSON object.")
    if _holds_nul(data):  # Postgres cannot take it, in a query or a row
        raise ToolError(f"The arguments for {tool.name} contain a NUL character (\\u0000). Send them without it.")
    try:
        return tool.arguments.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
        raise ToolError(f"Invalid arguments for {tool.name}: {problems}. Fix them and call the tool again.") from None
