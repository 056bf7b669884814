"""Reads of a user's workspace. Every function takes the acting user and never sees another's rows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.contrib.postgres.search import SearchQuery
from django.db.models import Model, QuerySet

from project.users import User
from workspace import sql
from workspace.models import Note, Project, Task, note_search_vector

T = TypeVar("T")
M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class Page(Generic[T]):
    """A bounded slice of a listing that knows how much it left out."""

    items: list[T]
    total: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.items)

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.items))


@dataclass(frozen=True)
class ProjectStats:
    project: Project
    todo: int
    in_progress: int
    completed: int
    notes: int

    @property
    def tasks(self) -> int:
        return self.todo + self.in_progress + self.completed


def _page(queryset: QuerySet[M], *, limit: int) -> Page[M]:
    # Fetch one row more than asked: the count query only runs when something was cut off.
    rows = list(queryset[: limit + 1])
    if len(rows) <= limit:
        return Page(items=rows, total=len(rows))
    return Page(items=rows[:limit], total=queryset.order_by().count())


def project_for_user(*, user: User, project_id: int) -> Project:
    """The user's project, or Project.DoesNotExist — another user's id looks exactly like a missing one."""
    return Project.objects.get(owner=user, pk=project_id)


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DUE_WINDOWS = ("overdue", "today", "tomorrow", "this_week", "next_week", "weekend", "next_7_days", "this_month", "next_month", *WEEKDAYS)
PAST_WINDOWS = ("today", "yesterday", "this_week", "last_week", "last_7_days", "this_month", "last_month", *WEEKDAYS)


@dataclass(frozen=True)
class DayWindow:
    """Days of the user's calendar from `first` to `last` (inclusive; None: open-ended)."""

    name: str
    first: dt.date | None
    last: dt.date | None


def due_window(*, name: str, today: dt.date) -> DayWindow:
    """`today` is the user's date (in their time zone). "this_week" is Monday to Sunday of the
    week `today` falls in, "next_week" the one after it; "weekend" the coming Saturday and Sunday
    (on a Sunday, today alone: what is left of it); "this_month" the whole calendar month,
    "next_month" the one after it; a weekday ("friday") the next such day, today included;
    "overdue" is everything due before today."""
    if name == "overdue":
        return DayWindow(name, None, today - dt.timedelta(days=1))
    if name == "today":
        return DayWindow(name, today, today)
    if name == "tomorrow":
        return DayWindow(name, today + dt.timedelta(days=1), today + dt.timedelta(days=1))
    if name in ("this_week", "next_week"):
        monday = today - dt.timedelta(days=today.weekday()) + dt.timedelta(weeks=name == "next_week")
        return DayWindow(name, monday, monday + dt.timedelta(days=6))
    if name == "weekend":
        sunday = today + dt.timedelta(days=6 - today.weekday())
        return DayWindow(name, max(today, sunday - dt.timedelta(days=1)), sunday)
    if name == "next_7_days":
        return DayWindow(name, today, today + dt.timedelta(days=6))
    if name in ("this_month", "next_month"):
        first = today.replace(day=1) if name == "this_month" else _first_of_next_month(today)
        return DayWindow(name, first, _first_of_next_month(first) - dt.timedelta(days=1))
    if name in WEEKDAYS:
        day = today + dt.timedelta(days=(WEEKDAYS.index(name) - today.weekday()) % 7)
        return DayWindow(name, day, day)
    raise ValueError(f"unknown due window {name!r}; one of {', '.join(DUE_WINDOWS)}")


def _first_of_next_month(day: dt.date) -> dt.date:
    return (day.replace(day=1) + dt.timedelta(days=31)).replace(day=1)


def past_window(*, name: str, today: dt.date) -> DayWindow:
    """Days up to today, when tasks were completed or added. `today` is the user's date. "this_week" is Monday to today, "last_week" the Monday to Sunday
    before it, "last_7_days" today and the six days before; "this_month" the 1st to today,
    "last_month" the whole month before; a weekday ("saturday") the last such day, today included."""
    if name == "today":
        return DayWindow(name, today, today)
    if name == "yesterday":
        return DayWindow(name, today - dt.timedelta(days=1), today - dt.timedelta(days=1))
    if name in ("this_week", "last_week"):
        monday = today - dt.timedelta(days=today.weekday()) - dt.timedelta(weeks=name == "last_week")
        return DayWindow(name, monday, today if name == "this_week" else monday + dt.timedelta(days=6))
    if name == "last_7_days":
        return DayWindow(name, today - dt.timedelta(days=6), today)
    if name == "this_month":
        return DayWindow(name, today.replace(day=1), today)
    if name == "last_month":
        last = today.replace(day=1) - dt.timedelta(days=1)
        return DayWindow(name, last.replace(day=1), last)
    if name in WEEKDAYS:
        day = today - dt.timedelta(days=(today.weekday() - WEEKDAYS.index(name)) % 7)
        return DayWindow(name, day, day)
    raise ValueError(f"unknown window of past days {name!r}; one of {', '.join(PAST_WINDOWS)}")


def tasks_for_user(
    *,
    user: User,
    status: str = "all",
    project_id: int | None = None,
    search: str | None = None,
    due: DayWindow | None = None,
    completed: DayWindow | None = None,
    added: DayWindow | None = None,
    undated: bool = False,
    unfiled: bool = False,
    time_zone: dt.tzinfo = dt.UTC,
    priority_at_least: str | None = None,
    oldest_first: bool = False,
    limit: int = 100,
) -> Page[Task]:
    """status: a task status, "open" (not completed) or "all". priority_at_least: a priority, and
    only tasks of it or above ("high": high and urgent). With `due`: tasks due in that window,
    soonest first; completed ones only when `status` asks for them (what is due is what is still
    to do). With `completed` (or `added`): tasks completed (added) on those days of `time_zone`'s
    calendar. `undated`: only tasks with no due date; `unfiled`: only tasks in no project.
    Completed tasks alone (`completed`, or the status "completed") come the most recently
    completed first; other listings the newest first, or with `oldest_first` those added longest
    ago first ("my oldest open task")."""
    if sum(window is not None for window in (due, completed, added)) > 1:
        raise ValueError("a listing is by one date at most: due, completed or added")
    if undated and due is not None:
        raise ValueError("a task with no due date is due in no window")
    if oldest_first and (due is not None or completed is not None):
        raise ValueError("oldest first is the order of when tasks were added: not with a due or completed window")
    tasks = Task.objects.filter(owner=user).select_related("project")
    if status == "open":
        tasks = tasks.exclude(status=Task.Status.COMPLETED)
    elif status != "all":
        tasks = tasks.filter(status=status)
    if unfiled and project_id is not None:
        raise ValueError("a task in no project is in no given project")
    if project_id is not None:
        tasks = tasks.filter(project_id=project_id)
    elif unfiled:
        tasks = tasks.filter(project__isnull=True)
    if search:
        tasks = tasks.filter(title__icontains=search)
    if priority_at_least is not None:
        levels = Task.Priority.values  # lowest first
        tasks = tasks.filter(priority__in=levels[levels.index(priority_at_least) :])
    if completed is not None:
        tasks = tasks.filter(status=Task.Status.COMPLETED, **_moments_in("completed_at", completed, time_zone))
    if added is not None:
        tasks = tasks.filter(**_moments_in("created_at", added, time_zone))
    if undated:
        tasks = tasks.filter(due_date__isnull=True)
    if oldest_first:
        return _page(tasks.order_by("created_at", "id"), limit=limit)
    if completed is not None or status == Task.Status.COMPLETED:
        return _page(tasks.order_by("-completed_at", "-id"), limit=limit)
    if due is None:
        return _page(tasks.order_by("-created_at", "-id"), limit=limit)
    if status == "all":
        tasks = tasks.exclude(status=Task.Status.COMPLETED)
    tasks = tasks.filter(due_date__isnull=False)
    if due.first is not None:
        tasks = tasks.filter(due_date__gte=due.first)
    if due.last is not None:
        tasks = tasks.filter(due_date__lte=due.last)
    return _page(tasks.order_by("due_date", "-id"), limit=limit)


def _moments_in(field: str, days: DayWindow, zone: dt.tzinfo) -> dict[str, dt.datetime]:
    """Lookups for the moments of `field` that fall on those days of `zone`'s calendar."""
    lookups = {}
    if days.first is not None:
        lookups[f"{field}__gte"] = dt.datetime.combine(days.first, dt.time.min, tzinfo=zone)
    if days.last is not None:
        lookups[f"{field}__lt"] = dt.datetime.combine(days.last + dt.timedelta(days=1), dt.time.min, tzinfo=zone)
    return lookups


def notes_for_user(
    *,
    user: User,
    project_id: int | None = None,
    search_term: str | None = None,
    changed: DayWindow | None = None,
    time_zone: dt.tzinfo = dt.UTC,
    limit: int = 50,
) -> Page[Note]:
    """Most recently changed first. `changed`: only notes added or last edited on those days of
    `time_zone`'s calendar."""
    notes = Note.objects.filter(owner=user).select_related("project")
    if project_id is not None:
        notes = notes.filter(project_id=project_id)
    if changed is not None:
        notes = notes.filter(**_moments_in("updated_at", changed, time_zone))
    if search_term:
        query = SearchQuery(search_term, config="english", search_type="websearch")
        # alias, not annotate: the vector is only matched (through the index), never selected.
        notes = notes.alias(search=note_search_vector()).filter(search=query)
    return _page(notes.order_by("-updated_at", "-id"), limit=limit)


def projects_for_user(*, user: User, include_archived: bool = True) -> list[Project]:
    projects = Project.objects.filter(owner=user)
    if not include_archived:
        projects = projects.filter(archived=False)
    return list(projects.order_by("archived", "name", "id"))


def project_stats_for_user(*, user: User) -> list[ProjectStats]:
    """Every project of the user, archived last, with its task counts by status and its note count."""
    return [
        ProjectStats(
            project=Project(id=r.pk, owner=user, name=r.name, description=r.description, archived=r.archived),
            todo=r.todo,
            in_progress=r.in_progress,
            completed=r.completed,
            notes=r.notes,
        )
        for r in sql.projects(owner_id=user.pk)
    ]


# The snapshot's tasks and projects are the rows its statement reads (workspace/sql.py).
SnapshotTask = sql.TaskRow
SnapshotProject = sql.ProjectRow


@dataclass(frozen=True)
class SnapshotNote:
    pk: int
    title: str


@dataclass(frozen=True)
class Snapshot:
    """The small, always-included view of a workspace (a few to-do and in-progress tasks, counts); tools give the rest."""

    todo: list[SnapshotTask]
    in_progress: list[SnapshotTask]
    completed_count: int
    notes: list[SnapshotNote]
    projects: list[SnapshotProject]


SNAPSHOT_TODO = 10
SNAPSHOT_IN_PROGRESS = 5
SNAPSHOT_NOTES = 15


def snapshot_for_user(*, user: User) -> Snapshot:
    """What every turn starts with: the newest to-do and in-progress tasks, the completed count,
    the newest notes and every project with its counts — one statement."""
    rows = sql.snapshot(owner_id=user.pk, todo=SNAPSHOT_TODO, in_progress=SNAPSHOT_IN_PROGRESS, notes=SNAPSHOT_NOTES)
    return Snapshot(
        todo=rows.todo,
        in_progress=rows.in_progress,
        completed_count=rows.completed_count,
        notes=[SnapshotNote(pk=pk, title=title) for pk, title in rows.notes],
        projects=rows.projects,
    )
