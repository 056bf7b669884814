"""`rebuild_kb_index`: incremental by content hash, atomic, bounded, locked, loud about failures."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from knowledge import locks, selectors, services
from knowledge.models import KnowledgeIndex, KnowledgeSource, SummaryDraft
from tests.knowledge.conftest import build_kb, summary_for, write_sources

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "a.md": "# Alpha\n\nAlpha explains the first thing in detail.\n",
    "b.txt": "Beta notes\n\nBeta explains the second thing.\n",
    "sub/c.rst": "Gamma\n=====\n\nGamma explains the third thing.\n",
    "d.html": "<html><head><title>Delta page</title></head><body><h1>Delta</h1><p>Delta explains the fourth thing.</p></body></html>",
    "ignored.pdf": "not a text source",
    ".hidden/e.md": "# Hidden\n",
}


class CountingSummarizer:
    def __init__(self, fail: set[str] | None = None, delay: float = 0.0):
        self.calls: list[str] = []
        self.fail = fail or set()
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0

    async def __call__(self, *, source_id: str, text: str, timeout_seconds: float) -> str:
        self.calls.append(source_id)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if source_id in self.fail:
                raise RuntimeError(f"model unavailable for {source_id}")
            return summary_for(source_id)
        finally:
            self.in_flight -= 1


@pytest.fixture
def folder(tmp_path):
    return write_sources(tmp_path / "kb", FILES)


def test_first_run_summarises_every_source_and_publishes_the_index(folder):
    summarizer = CountingSummarizer()
    report = build_kb(folder, summarizer=summarizer)

    ids = ["kb/a.md", "kb/b.txt", "kb/d.html", "kb/sub/c.rst"]
    assert sorted(summarizer.calls) == ids and report.summarised == 4 and report.ok and report.index_changed
    index = selectors.current_index()
    titles = dict(KnowledgeSource.objects.values_list("source_id", "title"))
    # Each line gives the selector the page's id, its title and its summary.
    assert index.text == "\n".join(f"{i} — {titles[i]}: Summary of {i}." for i in ids)
    assert index.source_count == 4 and index.summarised_count == 4 and index.failed_count == 0
    assert titles == {"kb/a.md": "Alpha", "kb/b.txt": "Beta notes", "kb/sub/c.rst": "Gamma", "kb/d.html": "Delta page"}
    delta = KnowledgeSource.objects.get(source_id="kb/d.html")
    assert delta.kind == "html" and delta.content.startswith("# Delta\n\nDelta explains") and "<p>" not in delta.content
    assert len(delta.content_hash) == 64 and delta.summary_hash == delta.content_hash


def test_an_unchanged_rerun_summarises_nothing_and_keeps_the_index(folder):
    build_kb(folder)
    first = selectors.current_index()
    summarizer = CountingSummarizer()

    report = build_kb(folder, summarizer=summarizer)

    assert summarizer.calls == [] and report.summarised == 0 and report.reused == 4
    assert report.index_changed is False and selectors.current_index().pk == first.pk


def test_only_new_and_changed_sources_are_summarised_and_deleted_ones_leave_the_index(folder):
    build_kb(folder)
    (folder / "a.md").write_text("# Alpha\n\nAlpha now explains something else.\n")
    (folder / "new.md").write_text("# New\n\nA new page.\n")
    (folder / "b.txt").unlink()
    summarizer = CountingSummarizer()

    report = build_kb(folder, summarizer=summarizer)

    assert sorted(summarizer.calls) == ["kb/a.md", "kb/new.md"]
    assert report.removed == 1 and report.index_changed
    assert not KnowledgeSource.objects.filter(source_id="kb/b.txt").exists()
    assert "kb/b.txt" not in selectors.current_index().text and "kb/new.md — " in selectors.current_index().text
    assert "something else" in KnowledgeSource.objects.get(source_id="kb/a.md").content


def test_force_summarises_everything_again(folder):
    build_kb(folder)
    summarizer = CountingSummarizer()
    build_kb(folder, summarizer=summarizer, force=True)
    assert len(summarizer.calls) == 4


def test_selected_sources_can_be_forced(folder):
    build_kb(folder)
    summarizer = CountingSummarizer()
    build_kb(folder, summarizer=summarizer, force_source_ids=["kb/a.md"])
    assert summarizer.calls == ["kb/a.md"]


def test_a_failed_summary_is_reported_kept_out_of_the_index_and_retried_next_run(folder):
    report = build_kb(folder, summarizer=CountingSummarizer(fail={"kb/b.txt"}))

    assert not report.ok and [f.source_id for f in report.failures] == ["kb/b.txt"]
    assert "model unavailable" in report.failures[0].error
    row = KnowledgeSource.objects.get(source_id="kb/b.txt")
    assert row.summary == "" and "model unavailable" in row.last_summary_error
    index = selectors.current_index()
    assert index.source_count == 3 and "kb/b.txt" not in index.text and index.failed_count == 1
    assert list(selectors.sources_with_failed_summaries().values_list("source_id", flat=True)) == ["kb/b.txt"]

    retry = CountingSummarizer()
    report = build_kb(folder, summarizer=retry)

    assert retry.calls == ["kb/b.txt"] and report.ok
    row.refresh_from_db()
    assert row.summary == "Summary of kb/b.txt." and row.last_summary_error == ""
    assert selectors.current_index().source_count == 4


def test_a_changed_source_whose_new_summary_fails_keeps_its_previous_summary(folder):
    build_kb(folder)
    (folder / "a.md").write_text("# Alpha\n\nChanged.\n")
    build_kb(folder, summarizer=CountingSummarizer(fail={"kb/a.md"}))
    row = KnowledgeSource.objects.get(source_id="kb/a.md")
    assert row.content.startswith("# Alpha\n\nChanged.") and row.summary == "Summary of kb/a.md." and row.last_summary_error
    assert row.summary_hash != row.content_hash  # so the next run tries again
    assert "kb/a.md — Alpha: Summary of kb/a.md." in selectors.current_index().text
    retry = CountingSummarizer()
    build_kb(folder, summarizer=retry)
    assert retry.calls == ["kb/a.md"]


def test_the_old_index_serves_until_the_new_one_is_complete(folder):
    build_kb(folder)
    old = selectors.current_index()
    (folder / "a.md").write_text("# Alpha\n\nEdited.\n")
    seen_during_run = []

    async def peeking_summarizer(*, source_id, text, timeout_seconds):
        index = await sync_to_async(selectors.current_index)()
        content = await sync_to_async(lambda: KnowledgeSource.objects.get(source_id="kb/a.md").content)()
        seen_during_run.append((index.pk, content))
        return "New summary."

    build_kb(folder, summarizer=peeking_summarizer)

    assert seen_during_run == [(old.pk, "# Alpha\n\nAlpha explains the first thing in detail.\n")]
    assert selectors.current_index().pk != old.pk and "kb/a.md — Alpha: New summary." in selectors.current_index().text


def test_a_failure_mid_run_leaves_the_old_index_serving_and_the_next_run_reuses_finished_summaries(folder, monkeypatch):
    build_kb(folder)
    old = selectors.current_index()
    (folder / "a.md").write_text("# Alpha\n\nEdited.\n")
    (folder / "new.md").write_text("# New\n\nNew page.\n")

    def crash(*args, **kwargs):
        raise RuntimeError("database went away while publishing")

    monkeypatch.setattr(KnowledgeIndex.objects, "create", crash)
    first = CountingSummarizer()
    with pytest.raises(RuntimeError, match="went away"):
        build_kb(folder, summarizer=first)

    assert sorted(first.calls) == ["kb/a.md", "kb/new.md"]
    current = selectors.current_index()
    assert current.pk == old.pk and current.text == old.text
    assert not KnowledgeSource.objects.filter(source_id="kb/new.md").exists()  # rows rolled back with the index
    assert "Alpha explains" in KnowledgeSource.objects.get(source_id="kb/a.md").content
    assert SummaryDraft.objects.count() == 2  # the summaries that were paid for survive

    monkeypatch.undo()
    second = CountingSummarizer()
    report = build_kb(folder, summarizer=second)

    assert second.calls == [] and report.reused == 5 and report.ok
    assert "kb/new.md — " in selectors.current_index().text and "Summary of kb/new.md." in selectors.current_index().text
    assert SummaryDraft.objects.count() == 0


def test_summaries_run_with_bounded_concurrency(tmp_path):
    folder = write_sources(tmp_path / "kb", {f"p{i}.md": f"# Page {i}\n\nText {i}.\n" for i in range(9)})
    summarizer = CountingSummarizer(delay=0.02)
    build_kb(folder, summarizer=summarizer, concurrency=3)
    assert len(summarizer.calls) == 9 and summarizer.max_in_flight == 3


def test_one_rebuild_at_a_time(folder):
    with locks.rebuild_lock() as held:
        assert held and selectors.rebuild_in_progress()
        with pytest.raises(services.RebuildAlreadyRunning):
            build_kb(folder)
        with pytest.raises(CommandError, match="Another rebuild"):
            call_command("rebuild_kb_index", stdout=io.StringIO(), stderr=io.StringIO())
    assert not selectors.rebuild_in_progress()
    assert build_kb(folder).ok


def test_the_command_prints_a_progress_bar_and_a_summary(folder, settings):
    settings.KNOWLEDGE_SOURCE_DIRS = [folder]
    out, err = io.StringIO(), io.StringIO()
    call_command("rebuild_kb_index", stdout=out, stderr=err)
    assert "Summarising [" in err.getvalue() and "] 4/4" in err.getvalue()
    assert "4 sources read, 4 summarised, 0 unchanged, 0 removed, 0 failed; new index published (4 sources listed)" in out.getvalue()

    out = io.StringIO()
    call_command("rebuild_kb_index", stdout=out, stderr=io.StringIO())
    assert "0 summarised, 4 unchanged" in out.getvalue() and "index unchanged" in out.getvalue()


def test_the_command_fails_loudly_when_a_source_fails(folder, settings, monkeypatch):
    settings.KNOWLEDGE_SOURCE_DIRS = [folder]
    (folder / "bad.md").write_bytes(b"\xff\xfe not utf-8 \xff")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="1 source\\(s\\) failed; they are retried on the next run"):
        call_command("rebuild_kb_index", stdout=out, stderr=err)
    assert "kb/bad.md: could not read the file" in err.getvalue()
    assert selectors.current_index().source_count == 4  # the readable sources were published


def test_a_missing_folder_stops_the_rebuild_and_keeps_the_index(folder, settings, tmp_path):
    build_kb(folder)
    old = selectors.current_index()
    settings.KNOWLEDGE_SOURCE_DIRS = [tmp_path / "nowhere"]
    with pytest.raises(CommandError, match="does not exist.*current index stays in service"):
        call_command("rebuild_kb_index", stdout=io.StringIO(), stderr=io.StringIO())
    assert selectors.current_index().pk == old.pk and KnowledgeSource.objects.count() == 4


def test_the_process_exit_status_is_non_zero_on_failure(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings_test",
        "DATABASE_NAME": connection.settings_dict["NAME"],
        "KNOWLEDGE_SOURCE_DIRS": str(tmp_path / "missing"),
        "LLM_BASE_URL": "",
        "LLM_API_KEY": "",
    }
    proc = subprocess.run([sys.executable, "manage.py", "rebuild_kb_index"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "does not exist" in proc.stderr


class _Pages(BaseHTTPRequestHandler):
    pages = {
        "/guide.html": (
            "text/html; charset=utf-8",
            "<html><head><title>Web guide</title></head><body><h1>Web guide</h1><p>Served over HTTP.</p></body></html>",
        ),
        "/notes.md": ("text/markdown", "# Notes\n\nMarkdown over HTTP.\n"),
        "/image.png": ("image/png", "\x89PNG"),
    }

    def do_GET(self):
        if self.path not in self.pages:
            self.send_error(404)
            return
        content_type, body = self.pages[self.path]
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_urls_are_fetched_and_failures_reported(tmp_path, web):
    urls = [f"{web}/guide.html", f"{web}/notes.md", f"{web}/missing.html", f"{web}/image.png"]
    report = services.rebuild_kb_index(source_dirs=[], source_urls=urls, summarizer=CountingSummarizer())

    assert sorted(f.source_id for f in report.failures) == [f"{web}/image.png", f"{web}/missing.html"]
    guide = KnowledgeSource.objects.get(source_id=f"{web}/guide.html")
    assert guide.title == "Web guide" and guide.kind == "html" and guide.url == f"{web}/guide.html"
    assert KnowledgeSource.objects.get(source_id=f"{web}/notes.md").kind == "markdown"

    # A URL that fails later keeps its row (and place in the index) and records the error.
    _Pages.pages, saved = {}, _Pages.pages
    try:
        report = services.rebuild_kb_index(source_dirs=[], source_urls=urls[:1], summarizer=CountingSummarizer())
    finally:
        _Pages.pages = saved
    guide.refresh_from_db()
    assert guide.last_summary_error.startswith("could not fetch the URL") and f"{web}/guide.html — " in selectors.current_index().text


def test_up_indexes_the_knowledge_base_and_survives_a_failed_rebuild(monkeypatch, capsys):
    from project.management.commands.up import Command

    calls = []
    monkeypatch.setattr(
        "project.management.commands.up.call_command", lambda name, **kw: calls.append(name) or (_ for _ in ()).throw(CommandError("boom"))
    )
    command = Command(stdout=io.StringIO(), stderr=io.StringIO())
    command._index_knowledge_base()
    assert calls == ["rebuild_kb_index"]
    assert "Knowledge base: rebuild failed (boom); serving with the previous index." in command.stderr._out.getvalue()
