import datetime as dt

import pytest

from workspace import selectors, services
from workspace.models import Project, Task


def test_tasks_for_user_only_returns_own_rows(three_workspaces, alice):
    page = selectors.tasks_for_user(user=alice, status="all")
    assert page.total == 4
    assert all("alice" in t.title for t in page.items)


def test_task_status_and_search_filters(three_workspaces, bob):
    assert [t.title for t in selectors.tasks_for_user(user=bob, status="in_progress").items] == ["write copy bob"]
    assert [t.title for t in selectors.tasks_for_user(user=bob, search="HOMEPAGE").items] == ["design homepage bob"]
    open_tasks = {t.title for t in selectors.tasks_for_user(user=bob, status="open").items}
    assert open_tasks == {"design homepage bob", "write copy bob", "buy milk bob"}  # everything but "ship beta"


def test_tasks_of_a_priority_or_higher(alice, bob):
    for title, priority in [("low", "low"), ("medium", "medium"), ("high", "high"), ("urgent", "urgent")]:
        services.create_task(user=alice, title=title, priority=priority)
    services.create_task(user=bob, title="bob urgent", priority="urgent")

    def titles(priority):
        return sorted(t.title for t in selectors.tasks_for_user(user=alice, priority_at_least=priority).items)

    assert titles("high") == ["high", "urgent"]
    assert titles("urgent") == ["urgent"]
    assert titles("medium") == ["high", "medium", "urgent"]
    assert titles(None) == ["high", "low", "medium", "urgent"]


def test_filtering_by_another_users_project_returns_nothing(three_workspaces, alice, bob):
    bobs_project = three_workspaces["bob"]["projects"][0]
    assert selectors.tasks_for_user(user=alice, project_id=bobs_project.pk).items == []
    assert selectors.notes_for_user(user=alice, project_id=bobs_project.pk).items == []
    with pytest.raises(Project.DoesNotExist):
        selectors.project_for_user(user=alice, project_id=bobs_project.pk)


def test_notes_full_text_search_is_scoped(three_workspaces, charlie):
    page = selectors.notes_for_user(user=charlie, search_term="launch")
    assert [n.title for n in page.items] == ["Launch plan charlie"]
    # Stemming: "launches" finds "launch".
    assert selectors.notes_for_user(user=charlie, search_term="launches").total == 1


def test_page_reports_truncation(alice):
    for i in range(7):
        services.create_task(user=alice, title=f"task {i}")
    page = selectors.tasks_for_user(user=alice, limit=5)
    assert (len(page.items), page.total, page.truncated, page.more) == (5, 7, True, 2)
    full = selectors.tasks_for_user(user=alice, limit=10)
    assert (full.total, full.truncated, full.more) == (7, False, 0)


def test_project_stats_and_counts_are_scoped(three_workspaces, alice):
    stats = {s.project.name: s for s in selectors.project_stats_for_user(user=alice)}
    assert set(stats) == {"Atlas alice", "Harbor alice"}
    assert (stats["Atlas alice"].todo, stats["Atlas alice"].in_progress, stats["Atlas alice"].notes) == (1, 1, 1)
    assert selectors.snapshot_for_user(user=alice).completed_count == 1


def test_services_refuse_another_users_project(three_workspaces, alice):
    bobs_project = three_workspaces["bob"]["projects"][0]
    before = Task.objects.count()
    with pytest.raises(Project.DoesNotExist):
        services.create_task(user=alice, title="sneaky", project_id=bobs_project.pk)
    with pytest.raises(Task.DoesNotExist):
        services.update_task(user=alice, task_id=three_workspaces["bob"]["tasks"][0].pk, status="completed")
    assert Task.objects.count() == before
    assert Task.objects.get(pk=three_workspaces["bob"]["tasks"][0].pk).status == "todo"


def test_snapshot_reads_one_statement_with_the_newest_items_counts_and_only_own_rows(three_workspaces, alice, django_assert_num_queries):
    atlas, harbor = three_workspaces["alice"]["projects"]
    services.update_project(user=alice, project_id=harbor.pk, archived=True)
    for i in range(12):
        services.create_task(user=alice, title=f"todo {i}", project_id=atlas.pk if i % 2 else None, due_date=dt.date(2026, 12, i + 1))
    for i in range(6):
        services.create_task(user=alice, title=f"doing {i}", status="in_progress")
    for i in range(16):
        services.create_note(user=alice, title=f"note {i}")
    # One statement whatever the workspace's size: to-do, in progress, notes, the completed count,
    # the projects with their task counts.
    with django_assert_num_queries(1):
        snapshot = selectors.snapshot_for_user(user=alice)
    # The newest first, at most 10 to-do, 5 in progress and 15 notes.
    assert [t.title for t in snapshot.todo] == [f"todo {i}" for i in range(11, 1, -1)]
    assert [t.title for t in snapshot.in_progress] == [f"doing {i}" for i in range(5, 0, -1)]
    assert [n.title for n in snapshot.notes] == [f"note {i}" for i in range(15, 0, -1)]
    newest = snapshot.todo[0]
    assert (newest.project_id, newest.project_name, newest.due_date, newest.priority) == (
        atlas.pk,
        atlas.name,
        dt.date(2026, 12, 12),
        "medium",
    )
    assert (snapshot.todo[1].project_id, snapshot.todo[1].project_name) == (None, "")
    assert snapshot.completed_count == 1
    # Every project, archived last, with its own counts (tasks without a project count nowhere).
    assert [(p.name, p.archived, p.todo, p.in_progress, p.completed, p.notes) for p in snapshot.projects] == [
        ("Atlas alice", False, 7, 1, 0, 1),
        ("Harbor alice", True, 0, 0, 1, 0),
    ]
    assert "bob" not in str(snapshot) and "charlie" not in str(snapshot)


def test_snapshot_of_an_empty_workspace(alice):
    snapshot = selectors.snapshot_for_user(user=alice)
    assert (snapshot.todo, snapshot.in_progress, snapshot.completed_count, snapshot.notes, snapshot.projects) == ([], [], 0, [], [])
