"""The workspace reads every turn makes, written in SQL: the snapshot a turn starts with is one
statement (its to-do and in-progress tasks, completed count, notes and projects with their
counts, as JSON), where the ORM takes six queries whose compiling costs more CPU than the rest of
a turn's reads together. The projects block is one text, used by the snapshot and by the
projects listing. Private to `workspace`: the selectors call these typed functions.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db import connection

from workspace.models import Note, Project, Task

_P, _T, _N = Project._meta.db_table, Task._meta.db_table, Note._meta.db_table

# Every project of the owner with its task counts by status and its note count, archived last.
_PROJECTS = (
    "SELECT p.id AS pk, p.name, p.description, p.archived, "
    "count(t.id) FILTER (WHERE t.status = %(todo)s) AS todo, "
    "count(t.id) FILTER (WHERE t.status = %(in_progress)s) AS in_progress, "
    "count(t.id) FILTER (WHERE t.status = %(completed)s) AS completed, "
    f"(SELECT count(*) FROM {_N} n WHERE n.project_id = p.id AND n.owner_id = p.owner_id) AS notes "
    f"FROM {_P} p LEFT JOIN {_T} t ON t.project_id = p.id AND t.owner_id = p.owner_id "
    "WHERE p.owner_id = %(owner)s GROUP BY p.id ORDER BY p.archived, p.name, p.id"
)


def _newest_tasks(status: str, limit: str) -> str:
    return (
        "(SELECT coalesce(json_agg(x), '[]') FROM ("
        "SELECT t.id AS pk, t.title, t.priority, t.due_date, t.project_id, coalesce(p.name, '') AS project_name "
        f"FROM {_T} t LEFT JOIN {_P} p ON p.id = t.project_id "
        f"WHERE t.owner_id = %(owner)s AND t.status = %({status})s ORDER BY t.created_at DESC, t.id DESC LIMIT %({limit})s) x)"
    )


_SNAPSHOT = (
    f"SELECT {_newest_tasks('todo', 'todo_limit')}, {_newest_tasks('in_progress', 'in_progress_limit')}, "
    f"(SELECT count(*) FROM {_T} WHERE owner_id = %(owner)s AND status = %(completed)s), "
    f"(SELECT coalesce(json_agg(x), '[]') FROM (SELECT id, title FROM {_N} WHERE owner_id = %(owner)s "
    "ORDER BY updated_at DESC, id DESC LIMIT %(notes_limit)s) x), "
    f"(SELECT coalesce(json_agg(x), '[]') FROM ({_PROJECTS}) x)"
)


@dataclass(frozen=True)
class ProjectRow:
    """A project with its counts: the snapshot's projects, and the projects listing's rows."""

    pk: int
    name: str
    description: str
    archived: bool
    todo: int
    in_progress: int
    completed: int
    notes: int


@dataclass(frozen=True)
class TaskRow:
    """A task as the snapshot shows it."""

    pk: int
    title: str
    priority: str
    due_date: dt.date | None
    project_id: int | None
    project_name: str


@dataclass(frozen=True)
class SnapshotRows:
    todo: list[TaskRow]
    in_progress: list[TaskRow]
    completed_count: int
    notes: list[tuple[int, str]]
    projects: list[ProjectRow]


def _params(owner_id: int, **extra: Any) -> dict[str, Any]:
    return {
        "owner": owner_id,
        "todo": Task.Status.TODO,
        "in_progress": Task.Status.IN_PROGRESS,
        "completed": Task.Status.COMPLETED,
        **extra,
    }


def projects(*, owner_id: int) -> list[ProjectRow]:
    with connection.cursor() as cursor:
        cursor.execute(_PROJECTS, _params(owner_id))
        return [ProjectRow(*row) for row in cursor.fetchall()]


def snapshot(*, owner_id: int, todo: int, in_progress: int, notes: int) -> SnapshotRows:
    with connection.cursor() as cursor:
        cursor.execute(_SNAPSHOT, _params(owner_id, todo_limit=todo, in_progress_limit=in_progress, notes_limit=notes))
        todo_rows, in_progress_rows, completed, note_rows, project_rows = cursor.fetchone()
    return SnapshotRows(
        todo=[_task(r) for r in todo_rows],
        in_progress=[_task(r) for r in in_progress_rows],
        completed_count=completed,
        notes=[(r["id"], r["title"]) for r in note_rows],
        projects=[ProjectRow(**r) for r in project_rows],
    )


def _task(row: dict[str, Any]) -> TaskRow:
    due = row["due_date"]
    return TaskRow(
        row["pk"], row["title"], row["priority"], dt.date.fromisoformat(due) if due else None, row["project_id"], row["project_name"]
    )
