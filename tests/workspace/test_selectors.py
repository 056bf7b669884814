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
    assert selectors.task_status_counts(user=alice) == {"todo": 2, "in_progress": 1, "completed": 1}


def test_services_refuse_another_users_project(three_workspaces, alice):
    bobs_project = three_workspaces["bob"]["projects"][0]
    before = Task.objects.count()
    with pytest.raises(Project.DoesNotExist):
        services.create_task(user=alice, title="sneaky", project_id=bobs_project.pk)
    with pytest.raises(Task.DoesNotExist):
        services.update_task(user=alice, task_id=three_workspaces["bob"]["tasks"][0].pk, status="completed")
    assert Task.objects.count() == before
    assert Task.objects.get(pk=three_workspaces["bob"]["tasks"][0].pk).status == "todo"
