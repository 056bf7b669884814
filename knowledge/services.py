"""Writes and actions of the knowledge base: answering, summarising, rebuilding the index, tokens.

Public entry points for other apps:
- `answer_from_knowledge_base(question=..., history=..., request_context=...) -> AIResult`
- `generate_reply(conversation=..., context=...) -> AIResult` (the adapter API's contract)
- `summarize_for_kb_index(source_id=..., text=..., timeout_seconds=...) -> str`
- `rebuild_kb_index(...) -> RebuildReport`
- `request_rebuild(...) -> RebuildJob`, `run_rebuild_job(job_id=...)`: the durable rebuild job
- `add_uploaded_source`, `add_url_source`, `add_folder_source`, `set_added_sources_enabled`,
  `remove_added_sources`: sources managed in the admin
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, TypedDict, Unpack
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from knowledge import links, locks, pipeline, selectors
from knowledge.llm_calls import call_model, knowledge_client
from knowledge.models import AdapterToken, AddedSource, AIConfig, KnowledgeIndex, KnowledgeSource, RebuildJob, SummaryDraft, index_line
from knowledge.schemas import AIResult, Conversation, RequestContext
from knowledge.sources import (
    EXTENSIONS,
    UPLOAD_EXTENSIONS,
    SourceDocument,
    SourceFailure,
    SourceRejected,
    document,
    fetch_url,
    fetch_urls,
    read_folders,
    read_upload,
    unique_documents,
    with_text,
)
from knowledge.text import clean_summary, extractive_summary, normalise_for_match, title_of, units
from llm import ChatMessage, LLMClient

if TYPE_CHECKING:
    from project.users import User

log = logging.getLogger("clarion.knowledge")

# How much of a source the summariser reads: the opening of a long page says what it is about.
SUMMARY_INPUT_CHARS = 16_000
KEEP_INDEX_BUILDS = 10
DRAFT_FLUSH_EVERY = 25
# ...or sooner, once this long has passed since the last save: a rebuild killed mid-way loses at
# most about a second of finished summaries, not a batch of them.
DRAFT_FLUSH_SECONDS = 1.0

# ---------------------------------------------------------------------------- answering


async def answer_from_knowledge_base(
    *,
    question: str,
    history: list[dict] | None = None,
    request_context: dict | None = None,
    client: LLMClient | None = None,
) -> AIResult:
    """Answer from the knowledge base with citations, or decline. Never raises.

    history: earlier messages, oldest first, as {"role": "user"|"assistant", "content": str}
    ("text" is accepted for "content"). request_context: optional platform, channel_id,
    thread_id, message_id, for the logs. The client defaults to the settings' (offline engine
    when no model is configured).
    """
    try:
        client = client or knowledge_client()
    except Exception:
        log.exception("kb: no LLM client")
        return AIResult(should_reply=False, debug={"result": "error", "error": "internal: no LLM client"})
    return await pipeline.run(question=question, history=history, request_context=request_context, client=client)


async def generate_reply(*, conversation: Conversation, context: RequestContext, client: LLMClient | None = None) -> AIResult:
    """The adapter contract: the latest user message is the question, the rest is history."""
    return await answer_from_knowledge_base(
        question=conversation.latest_question,
        history=conversation.history(),
        request_context=context.model_dump(),
        client=client,
    )


def cited_section(*, content: str, kind: str, reply_text: str) -> str:
    """The heading of the first section of a source that the reply quotes ("" when none)."""
    quoted = normalise_for_match(reply_text)
    for unit in units(content, kind=kind):
        if unit.heading and unit.kind in ("sentence", "item") and normalise_for_match(unit.text) in quoted:
            return unit.heading
    return ""


def with_shared_links(*, result: AIResult, request_base: str = "") -> AIResult:
    """The result an adapter gets: citations of Clarion's own pages become absolute, signed,
    expiring links to the cited section, which open without a session (a chat bot's users have
    none). Sources that are URLs already link to themselves."""
    own = {c.source_id for c in result.citations if not c.url.startswith(("http://", "https://"))}
    if not own:
        return result
    loaded = selectors.source_rows_for_links(source_ids=sorted(own))
    citations = []
    for citation in result.citations:
        row = loaded.get(citation.source_id)
        if row is not None:
            section = cited_section(content=row.content, kind=row.kind, reply_text=result.reply_text or "")
            url = links.absolute(links.signed_source_path(pk=row.pk, section=section), request_base=request_base)
            citation = citation.model_copy(update={"url": url})
        citations.append(citation)
    return result.model_copy(update={"citations": citations})


# ---------------------------------------------------------------------------- summaries


class SummaryError(Exception):
    """The summariser produced nothing usable."""


async def summarize_for_kb_index(
    *,
    source_id: str,
    text: str,
    timeout_seconds: float,
    prompt: str | None = None,
    max_retries: int | None = None,
    client: LLMClient | None = None,
) -> str:
    """A short plain-English index entry: what the source covers and when it is relevant.

    Raises (LLMError, SummaryError) on failure; the caller decides what a failure means.
    """
    client = client or knowledge_client()
    if client.is_offline:
        fallback = Path(source_id.rstrip("/")).stem or source_id
        return extractive_summary(title=title_of(text, kind="markdown", fallback=fallback), content=text)
    if prompt is None or max_retries is None:
        config = await selectors.aget_ai_config()
        prompt = config.summarization_prompt if prompt is None else prompt
        max_retries = settings.LLM_MAX_RETRIES if max_retries is None else max_retries
    messages = [
        ChatMessage(role="system", content=prompt),
        ChatMessage(role="user", content=f"Source id: {source_id}\n\n{text[:SUMMARY_INPUT_CHARS]}"),
    ]
    completion = await call_model(
        purpose="summarize",
        make_call=lambda: client.complete(messages, timeout=timeout_seconds),
        timeout_seconds=timeout_seconds,
        max_retries=max_retries,
    )
    summary = clean_summary(completion.content)
    if not summary:
        raise SummaryError("the model returned an empty summary")
    return summary


# ---------------------------------------------------------------------------- rebuilding the index

Summarizer = Callable[..., Awaitable[str]]  # (*, source_id, text, timeout_seconds) -> str


class RebuildAlreadyRunning(Exception):
    pass


@dataclass(frozen=True)
class RebuildProgress:
    total: int  # sources to summarise in this run
    done: int
    failed: int
    source_id: str | None = None
    error: str | None = None


@dataclass
class RebuildReport:
    discovered: int = 0
    summarised: int = 0  # summaries written by the model (or the offline engine) in this run
    reused: int = 0  # unchanged sources, and summaries a previous interrupted run left behind
    removed: int = 0
    failures: list[SourceFailure] = field(default_factory=list)
    index: KnowledgeIndex | None = None
    index_changed: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures


def rebuild_kb_index(
    *,
    force: bool = False,
    force_source_ids: Iterable[str] = (),
    progress: Callable[[RebuildProgress], None] | None = None,
    summarizer: Summarizer | None = None,
    source_dirs: list[Path] | None = None,
    source_urls: list[str] | None = None,
    concurrency: int | None = None,
) -> RebuildReport:
    """Re-read every source, summarise the new and changed ones, publish a new index atomically.

    The current index and source rows stay in service until the new build is complete; then
    rows and index change in one transaction. A source that cannot be read or summarised is
    reported in `failures` and retried by the next run (its previous row, if any, is kept).
    Raises RebuildAlreadyRunning, SourceFolderMissing, or whatever stops the build as a whole.
    Synchronous: call it from a management command, a thread or a sync view.
    """
    started = time.perf_counter()
    with locks.rebuild_lock() as acquired:
        if not acquired:
            raise RebuildAlreadyRunning("Another rebuild of the knowledge-base index is running.")
        config = selectors.get_ai_config()
        documents, failures = _collect(source_dirs, source_urls)
        report = RebuildReport(discovered=len(documents), failures=list(failures))
        existing = {row.source_id: row for row in KnowledgeSource.objects.defer("content", "search_vector")}
        forced = set(force_source_ids)
        drafts = {(d.source_id, d.content_hash): d.summary for d in SummaryDraft.objects.all()}
        summaries: dict[str, str] = {}
        jobs: list[SourceDocument] = []
        for doc in documents:
            row = existing.get(doc.source_id)
            if force or doc.source_id in forced:
                jobs.append(doc)
            elif row is not None and row.summary and row.summary_hash == doc.content_hash:
                report.reused += 1
            elif (doc.source_id, doc.content_hash) in drafts:
                summaries[doc.source_id] = drafts[(doc.source_id, doc.content_hash)]
                report.reused += 1
            else:
                jobs.append(doc)

        errors: dict[str, str] = {}
        if jobs:
            if progress:
                progress(RebuildProgress(total=len(jobs), done=0, failed=0))
            outcomes = async_to_sync(_summarise_all)(
                jobs,
                summarizer=summarizer,
                config=config,
                concurrency=concurrency or settings.KNOWLEDGE_REBUILD_CONCURRENCY,
                progress=progress,
            )
            for doc, outcome in zip(jobs, outcomes, strict=True):
                if isinstance(outcome, _Failed):
                    errors[doc.source_id] = f"could not summarise: {outcome}"
                    report.failures.append(SourceFailure(doc.source_id, errors[doc.source_id]))
                else:
                    summaries[doc.source_id] = outcome
                    report.summarised += 1
        elif progress:
            progress(RebuildProgress(total=0, done=0, failed=0))

        unreadable = {f.source_id: f.error for f in failures}
        _publish(documents, existing, summaries, errors, unreadable, report, started=started)
    _warm_search_corpus()
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _warm_search_corpus() -> None:
    # The ranking statistics of the new build, computed now rather than by the first question
    # (in this process; other processes build theirs on their first question).
    try:
        selectors.search_corpus()
    except Exception:
        log.exception("kb: could not prepare the search statistics of the new index")


def _collect(source_dirs: list[Path] | None, source_urls: list[str] | None) -> tuple[list[SourceDocument], list[SourceFailure]]:
    """The configured folders and URLs, then the enabled sources added in the admin."""
    dirs = settings.KNOWLEDGE_SOURCE_DIRS if source_dirs is None else source_dirs
    urls = settings.KNOWLEDGE_SOURCE_URLS if source_urls is None else source_urls
    base_dir = Path(settings.BASE_DIR)
    max_bytes = settings.KNOWLEDGE_MAX_SOURCE_BYTES
    documents, failures = read_folders([Path(d) for d in dirs], base_dir=base_dir, max_bytes=max_bytes)
    added = list(AddedSource.objects.filter(enabled=True).order_by("pk"))
    added_urls = {a.location: a.pk for a in added if a.kind == AddedSource.Kind.URL}
    fetched, fetch_failures = fetch_urls(
        [*urls, *added_urls], timeout=settings.KNOWLEDGE_URL_TIMEOUT_SECONDS, max_bytes=settings.KNOWLEDGE_MAX_SOURCE_BYTES
    )
    configured_urls = set(urls)
    documents += [d if d.source_id in configured_urls else replace(d, origin=added_urls.get(d.source_id)) for d in fetched]
    failures += fetch_failures
    for source in added:
        if source.kind == AddedSource.Kind.UPLOAD:
            kind = UPLOAD_EXTENSIONS[PurePosixPath(source.location).suffix.lower()]
            doc = document(
                source_id=source.upload_source_id, raw=source.content, kind=kind, fallback_title=PurePosixPath(source.location).stem
            )
            documents.append(replace(doc, origin=source.pk))
        elif source.kind == AddedSource.Kind.FOLDER:
            if not Path(source.location).is_dir():
                failures.append(SourceFailure(source.location, "the folder no longer exists on the server"))
                continue
            found, unreadable = read_folders([Path(source.location)], base_dir=base_dir, max_bytes=max_bytes)
            documents += [replace(d, origin=source.pk) for d in found]
            failures += unreadable
    return unique_documents(documents), failures


async def _summarise_all(
    jobs: list[SourceDocument],
    *,
    summarizer: Summarizer | None,
    config: AIConfig,
    concurrency: int,
    progress: Callable[[RebuildProgress], None] | None,
) -> list[str]:
    """Summaries, or error messages (as _Failed), in job order, at most `concurrency` at once.

    Finished summaries are saved as drafts along the way (on the caller's thread, where the
    database connection lives), so an interrupted rebuild does not pay for them again.
    """
    if summarizer is None:
        summarizer = functools.partial(
            summarize_for_kb_index,
            prompt=config.summarization_prompt,
            max_retries=settings.LLM_MAX_RETRIES,
            client=knowledge_client(),
        )
    semaphore = asyncio.Semaphore(max(1, concurrency))
    outcomes: list[str | _Failed] = [_Failed("not run")] * len(jobs)
    pending_drafts: list[SummaryDraft] = []
    counts = {"done": 0, "failed": 0}
    last_flush = float("-inf")
    save_drafts = sync_to_async(_save_drafts, thread_sensitive=True)
    report_progress = sync_to_async(progress, thread_sensitive=True) if progress else None

    async def summarise(i: int, doc: SourceDocument) -> None:
        nonlocal last_flush
        async with semaphore:
            try:
                summary = clean_summary(
                    await summarizer(source_id=doc.source_id, text=doc.content, timeout_seconds=settings.LLM_TIMEOUT_SECONDS)
                )
                if not summary:
                    raise SummaryError("the summary was empty")
                outcomes[i] = summary
                pending_drafts.append(SummaryDraft(source_id=doc.source_id, content_hash=doc.content_hash, summary=summary))
            except Exception as exc:  # this source's failure only: reported, retried next run
                outcomes[i] = _Failed(str(exc) or type(exc).__name__)
                counts["failed"] += 1
            counts["done"] += 1
            if pending_drafts and (len(pending_drafts) >= DRAFT_FLUSH_EVERY or time.monotonic() - last_flush >= DRAFT_FLUSH_SECONDS):
                last_flush = time.monotonic()
                batch = pending_drafts[:]
                pending_drafts.clear()
                await save_drafts(batch)
            if report_progress:
                failed = outcomes[i] if isinstance(outcomes[i], _Failed) else None
                await report_progress(
                    RebuildProgress(total=len(jobs), done=counts["done"], failed=counts["failed"], source_id=doc.source_id, error=failed)
                )

    try:
        async with asyncio.TaskGroup() as group:
            for i, doc in enumerate(jobs):
                group.create_task(summarise(i, doc))
    finally:
        if pending_drafts:
            await save_drafts(pending_drafts[:])
    return outcomes


class _Failed(str):
    """An error message standing where a summary would be."""


def _save_drafts(drafts: list[SummaryDraft]) -> None:
    SummaryDraft.objects.bulk_create(drafts, update_conflicts=True, unique_fields=["source_id", "content_hash"], update_fields=["summary"])


def _publish(
    documents: list[SourceDocument],
    existing: dict[str, KnowledgeSource],
    summaries: dict[str, str],
    errors: dict[str, str],
    unreadable: dict[str, str],
    report: RebuildReport,
    *,
    started: float,
) -> None:
    now = timezone.now()
    with transaction.atomic():
        # An added source disabled or removed while this build ran stays out: the lock waits for
        # (or holds off) the admin's change, so its pages cannot come back.
        live = set(AddedSource.objects.select_for_update().filter(enabled=True).values_list("pk", flat=True))
        documents = [doc for doc in documents if doc.origin is None or doc.origin in live]
        creates: list[KnowledgeSource] = []
        updates: list[KnowledgeSource] = []
        for doc in documents:
            row = existing.get(doc.source_id)
            summary = summaries.get(doc.source_id)
            error = errors.get(doc.source_id, "")
            if row is None:
                creates.append(
                    KnowledgeSource(
                        source_id=doc.source_id,
                        title=doc.title,
                        kind=doc.kind,
                        content=doc.content,
                        content_hash=doc.content_hash,
                        summary=summary or "",
                        summary_hash=doc.content_hash if summary else "",
                        last_summary_error=error,
                        origin_id=doc.origin,
                    )
                )
                continue
            changed = row.content_hash != doc.content_hash or row.title != doc.title or row.kind != doc.kind or row.origin_id != doc.origin
            if not changed and summary is None and row.last_summary_error == error:
                continue
            row.title, row.kind, row.content, row.content_hash = doc.title, doc.kind, doc.content, doc.content_hash
            row.origin_id = doc.origin
            if summary is not None:
                row.summary, row.summary_hash = summary, doc.content_hash
            # Otherwise the previous summary keeps the source findable until a new one succeeds.
            row.last_summary_error = error
            row.updated_at = now
            updates.append(row)
        for source_id, error in unreadable.items():
            if (row := existing.get(source_id)) is not None:
                row.last_summary_error = error
                row.updated_at = now
                KnowledgeSource.objects.filter(pk=row.pk).update(last_summary_error=error, updated_at=now)
        KnowledgeSource.objects.bulk_create(creates, batch_size=500)
        KnowledgeSource.objects.bulk_update(
            updates,
            ["title", "kind", "content", "content_hash", "summary", "summary_hash", "last_summary_error", "origin", "updated_at"],
            batch_size=200,
        )
        present = {doc.source_id for doc in documents} | set(unreadable)
        gone = [row.pk for source_id, row in existing.items() if source_id not in present]
        if gone:
            KnowledgeSource.objects.filter(pk__in=gone).delete()
        report.removed = len(gone)
        report.index, report.index_changed = _publish_index(
            summarised=report.summarised, failed=len(report.failures), seconds=time.perf_counter() - started
        )
        SummaryDraft.objects.all().delete()  # published (or superseded) now


def _publish_index(*, summarised: int, failed: int, seconds: float) -> tuple[KnowledgeIndex, bool]:
    """A new current index listing the source rows as they are now (in the caller's transaction),
    unless its text would not change. Returns it and whether it is new."""
    lines = [
        index_line(source_id, summary, title=title)
        for source_id, summary, title in KnowledgeSource.objects.exclude(summary="")
        .order_by("source_id")
        .values_list("source_id", "summary", "title")
    ]
    text = "\n".join(lines)
    current = KnowledgeIndex.objects.select_for_update().filter(is_current=True).first()
    if current is not None and current.text == text:
        return current, False
    KnowledgeIndex.objects.filter(is_current=True).update(is_current=False)
    index = KnowledgeIndex.objects.create(
        text=text,
        source_count=len(lines),
        summarised_count=summarised,
        failed_count=failed,
        build_seconds=round(seconds, 3),
        is_current=True,
    )
    stale = KnowledgeIndex.objects.order_by("-built_at", "-id").values_list("pk", flat=True)[KEEP_INDEX_BUILDS:]
    KnowledgeIndex.objects.filter(pk__in=list(stale)).delete()
    return index, True


# ---------------------------------------------------------------------------- rebuild jobs
#
# The admin and `manage.py rebuild_kb_index` ask for a rebuild by creating a RebuildJob row; a
# runner (a thread of the web process for the admin, the command itself otherwise) claims it
# with a conditional UPDATE and writes its progress and a heartbeat there. Any process reads the
# row to report the build; a job whose heartbeat stopped while the rebuild lock is free belonged
# to a process that died, and is marked failed. Finished summaries survive in SummaryDraft, so
# the next rebuild resumes where the dead one stopped instead of paying for them again.

# How often a running job writes its heartbeat and, at most, its progress.
HEARTBEAT_SECONDS = 5.0
PROGRESS_WRITE_SECONDS = 0.5


def _request_key() -> int:
    return locks.REBUILD_LOCK_KEY ^ 0x5EED  # another key: serialises requests, not rebuilds


def request_rebuild(
    *, user: User | None = None, force: bool = False, force_source_ids: Iterable[str] = (), via: str = "admin"
) -> RebuildJob:
    """Queue a rebuild. Raises RebuildAlreadyRunning when one is queued or running (and alive)."""
    fail_stale_rebuild_jobs()
    with transaction.atomic():
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_request_key()])
        active = RebuildJob.objects.filter(status__in=[RebuildJob.Status.QUEUED, RebuildJob.Status.RUNNING]).first()
        if active is not None:
            raise RebuildAlreadyRunning(f"A rebuild of the knowledge-base index is already {active.status} (#{active.pk}).")
        return RebuildJob.objects.create(
            requested_by=user if user is not None and user.is_authenticated else None,
            requested_via=via,
            force=force,
            force_source_ids=sorted(set(force_source_ids)),
        )


def fail_stale_rebuild_jobs(*, stale_after: float | None = None) -> int:
    """Mark failed the jobs whose process died: no heartbeat for `stale_after` seconds and no
    process holding the rebuild lock. Returns how many were marked."""
    stale_after = settings.KNOWLEDGE_REBUILD_STALE_SECONDS if stale_after is None else stale_after
    cutoff = timezone.now() - timedelta(seconds=stale_after)
    running = RebuildJob.objects.filter(status=RebuildJob.Status.RUNNING, heartbeat_at__lt=cutoff)
    never_started = RebuildJob.objects.filter(status=RebuildJob.Status.QUEUED, created_at__lt=cutoff)
    if not (running.exists() or never_started.exists()) or locks.rebuild_lock_is_held():
        return 0
    now = timezone.now()
    marked = running.update(
        status=RebuildJob.Status.FAILED,
        finished_at=now,
        error="The process running this rebuild stopped (no heartbeat). The current index stayed in service; "
        "summaries it had finished are kept and reused by the next rebuild.",
    )
    marked += never_started.update(
        status=RebuildJob.Status.FAILED,
        finished_at=now,
        error="No process picked this rebuild up. Start it again.",
    )
    if marked:
        log.warning("kb rebuild: %d job(s) marked failed after their process stopped", marked)
    return marked


class RebuildOptions(TypedDict, total=False):
    """What a job's runner may pass on to `rebuild_kb_index` besides the job's own settings."""

    summarizer: Summarizer | None
    source_dirs: list[Path] | None
    source_urls: list[str] | None
    concurrency: int | None


def run_rebuild_job(
    *, job_id: int, progress: Callable[[RebuildProgress], None] | None = None, **rebuild_options: Unpack[RebuildOptions]
) -> RebuildReport:
    """Claim a queued job and run it here, recording progress, heartbeat and outcome on its row.

    Raises RebuildAlreadyRunning if the job is not queued any more (another runner has it) or
    another rebuild holds the lock; otherwise whatever `rebuild_kb_index` raises, after the job
    is marked failed with it.
    """
    now = timezone.now()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    claimed = RebuildJob.objects.filter(pk=job_id, status=RebuildJob.Status.QUEUED).update(
        status=RebuildJob.Status.RUNNING, started_at=now, heartbeat_at=now, worker=worker
    )
    if not claimed:
        raise RebuildAlreadyRunning(f"Rebuild #{job_id} is not waiting to run.")
    job = RebuildJob.objects.get(pk=job_id)
    heartbeat = _Heartbeat(job_id)
    heartbeat.start()

    def record(step: RebuildProgress) -> None:
        # Written at most every PROGRESS_WRITE_SECONDS (and the last step at once); the heartbeat
        # writes a step that was held back, so a slow summary never hides the count before it.
        heartbeat.latest = step
        if step.done == step.total or time.monotonic() - heartbeat.written_at >= PROGRESS_WRITE_SECONDS:
            heartbeat.write()
        if progress is not None:
            progress(step)

    try:
        report = rebuild_kb_index(force=job.force, force_source_ids=job.force_source_ids, progress=record, **rebuild_options)
    except BaseException as exc:
        error = str(exc) or type(exc).__name__
        if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit
            error = "The rebuild was interrupted."
        _finish(job_id, status=RebuildJob.Status.FAILED, error=f"{error} The current index stays in service.")
        raise
    finally:
        heartbeat.stop()
    errors = "\n".join(f"{f.source_id}: {f.error}" for f in report.failures)
    _finish(job_id, status=RebuildJob.Status.SUCCEEDED, outcome=describe_report(report), error=errors)
    return report


def describe_report(report: RebuildReport) -> str:
    index = report.index
    state = "new index published" if report.index_changed else "index unchanged"
    return (
        f"{report.discovered} sources read, {report.summarised} summarised, {report.reused} unchanged, "
        f"{report.removed} removed, {len(report.failures)} failed; {state} "
        f"({index.source_count if index else 0} sources listed) in {report.seconds:.1f} s."
    )


def _finish(job_id: int, *, status: str, outcome: str = "", error: str = "") -> None:
    now = timezone.now()
    RebuildJob.objects.filter(pk=job_id).update(status=status, finished_at=now, heartbeat_at=now, outcome=outcome, error=error)


class _Heartbeat:
    """Writes the job's heartbeat (and its latest progress) from a thread of its own, since one
    summary may take minutes."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.latest: RebuildProgress | None = None
        self.written: RebuildProgress | None = None
        self.written_at = 0.0
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"kb-rebuild-heartbeat-{job_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()

    def write(self) -> None:
        with self.lock:
            fields: dict = {"heartbeat_at": timezone.now()}
            step = self.latest
            if step is not None and step != self.written:
                fields.update(total=step.total, done=step.done, failed=step.failed, current_source=step.source_id or "")
            RebuildJob.objects.filter(pk=self.job_id, status=RebuildJob.Status.RUNNING).update(**fields)
            self.written, self.written_at = step, time.monotonic()

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(HEARTBEAT_SECONDS):
                self.write()
        except Exception:
            log.exception("kb rebuild heartbeat of job %s failed", self.job_id)
        finally:
            connections.close_all()


def run_rebuild_job_in_background(*, job_id: int) -> threading.Thread:
    """For the admin: a web request must not wait for hundreds of model calls. If this process
    dies, the job's heartbeat stops and the admin reports it (see fail_stale_rebuild_jobs)."""

    def run() -> None:
        try:
            report = run_rebuild_job(job_id=job_id)
            log.info(
                "kb rebuild #%s finished summarised=%d reused=%d removed=%d failed=%d",
                job_id, report.summarised, report.reused, report.removed, len(report.failures),
            )  # fmt: skip
        except RebuildAlreadyRunning as exc:
            log.info("kb rebuild #%s not run: %s", job_id, exc)
        except Exception:
            log.exception("kb rebuild #%s failed; the previous index stays in service", job_id)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name=f"kb-rebuild-{job_id}", daemon=True)
    thread.start()
    return thread


# ---------------------------------------------------------------------------- sources added in the admin
#
# Adding checks the source now (readable, not too large, has text, not already a source) and
# stores it; the caller then queues a rebuild, which indexes only what is new. Disabling or
# removing withdraws the source's pages and republishes the index in one transaction, so answers
# stop citing it at once, without waiting for a rebuild.

MAX_UPLOAD_NAME = 200


def add_uploaded_source(*, user: User, name: str, data: bytes) -> AddedSource:
    """Raises SourceRejected (nothing written) for a file that cannot be a source."""
    name = PurePosixPath(name.replace("\\", "/")).name.strip()
    if not name or len(name) > MAX_UPLOAD_NAME:
        raise SourceRejected(f"The file needs a name of at most {MAX_UPLOAD_NAME} characters.")
    text, doc = read_upload(name=name, data=data, max_bytes=settings.KNOWLEDGE_MAX_SOURCE_BYTES)
    return _add(
        user=user, kind=AddedSource.Kind.UPLOAD, location=name, what=f"A file named “{name}”",
        source_id=doc.source_id, content=text, content_hash=doc.content_hash,
    )  # fmt: skip


def add_url_source(*, user: User, url: str) -> AddedSource:
    """Fetches the URL now; raises SourceRejected (nothing written) when it cannot be a source."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SourceRejected(f"“{url}” is not an http(s) URL.")
    if url in settings.KNOWLEDGE_SOURCE_URLS:
        raise SourceRejected(f"The URL {url} is already a source, from the configuration (KNOWLEDGE_SOURCE_URLS).")
    timeout = settings.KNOWLEDGE_URL_TIMEOUT_SECONDS
    try:
        doc = fetch_url(url, timeout=timeout, max_bytes=settings.KNOWLEDGE_MAX_SOURCE_BYTES)
    except HTTPError as exc:
        raise SourceRejected(f"The URL {url} answered HTTP {exc.code} ({exc.reason}).") from None
    except (TimeoutError, socket.timeout):
        raise SourceRejected(f"The URL {url} did not answer within {timeout:g} s (KNOWLEDGE_URL_TIMEOUT_SECONDS).") from None
    except URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise SourceRejected(f"The URL {url} did not answer within {timeout:g} s (KNOWLEDGE_URL_TIMEOUT_SECONDS).") from None
        raise SourceRejected(f"The URL {url} could not be reached: {exc.reason}.") from None
    except (OSError, ValueError) as exc:
        raise SourceRejected(f"The URL {url} cannot be used: {exc}.") from None
    with_text(doc, what=f"The page at {url}")
    return _add(user=user, kind=AddedSource.Kind.URL, location=url, what=f"The URL {url}", source_id=url, content_hash=doc.content_hash)


def add_folder_source(*, user: User, path: str) -> AddedSource:
    """A folder on the server, read like KNOWLEDGE_SOURCE_DIRS; superusers only, since it exposes
    the server's files to everyone who asks. Raises SourceRejected (nothing written)."""
    if not user.is_superuser:
        raise SourceRejected("Only a superuser can add a folder of the server.")
    folder = Path(path.strip()).expanduser()
    if not path.strip():
        raise SourceRejected("Give the folder's path.")
    if not folder.is_absolute():
        folder = Path(settings.BASE_DIR) / folder
    folder = folder.resolve()
    if not folder.is_dir():
        raise SourceRejected(f"{folder} is not a folder on the server.")
    if folder in {Path(d).resolve() for d in settings.KNOWLEDGE_SOURCE_DIRS}:
        raise SourceRejected(f"{folder} is already a source, from the configuration (KNOWLEDGE_SOURCE_DIRS).")
    documents, _ = read_folders([folder], base_dir=Path(settings.BASE_DIR), max_bytes=settings.KNOWLEDGE_MAX_SOURCE_BYTES)
    if not documents:
        raise SourceRejected(f"{folder} has no readable {', '.join(sorted(EXTENSIONS))} files.")
    return _add(user=user, kind=AddedSource.Kind.FOLDER, location=str(folder), what=str(folder))


def _add(*, user: User, kind: str, location: str, what: str, source_id: str = "", content: str = "", content_hash: str = "") -> AddedSource:
    with transaction.atomic():
        if AddedSource.objects.filter(location=location).exists() or (
            source_id and KnowledgeSource.objects.filter(source_id=source_id).exists()
        ):
            raise SourceRejected(f"{what} is already a source.")
        if content_hash:
            same = (
                KnowledgeSource.objects.filter(content_hash=content_hash).values_list("source_id", flat=True).first()
                or AddedSource.objects.filter(content_hash=content_hash).values_list("location", flat=True).first()
            )
            if same:
                raise SourceRejected(f"{what} has the same content as {same}, which is already a source.")
        try:
            with transaction.atomic():
                added = AddedSource.objects.create(kind=kind, location=location, content=content, content_hash=content_hash, added_by=user)
        except IntegrityError:  # added at the same moment by someone else
            raise SourceRejected(f"{what} is already a source.") from None
    log.info("kb: %s added %s source %s", user.get_username(), kind, location)
    return added


def set_added_sources_enabled(*, user: User, source_ids: list[int], enabled: bool) -> int:
    """Enable or disable added sources; a disabled one's pages leave the index at once (enabling
    needs a rebuild to index them again). Returns how many changed."""
    with transaction.atomic():
        changing = list(AddedSource.objects.select_for_update().filter(pk__in=source_ids, enabled=not enabled).values_list("pk", flat=True))
        AddedSource.objects.filter(pk__in=changing).update(enabled=enabled)
        if not enabled:
            _withdraw_pages(origin_ids=changing)
    log.info("kb: %s %s added sources %s", user.get_username(), "enabled" if enabled else "disabled", changing)
    return len(changing)


def remove_added_sources(*, user: User, source_ids: list[int]) -> int:
    """Delete added sources and their pages; the index is republished without them at once."""
    with transaction.atomic():
        removing = list(AddedSource.objects.select_for_update().filter(pk__in=source_ids).values_list("pk", flat=True))
        _withdraw_pages(origin_ids=removing)
        AddedSource.objects.filter(pk__in=removing).delete()
    log.info("kb: %s removed added sources %s", user.get_username(), removing)
    return len(removing)


def _withdraw_pages(*, origin_ids: list[int]) -> None:
    started = time.perf_counter()
    deleted, _ = KnowledgeSource.objects.filter(origin_id__in=origin_ids).delete()
    if deleted:
        _publish_index(summarised=0, failed=0, seconds=time.perf_counter() - started)


# ---------------------------------------------------------------------------- adapter tokens

TOKEN_PREFIX = "clk_"


def new_adapter_token_value() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_adapter_token(*, name: str) -> tuple[AdapterToken, str]:
    """A new token; the raw value is returned once and only its hash is stored."""
    raw = new_adapter_token_value()
    token = AdapterToken.objects.create(name=name, token_hash=selectors.hash_token(raw), prefix=raw[:10])
    return token, raw


USE_RECORD_INTERVAL = timedelta(minutes=1)


async def arecord_adapter_token_use(*, token: AdapterToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > USE_RECORD_INTERVAL:
        await AdapterToken.objects.filter(pk=token.pk).aupdate(last_used_at=now)


def deactivate_adapter_tokens(*, token_ids: list[int]) -> int:
    """Switch tokens off (kept for the record); returns how many were active."""
    return AdapterToken.objects.filter(pk__in=token_ids, is_active=True).update(is_active=False)
