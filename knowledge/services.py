"""Writes and actions of the knowledge base: answering, summarising, rebuilding the index, tokens.

Public entry points for other apps:
- `answer_from_knowledge_base(question=..., history=..., request_context=...) -> AIResult`
- `generate_reply(conversation=..., context=...) -> AIResult` (the adapter API's contract)
- `summarize_for_kb_index(source_id=..., text=..., timeout_seconds=...) -> str`
- `rebuild_kb_index(...) -> RebuildReport`
"""
from __future__ import annotations

import asyncio
import functools
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Awaitable, Callable, Iterable

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from knowledge import locks, pipeline, selectors
from knowledge.llm_calls import call_model, knowledge_client
from knowledge.models import AdapterToken, AIConfig, KnowledgeIndex, KnowledgeSource, SummaryDraft, index_line
from knowledge.schemas import AIResult, Conversation, RequestContext
from knowledge.sources import SourceDocument, SourceFailure, fetch_urls, read_folders
from knowledge.text import clean_summary, extractive_summary, title_of
from llm import ChatMessage, LLMClient

log = logging.getLogger("clarion.knowledge")

# How much of a source the summariser reads: the opening of a long page says what it is about.
SUMMARY_INPUT_CHARS = 16_000
KEEP_INDEX_BUILDS = 10
DRAFT_FLUSH_EVERY = 25

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
    """Seed 004's adapter contract: the latest user message is the question, the rest is history."""
    return await answer_from_knowledge_base(
        question=conversation.latest_question,
        history=conversation.history(),
        request_context=context.model_dump(),
        client=client,
    )


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
        max_retries = config.max_retries if max_retries is None else max_retries
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
            outcomes = async_to_sync(_summarise_all)(
                jobs,
                summarizer=summarizer,
                config=config,
                concurrency=concurrency or settings.KNOWLEDGE_REBUILD_CONCURRENCY,
                progress=progress,
            )
            for doc, outcome in zip(jobs, outcomes):
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
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _collect(source_dirs: list[Path] | None, source_urls: list[str] | None) -> tuple[list[SourceDocument], list[SourceFailure]]:
    dirs = settings.KNOWLEDGE_SOURCE_DIRS if source_dirs is None else source_dirs
    urls = settings.KNOWLEDGE_SOURCE_URLS if source_urls is None else source_urls
    base_dir = Path(settings.BASE_DIR)
    documents, failures = read_folders([Path(d) for d in dirs], base_dir=base_dir, max_bytes=settings.KNOWLEDGE_MAX_SOURCE_BYTES)
    fetched, fetch_failures = fetch_urls(urls, timeout=settings.KNOWLEDGE_URL_TIMEOUT_SECONDS, max_bytes=settings.KNOWLEDGE_MAX_SOURCE_BYTES)
    return documents + fetched, failures + fetch_failures


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
            max_retries=config.max_retries,
            client=knowledge_client(),
        )
    semaphore = asyncio.Semaphore(max(1, concurrency))
    outcomes: list[str | _Failed] = [_Failed("not run")] * len(jobs)
    pending_drafts: list[SummaryDraft] = []
    counts = {"done": 0, "failed": 0}
    save_drafts = sync_to_async(_save_drafts, thread_sensitive=True)
    report_progress = sync_to_async(progress, thread_sensitive=True) if progress else None

    async def summarise(i: int, doc: SourceDocument) -> None:
        async with semaphore:
            try:
                summary = clean_summary(
                    await summarizer(source_id=doc.source_id, text=doc.content, timeout_seconds=config.llm_timeout_seconds)
                )
                if not summary:
                    raise SummaryError("the summary was empty")
                outcomes[i] = summary
                pending_drafts.append(SummaryDraft(source_id=doc.source_id, content_hash=doc.content_hash, summary=summary))
            except Exception as exc:  # this source's failure only: reported, retried next run
                outcomes[i] = _Failed(str(exc) or type(exc).__name__)
                counts["failed"] += 1
            counts["done"] += 1
            if len(pending_drafts) >= DRAFT_FLUSH_EVERY:
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
    SummaryDraft.objects.bulk_create(
        drafts, update_conflicts=True, unique_fields=["source_id", "content_hash"], update_fields=["summary"]
    )


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
                    )
                )
                continue
            changed = row.content_hash != doc.content_hash or row.title != doc.title or row.kind != doc.kind
            if not changed and summary is None and row.last_summary_error == error:
                continue
            row.title, row.kind, row.content, row.content_hash = doc.title, doc.kind, doc.content, doc.content_hash
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
            ["title", "kind", "content", "content_hash", "summary", "summary_hash", "last_summary_error", "updated_at"],
            batch_size=200,
        )
        present = {doc.source_id for doc in documents} | set(unreadable)
        gone = [row.pk for source_id, row in existing.items() if source_id not in present]
        if gone:
            KnowledgeSource.objects.filter(pk__in=gone).delete()
        report.removed = len(gone)

        lines = [
            index_line(source_id, summary)
            for source_id, summary in KnowledgeSource.objects.exclude(summary="").order_by("source_id").values_list("source_id", "summary")
        ]
        text = "\n".join(lines)
        current = KnowledgeIndex.objects.select_for_update().filter(is_current=True).first()
        if current is not None and current.text == text:
            report.index, report.index_changed = current, False
        else:
            KnowledgeIndex.objects.filter(is_current=True).update(is_current=False)
            report.index = KnowledgeIndex.objects.create(
                text=text,
                source_count=len(lines),
                summarised_count=report.summarised,
                failed_count=len(report.failures),
                build_seconds=round(time.perf_counter() - started, 3),
                is_current=True,
            )
            report.index_changed = True
            stale = KnowledgeIndex.objects.order_by("-built_at", "-id").values_list("pk", flat=True)[KEEP_INDEX_BUILDS:]
            KnowledgeIndex.objects.filter(pk__in=list(stale)).delete()
        SummaryDraft.objects.all().delete()  # published (or superseded) now


def start_rebuild_in_background(*, force: bool = False, force_source_ids: Iterable[str] = ()) -> threading.Thread:
    """For the admin: a web request must not wait for hundreds of model calls."""
    ids = list(force_source_ids)

    def run() -> None:
        try:
            report = rebuild_kb_index(force=force, force_source_ids=ids)
            log.info(
                "kb rebuild finished summarised=%d reused=%d removed=%d failed=%d",
                report.summarised, report.reused, report.removed, len(report.failures),
            )  # fmt: skip
        except RebuildAlreadyRunning:
            log.info("kb rebuild not started: another one is running")
        except Exception:
            log.exception("kb rebuild failed; the previous index stays in service")
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name="kb-rebuild", daemon=True)
    thread.start()
    return thread


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
