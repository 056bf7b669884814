"""Changes the agent may propose. Nothing here runs until the person confirms.

Each operation is named after the `workspace.services` function that applies it, with that
function's keyword arguments: one write path for every change to workspace rows.

`check` runs when the model proposes (ids must be the user's, so the card never lists a
stranger's task); `apply` runs on confirmation, re-checks ownership and applies everything in
one transaction — all or nothing.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal, TypedDict, Union

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, model_validator

from project.errors import Rejected
from project.text import excerpt
from project.users import User
from workspace import services
from workspace.models import Note, Project, Task

Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
MAX_OPERATIONS = 500


class OperationRejected(Rejected):
    """A proposal or an application that cannot go ahead; the text names what is wrong."""


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateTask(_Op):
    op: Literal["create_task"]
    title: Title
    description: str = ""
    project_id: int | None = None
    status: Task.Status = Task.Status.TODO
    priority: Task.Priority = Task.Priority.MEDIUM
    due_date: dt.date | None = None


class UpdateTask(_Op):
    op: Literal["update_task"]
    task_id: int
    title: Title | None = None
    description: str | None = None
    status: Task.Status | None = None
    priority: Task.Priority | None = None
    due_date: dt.date | None = None


class CompleteTask(_Op):
    op: Literal["complete_task"]
    task_id: int


class MoveTask(_Op):
    op: Literal["move_task"]
    task_id: int
    project_id: int | None = Field(description="Target project id, or null for no project.")


class DeleteTask(_Op):
    op: Literal["delete_task"]
    task_id: int


class CreateNote(_Op):
    op: Literal["create_note"]
    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
    content: str = ""
    project_id: int | None = None


class UpdateNote(_Op):
    op: Literal["update_note"]
    note_id: int
    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)] | None = None
    content: str | None = None
    append: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = Field(
        None, description="Text added at the end of the note, after a blank line; the rest is kept. Not together with content."
    )

    @model_validator(mode="after")
    def _content_or_append(self) -> UpdateNote:
        if self.content is not None and self.append is not None:
            raise ValueError("content replaces the note's text and append adds to it: use one of them")
        return self


class MoveNote(_Op):
    op: Literal["move_note"]
    note_id: int
    project_id: int | None


class DeleteNote(_Op):
    op: Literal["delete_note"]
    note_id: int


class CreateProject(_Op):
    op: Literal["create_project"]
    name: Name
    description: str = ""


class UpdateProject(_Op):
    op: Literal["update_project"]
    project_id: int
    name: Name | None = None
    description: str | None = None
    archived: bool | None = None


class DeleteProject(_Op):
    op: Literal["delete_project"]
    project_id: int


Operation = Annotated[
    Union[
        CreateTask, UpdateTask, CompleteTask, MoveTask, DeleteTask,
        CreateNote, UpdateNote, MoveNote, DeleteNote,
        CreateProject, UpdateProject, DeleteProject,
    ],
    Field(discriminator="op"),
]  # fmt: skip
OPERATIONS = TypeAdapter(list[Operation])
DESTRUCTIVE = {"delete_task", "delete_note", "delete_project"}


class ProposeOperationsArgs(_Op):
    summary: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)] = Field(
        description="One line saying what these changes do, e.g. 'Delete all 50 completed tasks'."
    )
    operations: list[Operation] = Field(min_length=1, max_length=MAX_OPERATIONS)


# A row an operation names; the rows a batch names, by kind then id (what `describe` words them with).
Row = Task | Note | Project
Rows = dict[type[Row], dict[int, Row]]


class OperationLine(TypedDict):
    """One line of a confirmation card."""

    op: str
    text: str
    destructive: bool


class Applied(TypedDict):
    applied: int
    by_operation: dict[str, int]


def _targets(operations: list[Operation]) -> dict[type[Row], set[int]]:
    wanted: dict[type[Row], set[int]] = {Task: set(), Note: set(), Project: set()}
    for op in operations:
        if hasattr(op, "task_id"):
            wanted[Task].add(op.task_id)
        if hasattr(op, "note_id"):
            wanted[Note].add(op.note_id)
        if hasattr(op, "project_id") and op.project_id is not None:
            wanted[Project].add(op.project_id)
    return wanted


def _owned(*, user: User, operations: list[Operation]) -> Rows:
    """The rows the operations touch, all the user's — or OperationRejected naming the others."""
    found: Rows = {}
    missing: list[str] = []
    for model, ids in _targets(operations).items():
        rows = {row.pk: row for row in model.objects.filter(owner=user, pk__in=ids)} if ids else {}
        found[model] = rows
        missing += [f"{model.__name__.lower()} {pk}" for pk in sorted(ids - rows.keys())]
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise OperationRejected(f"Not found: {shown}. Query the workspace for current ids and propose again.")
    return found


def check(*, user: User, operations: list[Operation]) -> list[OperationLine]:
    """Validate a proposal for this user; returns what the card shows, one line per operation."""
    rows = _owned(user=user, operations=operations)
    return [{"op": op.op, "text": describe(op, rows), "destructive": op.op in DESTRUCTIVE} for op in operations]


def describe(op: Operation, rows: Rows) -> str:
    def title(model: type[Row], pk: int) -> str:
        row = rows[model].get(pk)
        return f"“{getattr(row, 'title', None) or getattr(row, 'name', '')}”"

    def project(pk: int | None) -> str:
        return "no project" if pk is None else title(Project, pk)

    match op.op:
        case "create_task":
            return f"Create task “{op.title}”" + (f" in {project(op.project_id)}" if op.project_id else "") + _task_details(op)
        case "update_task":
            return f"Update task {title(Task, op.task_id)}: {_task_changes(op)}"
        case "complete_task":
            return f"Mark task {title(Task, op.task_id)} completed"
        case "move_task":
            return f"Move task {title(Task, op.task_id)} to {project(op.project_id)}"
        case "delete_task":
            return f"Delete task {title(Task, op.task_id)}"
        case "create_note":
            said = f": “{excerpt(op.content, 80)}”" if op.content.strip() else ""
            return f"Create note “{op.title}”" + (f" in {project(op.project_id)}" if op.project_id else "") + said
        case "update_note":
            return f"Update note {title(Note, op.note_id)}: {_note_changes(op)}"
        case "move_note":
            return f"Move note {title(Note, op.note_id)} to {project(op.project_id)}"
        case "delete_note":
            return f"Delete note {title(Note, op.note_id)}"
        case "create_project":
            return f"Create project “{op.name}”"
        case "update_project":
            return f"Update project {title(Project, op.project_id)}: {_project_changes(op)}"
        case "delete_project":
            return f"Delete project {title(Project, op.project_id)} (its tasks and notes are kept, without a project)"
    raise AssertionError(op.op)


def _task_details(op: CreateTask) -> str:
    """What a new task gets besides its title, so the person sees it before confirming:
    ", high priority, due Tue Dec 1"."""
    details = []
    if op.status != Task.Status.TODO:
        details.append(Task.Status(op.status).label.lower())
    if op.priority != Task.Priority.MEDIUM:
        details.append(f"{Task.Priority(op.priority).label.lower()} priority")
    if op.due_date is not None:
        details.append(f"due {_day(op.due_date)}")
    return "".join(f", {d}" for d in details)


def _task_changes(op: UpdateTask) -> str:
    """What an update changes, in the words the task list uses: "status → to do, due → Tue Dec 1"."""
    changes = []
    if op.title is not None:
        changes.append(f"title → “{op.title}”")
    if op.description is not None:
        changes.append("description → new text" if op.description else "description → none")
    if op.status is not None:
        changes.append(f"status → {Task.Status(op.status).label.lower()}")
    if op.priority is not None:
        changes.append(f"priority → {Task.Priority(op.priority).label.lower()}")
    if op.due_date is not None:
        changes.append(f"due → {_day(op.due_date)}")
    return ", ".join(changes) or "no changes"


def _note_changes(op: UpdateNote) -> str:
    changes = []
    if op.title is not None:
        changes.append(f"title → “{op.title}”")
    if op.content is not None:
        changes.append(f"text → “{excerpt(op.content, 80)}”" if op.content.strip() else "text → none")
    if op.append is not None:
        changes.append(f"add at the end “{excerpt(op.append, 80)}”")
    return ", ".join(changes) or "no changes"


def _project_changes(op: UpdateProject) -> str:
    changes = []
    if op.name is not None:
        changes.append(f"name → “{op.name}”")
    if op.description is not None:
        changes.append("description → new text" if op.description else "description → none")
    if op.archived is not None:
        changes.append("archived" if op.archived else "no longer archived")
    return ", ".join(changes) or "no changes"


def _day(day: dt.date) -> str:
    """ "Tue Dec 1", with the year when it is not this one."""
    year = f", {day.year}" if day.year != timezone.localdate().year else ""
    return f"{day:%a} {day:%b} {day.day}{year}"


@transaction.atomic
def apply(*, user: User, operations: list[dict[str, object]]) -> Applied:
    """Apply confirmed operations (as stored JSON) in one transaction, after re-checking that
    every row still exists and is the user's. Raises OperationRejected; nothing is then written."""
    ops = OPERATIONS.validate_python(operations)
    rows = _owned(user=user, operations=ops)
    # Lock what we are about to change so a concurrent edit can't interleave.
    for model, found in rows.items():
        if found:
            list(model.objects.select_for_update().filter(pk__in=found.keys()))
    counts: dict[str, int] = {}
    for op in ops:
        try:
            _apply_one(user, op)
        except ObjectDoesNotExist:
            # Gone since the check (deleted by an earlier operation of this batch, or elsewhere).
            raise OperationRejected(f"{describe(op, rows)}: it no longer exists. Nothing was changed.") from None
        counts[op.op] = counts.get(op.op, 0) + 1
    return {"applied": len(ops), "by_operation": counts}


def _apply_one(user: User, op: Operation) -> None:
    """One confirmed operation, through the same service a person's edit would use."""
    fields = op.model_dump(exclude={"op"})
    write = getattr(services, op.op)
    write(user=user, **fields)
