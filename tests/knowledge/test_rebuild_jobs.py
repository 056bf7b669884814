"""The index rebuild as a durable job: requested from the admin or the command, run by any
process, its progress and outcome on a row the admin shows, a dead runner reported."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections
from django.utils import timezone

from knowledge import locks, selectors, services
from knowledge.models import KnowledgeIndex, RebuildJob, SummaryDraft
from tests.fake_openai import FakeOpenAI, Reply
from tests.knowledge.conftest import summary_for, wait_until, write_sources

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
STATUS_URL = "/admin/knowledge/knowledgeindex/rebuild/status/"
INDEX_URL = "/admin/knowledge/knowledgeindex/"


@pytest.fixture
def kb_folder(tmp_path, settings):
    folder = write_sources(
        tmp_path / "kb", {"a.md": "# A\n\nAlpha explains things.\n", "b.md": "# B\n\nBeta.\n", "c.md": "# C\n\nGamma.\n"}
    )
    settings.KNOWLEDGE_SOURCE_DIRS = [folder]
    return folder


@pytest.mark.django_db(transaction=True)
def test_the_admin_button_queues_a_job_that_a_runner_completes_and_the_page_shows_the_outcome(admin_client, root, kb_folder):
    response = admin_client.post("/admin/knowledge/knowledgeindex/rebuild/", follow=True)

    job = RebuildJob.objects.get(requested_by=root)
    assert job.requested_by == root and job.requested_via == "admin" and job.force_source_ids == []
    assert f"Rebuild #{job.pk} started" in response.content.decode()
    wait_until(lambda: RebuildJob.objects.get(pk=job.pk).status == RebuildJob.Status.SUCCEEDED, what="the rebuild to finish")

    job.refresh_from_db()
    assert job.started_at and job.finished_at and job.worker.endswith(f":{os.getpid()}")
    assert (job.total, job.done, job.failed) == (3, 3, 0)
    assert "3 sources read, 3 summarised" in job.outcome and "new index published" in job.outcome
    assert KnowledgeIndex.objects.get(is_current=True).source_count == 3

    html = admin_client.get(INDEX_URL).content.decode()  # after a reload
    assert f"Rebuild #{job.pk} finished" in html and "requested by root" in html and job.outcome in html
    assert 'hx-trigger="every' not in html  # nothing left to poll
    assert admin_client.get("/admin/knowledge/knowledgeindex/rebuild/").status_code == 405


@pytest.mark.django_db(transaction=True)
def test_a_running_build_shows_its_progress_and_the_page_polls_until_it_ends(admin_client, root, kb_folder, monkeypatch):
    monkeypatch.setattr(services, "HEARTBEAT_SECONDS", 0.1)
    release = threading.Event()

    async def summarizer(*, source_id, text, timeout_seconds):
        if source_id == "kb/b.md":
            await asyncio.to_thread(release.wait, 30)
        return summary_for(source_id)

    job = services.request_rebuild(user=root)

    def run() -> None:
        try:
            services.run_rebuild_job(job_id=job.pk, summarizer=summarizer, concurrency=1, source_dirs=[kb_folder])
        finally:
            connections.close_all()

    runner = threading.Thread(target=run)
    runner.start()
    try:
        # kb/a.md is done and kb/b.md hangs: the page shows 1 of 3 while it waits.
        def status_at_one_of_three():
            html = admin_client.get(STATUS_URL).content.decode()
            return html if "1 of 3 sources summarised" in html else None

        html = wait_until(status_at_one_of_three, what="progress 1/3")
        assert f"Rebuild #{job.pk} is running" in html and "requested by root" in html
        assert '<progress max="3" value="1">' in html and f'hx-get="{STATUS_URL}"' in html and 'hx-trigger="every 2s"' in html

        page = admin_client.get(INDEX_URL).content.decode()
        assert 'id="kb-rebuild-status"' in page and "1 of 3 sources summarised" in page
        assert 'value="Rebuild index"' not in page  # no second build while this one runs
        assert "<script>" not in page and "htmx-2.0.11.min.js" in page

        refused = admin_client.post("/admin/knowledge/knowledgeindex/rebuild/", follow=True).content.decode()
        assert "already running" in refused and RebuildJob.objects.filter(requested_by=root).count() == 1
    finally:
        release.set()
        runner.join(30)

    html = admin_client.get(STATUS_URL).content.decode()
    assert f"Rebuild #{job.pk} finished" in html and "3 summarised" in html and "Reload to see the new index" in html
    assert "hx-trigger" not in html


def test_the_resummarise_action_queues_a_job_for_the_selected_sources(admin_client, kb_folder, monkeypatch):
    from tests.knowledge.conftest import build_kb

    build_kb(kb_folder)
    from knowledge.models import KnowledgeSource

    started = []
    monkeypatch.setattr(services, "run_rebuild_job_in_background", lambda *, job_id: started.append(job_id))
    pk = KnowledgeSource.objects.get(source_id="kb/b.md").pk
    response = admin_client.post("/admin/knowledge/knowledgesource/", {"action": "resummarise_and_rebuild", "_selected_action": [pk]})

    job = RebuildJob.objects.first()
    assert response.status_code == 302 and response["Location"] == INDEX_URL  # straight to the progress
    assert started == [job.pk] and job.force_source_ids == ["kb/b.md"] and job.status == RebuildJob.Status.QUEUED
    assert "re-summarising 1 selected source" in admin_client.get(INDEX_URL).content.decode()


def test_the_status_partial_needs_an_admin(client, admin_client, make_user):
    assert client.get(STATUS_URL).status_code == 302  # to the admin login
    assert admin_client.get(STATUS_URL).status_code == 200
    user = make_user("mallory")
    user.is_staff = True
    user.save()
    client.force_login(user)
    assert client.get(STATUS_URL).status_code == 403


def test_a_job_whose_process_died_is_reported_failed(admin_client):
    job = RebuildJob.objects.create(
        status=RebuildJob.Status.RUNNING,
        total=10,
        done=4,
        worker="gone:4242",
        started_at=timezone.now(),
        heartbeat_at=timezone.now() - dt.timedelta(minutes=5),
    )

    html = admin_client.get(INDEX_URL).content.decode()

    job.refresh_from_db()
    assert job.status == RebuildJob.Status.FAILED and job.finished_at is not None
    assert f"Rebuild #{job.pk} failed" in html and "process running this rebuild stopped" in html
    assert 'value="Rebuild index"' in html  # and a new one can be started
    out = io.StringIO()
    call_command("rebuild_kb_index", "--status", stdout=out)
    assert f"Rebuild #{job.pk}: failed" in out.getvalue() and "no heartbeat" in out.getvalue()


def test_a_silent_job_is_not_declared_dead_while_a_process_holds_the_rebuild_lock(db):
    job = RebuildJob.objects.create(status=RebuildJob.Status.RUNNING, heartbeat_at=timezone.now() - dt.timedelta(minutes=5))
    with locks.rebuild_lock() as held:
        assert held and services.fail_stale_rebuild_jobs() == 0
    assert RebuildJob.objects.get(pk=job.pk).status == RebuildJob.Status.RUNNING
    fresh = RebuildJob.objects.create(status=RebuildJob.Status.RUNNING, heartbeat_at=timezone.now())
    assert services.fail_stale_rebuild_jobs() == 1  # only the silent one
    assert RebuildJob.objects.get(pk=fresh.pk).status == RebuildJob.Status.RUNNING


def test_the_command_runs_as_a_job_too(kb_folder):
    out = io.StringIO()
    call_command("rebuild_kb_index", stdout=out, stderr=io.StringIO())
    job = RebuildJob.objects.first()
    assert job.requested_via == "command" and job.requested_by is None and job.status == RebuildJob.Status.SUCCEEDED
    assert job.outcome in out.getvalue()
    status = io.StringIO()
    call_command("rebuild_kb_index", "--status", stdout=status)
    assert f"Rebuild #{job.pk}: finished" in status.getvalue() and job.outcome in status.getvalue()


def test_a_failed_build_records_why(kb_folder, settings, tmp_path):
    settings.KNOWLEDGE_SOURCE_DIRS = [tmp_path / "nowhere"]
    with pytest.raises(CommandError, match="does not exist"):
        call_command("rebuild_kb_index", stdout=io.StringIO(), stderr=io.StringIO())
    job = RebuildJob.objects.first()
    assert job.status == RebuildJob.Status.FAILED and "does not exist" in job.error and "current index stays in service" in job.error


def test_a_job_runs_once(kb_folder):
    job = services.request_rebuild(user=None, via="command")
    services.run_rebuild_job(job_id=job.pk)
    with pytest.raises(services.RebuildAlreadyRunning, match="not waiting to run"):
        services.run_rebuild_job(job_id=job.pk)


@pytest.mark.django_db(transaction=True)
def test_a_killed_rebuild_process_is_detected_and_the_next_build_resumes_from_its_summaries(kb_folder):
    """A real `manage.py rebuild_kb_index` is killed mid-build (SIGKILL: no cleanup runs)."""
    with FakeOpenAI(default=Reply.text("too slow", delay=60)) as model:
        model.script(Reply.text("A one-line summary of alpha."))  # the first source; the others hang
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "project.settings_test",
            "DATABASE_NAME": connection.settings_dict["NAME"],
            "KNOWLEDGE_SOURCE_DIRS": str(kb_folder),
            "KNOWLEDGE_REBUILD_CONCURRENCY": "1",
            "LLM_BASE_URL": model.base_url,
            "LLM_API_KEY": "sk-test",
        }
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "rebuild_kb_index"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            job = wait_until(
                lambda: RebuildJob.objects.filter(status=RebuildJob.Status.RUNNING, done=1).first(), timeout=60, what="the first summary"
            )
            wait_until(lambda: SummaryDraft.objects.exists(), timeout=30, what="the first summary's draft")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)

    assert services.fail_stale_rebuild_jobs(stale_after=60) == 0  # its last heartbeat is recent
    # Postgres releases the dead session's rebuild lock; then the silent job is declared dead.
    wait_until(lambda: not selectors.rebuild_in_progress(), timeout=30, what="the dead process's lock to go")
    assert services.fail_stale_rebuild_jobs(stale_after=0) == 1
    job.refresh_from_db()
    assert job.status == RebuildJob.Status.FAILED and "no heartbeat" in job.error

    calls = []

    async def summarizer(*, source_id, text, timeout_seconds):
        calls.append(source_id)
        return summary_for(source_id)

    resumed = services.request_rebuild(user=None, via="command")
    report = services.run_rebuild_job(job_id=resumed.pk, summarizer=summarizer, source_dirs=[kb_folder])
    assert sorted(calls) == ["kb/b.md", "kb/c.md"] and report.reused == 1  # alpha's summary was kept
    assert "A one-line summary of alpha." in selectors.current_index().text
