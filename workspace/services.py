"""Writes to a user's workspace. Every function takes the acting user; ids of other users' rows
raise DoesNotExist exactly like missing ones."""
from __future__ import annotations

import datetime as dt

from django.db import transaction

from workspace.models import Note, Project, Task


def _owned_project(*, user, project_id: int | None) -> Project | None:
    return None if project_id is None else Project.objects.get(owner=user, pk=project_id)


def create_project(*, user, name: str, description: str = "") -> Project:
    return Project.objects.create(owner=user, name=name, description=description)


def create_task(
    *,
    user,
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


def create_note(*, user, title: str, content: str = "", project_id: int | None = None) -> Note:
    project = _owned_project(user=user, project_id=project_id)
    return Note.objects.create(owner=user, project=project, title=title, content=content)


@transaction.atomic
def update_task(*, user, task_id: int, **changes) -> Task:
    task = Task.objects.select_for_update().get(owner=user, pk=task_id)
    if "project_id" in changes:
        task.project = _owned_project(user=user, project_id=changes.pop("project_id"))
    for field, value in changes.items():
        setattr(task, field, value)
    task.full_clean(exclude=["owner"])
    task.save()
    return task


def delete_task(*, user, task_id: int) -> None:
    Task.objects.get(owner=user, pk=task_id).delete()
