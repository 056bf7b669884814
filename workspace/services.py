"""Writes to a user's workspace — the only ones: the agent's confirmed operations
(`workspace/operations.py`) apply through these functions too.

Every function takes the acting user; ids of other users' rows raise DoesNotExist exactly like
missing ones, and nothing is written.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.db.models import Case, F, TextField, Value, When
from django.db.models.functions import Coalesce, Concat
from django.utils import timezone

from project.users import User
from workspace.models import Note, Project, Task

# The kinds of row a user owns; `_changed` and `_deleted` write any of them.
OwnedModel = type[Project] | type[Task] | type[Note]


def _owned_project(*, user: User, project_id: int | None) -> Project | None:
    return None if project_id is None else Project.objects.get(owner=user, pk=project_id)


def _changed(model: OwnedModel, *, user: User, pk: int, **fields: object) -> None:
    """One UPDATE of the user's row; DoesNotExist when there is no such row of theirs."""
    if not model.objects.filter(owner=user, pk=pk).update(**fields, updated_at=timezone.now()):
        raise model.DoesNotExist(f"No {model.__name__.lower()} {pk}.")


def _deleted(model: OwnedModel, *, user: User, pk: int) -> None:
    deleted, _ = model.objects.filter(owner=user, pk=pk).delete()
    if not deleted:
        raise model.DoesNotExist(f"No {model.__name__.lower()} {pk}.")


# --- projects


def create_project(*, user: User, name: str, description: str = "") -> Project:
    return Project.objects.create(owner=user, name=name, description=description)


def update_project(
    *, user: User, project_id: int, name: str | None = None, description: str | None = None, archived: bool | None = None
) -> None:
    fields = {k: v for k, v in {"name": name, "description": description, "archived": archived}.items() if v is not None}
    _changed(Project, user=user, pk=project_id, **fields)


def delete_project(*, user: User, project_id: int) -> None:
    """Its tasks and notes are kept, without a project."""
    _deleted(Project, user=user, pk=project_id)


# --- tasks


def create_task(
    *,
    user: User,
    title: str,
    description: str = "",
    project_id: int | None = None,
    status: str = Task.Status.TODO,
    priority: str = Task.Priority.MEDIUM,
    due_date: dt.date | None = None,
) -> Task:
    project = _owned_project(user=user, project_id=project_id)
    return Task.objects.create(
        owner=user, project=project, title=title, description=description, status=status, priority=priority, due_date=due_date
    )


def update_task(
    *,
    user: User,
    task_id: int,
    title: str | None = None,
    description: str | None = None,
    status: str | None = None,
    priority: str | None = None,
    due_date: dt.date | None = None,
) -> None:
    fields = {"title": title, "description": description, "priority": priority, "due_date": due_date}
    status_fields = _status(status) if status is not None else {}
    _changed(Task, user=user, pk=task_id, **{k: v for k, v in fields.items() if v is not None}, **status_fields)


def complete_task(*, user: User, task_id: int) -> None:
    _changed(Task, user=user, pk=task_id, **_status(Task.Status.COMPLETED))


def backdate_completion(*, user: User, task_id: int, completed_at: dt.datetime) -> None:
    """Work finished before it was entered (the demo workspace's): when a completed task was done.
    DoesNotExist, and nothing written, unless the task is the user's and completed."""
    if not Task.objects.filter(owner=user, pk=task_id, status=Task.Status.COMPLETED).update(completed_at=completed_at):
        raise Task.DoesNotExist(f"No completed task {task_id}.")


def _status(status: str) -> dict[str, object]:
    """A status as one UPDATE writes it, with its completion time: kept when the task was completed
    already, set now when it becomes completed, cleared when it stops being completed."""
    completed_at = Coalesce(F("completed_at"), Value(timezone.now())) if status == Task.Status.COMPLETED else None
    return {"status": status, "completed_at": completed_at}


@transaction.atomic
def move_task(*, user: User, task_id: int, project_id: int | None) -> None:
    project = _owned_project(user=user, project_id=project_id)
    _changed(Task, user=user, pk=task_id, project=project)


def delete_task(*, user: User, task_id: int) -> None:
    _deleted(Task, user=user, pk=task_id)


# --- notes


def create_note(*, user: User, title: str, content: str = "", project_id: int | None = None) -> Note:
    project = _owned_project(user=user, project_id=project_id)
    return Note.objects.create(owner=user, project=project, title=title, content=content)


def update_note(*, user: User, note_id: int, title: str | None = None, content: str | None = None, append: str | None = None) -> None:
    """`append`: text added at the end, after a blank line, in the same UPDATE (an edit made
    since the text was read is kept)."""
    fields: dict[str, object] = {k: v for k, v in {"title": title, "content": content}.items() if v is not None}
    if append is not None:
        fields["content"] = Concat(
            "content", Case(When(content="", then=Value("")), default=Value("\n\n")), Value(append), output_field=TextField()
        )
    _changed(Note, user=user, pk=note_id, **fields)


@transaction.atomic
def move_note(*, user: User, note_id: int, project_id: int | None) -> None:
    project = _owned_project(user=user, project_id=project_id)
    _changed(Note, user=user, pk=note_id, project=project)


def delete_note(*, user: User, note_id: int) -> None:
    _deleted(Note, user=user, pk=note_id)
