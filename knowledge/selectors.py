"""Reads of the knowledge base and the AI configuration.

The knowledge base is shared by every user of the install (it is documentation, not workspace
data), so these functions take no acting user; the source page is still login-protected.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import F, QuerySet, Value
from django.urls import reverse

from knowledge import locks, offline
from knowledge.models import AdapterToken, AIConfig, KnowledgeIndex, KnowledgeSource, index_line
from knowledge.ranking import Corpus, RankedPage


def get_ai_config() -> AIConfig:
    """The single AIConfig row, created with the default prompts and policies on first use."""
    try:
        return AIConfig.objects.get(singleton=True)  # read on every turn: no ORDER BY, no LIMIT
    except AIConfig.DoesNotExist:
        return AIConfig.objects.get_or_create(singleton=True)[0]


async def aget_ai_config() -> AIConfig:
    config = await AIConfig.objects.filter(singleton=True).afirst()
    if config is None:
        config, _ = await AIConfig.objects.aget_or_create(singleton=True)
    return config


def current_index() -> KnowledgeIndex | None:
    return KnowledgeIndex.objects.filter(is_current=True).first()


@dataclass(frozen=True)
class IndexSnapshot:
    pk: int
    source_count: int
    text: str | None  # None when the index is too large for a prompt: the pre-filter is used


_index_text_cache: dict[int, str] = {}


def index_for_pipeline(*, prefilter_threshold: int) -> IndexSnapshot | None:
    """The current index; its text only when it fits the selector's prompt (cached per build)."""
    row = KnowledgeIndex.objects.filter(is_current=True).values("pk", "source_count").first()
    if row is None:
        return None
    if row["source_count"] > prefilter_threshold:
        return IndexSnapshot(pk=row["pk"], source_count=row["source_count"], text=None)
    text = _index_text_cache.get(row["pk"])
    if text is None:
        text = KnowledgeIndex.objects.values_list("text", flat=True).get(pk=row["pk"])
        _index_text_cache.clear()  # only the current build is worth keeping
        _index_text_cache[row["pk"]] = text
    return IndexSnapshot(pk=row["pk"], source_count=row["source_count"], text=text)


@dataclass(frozen=True)
class RankedSource:
    source_id: str
    title: str
    summary: str
    rank: float

    @property
    def index_line(self) -> str:
        return index_line(self.source_id, self.summary, title=self.title)


def full_text_query(question: str) -> SearchQuery | None:
    """Any of the question's lexemes, as Postgres' own parser reads them (so `HTTP/2`, `v3.9` and
    `x-forwarded-for` are looked up whole, as they were indexed); None when there are none."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT string_agg(quote_literal(lexeme), ' | ') FROM unnest(to_tsvector('english', %s))", [question[:2000]])
        (raw,) = cursor.fetchone()
    if not raw:
        return None
    return SearchQuery(raw, search_type="raw", config="english")


def rank_sources(*, query: str, limit: int) -> list[RankedSource]:
    """Indexed sources matching the question in Postgres, best first (title > summary > body).

    Cover density with normalisation 1|4 (log length, mean harmonic distance between matches):
    terms found close together in a page weigh more than the same terms scattered.
    """
    search = full_text_query(query)
    if search is None or limit < 1:
        return []
    rows = (
        KnowledgeSource.objects.filter(search_vector=search)
        .exclude(summary="")
        .annotate(rank=SearchRank(F("search_vector"), search, normalization=Value(1 | 4), cover_density=True))
        .order_by("-rank", "source_id")
        .values_list("source_id", "title", "summary", "rank")[:limit]
    )
    return [RankedSource(*row) for row in rows]


_corpus_cache: dict[int, Corpus] = {}
_corpus_lock = threading.Lock()


def cached_corpus(*, index_pk: int) -> Corpus | None:
    """The statistics of that build if this process has them already (no database access)."""
    return _corpus_cache.get(index_pk)


def search_corpus(*, index_pk: int | None = None) -> Corpus | None:
    """Term statistics of the current index build (BM25 by section), built once per build."""
    if index_pk is None:
        row = KnowledgeIndex.objects.filter(is_current=True).values("pk").first()
        if row is None:
            return None
        index_pk = row["pk"]
    corpus = _corpus_cache.get(index_pk)
    if corpus is None:
        with _corpus_lock:
            corpus = _corpus_cache.get(index_pk)
            if corpus is None:
                pages = list(
                    KnowledgeSource.objects.exclude(summary="")
                    .order_by("source_id")
                    .values_list("source_id", "title", "content", "kind", "pk")
                )
                corpus = Corpus.build(pages)
                offline.analyse_long_pages((content, kind) for _, _, content, kind, _ in pages)
                _corpus_cache.clear()  # only the current build is worth keeping
                _corpus_cache[index_pk] = corpus
    return corpus


def sources_from_corpus(corpus: Corpus, *, source_ids: list[str]) -> dict[str, LoadedSource]:
    """What load_sources returns, from the build's statistics already in memory."""
    found = {}
    for source_id in source_ids:
        if (page := corpus.pages.get(source_id)) is not None:
            pk, title, content, kind = page
            url = source_id if source_id.startswith(("http://", "https://")) else reverse("knowledge:source", args=[pk])
            found[source_id] = LoadedSource(source_id, title, url, content, kind)
    return found


def prefilter_candidates(*, query: str, limit: int) -> list[RankedSource]:
    """The pre-filter of an index too large for the selector's prompt: the best pages by BM25 over
    sections (rare terms weigh most), with their index summaries; Postgres full text without
    ranking statistics."""
    corpus = search_corpus()
    if corpus is None:
        return rank_sources(query=query, limit=limit)
    ranked = corpus.rank(query, limit=limit)
    summaries = dict(KnowledgeSource.objects.filter(source_id__in=[r.source_id for r in ranked]).values_list("source_id", "summary"))
    return [RankedSource(r.source_id, r.title, summaries[r.source_id], r.score) for r in ranked if summaries.get(r.source_id)]


def rank_pages(*, query: str, limit: int) -> list[RankedPage]:
    """The offline engine's selection, and the pre-filter of indexes too large for a prompt:
    BM25 by section over the current build, rare terms weighing most."""
    corpus = search_corpus()
    return corpus.rank(query, limit=limit) if corpus else []


@dataclass(frozen=True)
class LoadedSource:
    source_id: str
    title: str
    url: str
    content: str
    kind: str = "markdown"


def load_sources(*, source_ids: list[str]) -> dict[str, LoadedSource]:
    """Full content of the named sources; a source that no longer exists is simply absent."""
    rows = KnowledgeSource.objects.filter(source_id__in=source_ids).only("pk", "source_id", "title", "content", "kind")
    return {row.source_id: LoadedSource(row.source_id, row.title, row.url, row.content, row.kind) for row in rows}


def source_rows_for_links(*, source_ids: list[str]) -> dict[str, KnowledgeSource]:
    return {
        row.source_id: row for row in KnowledgeSource.objects.filter(source_id__in=source_ids).only("pk", "source_id", "content", "kind")
    }


def page_urls_by_source_ids(*, source_ids: list[str]) -> dict[str, str]:
    return {row.source_id: row.url for row in KnowledgeSource.objects.filter(source_id__in=source_ids).only("pk", "source_id")}


def source_for_page(*, pk: int) -> KnowledgeSource:
    """A source by primary key, or KnowledgeSource.DoesNotExist."""
    return KnowledgeSource.objects.get(pk=pk)


def sources_with_failed_summaries() -> QuerySet[KnowledgeSource]:
    return KnowledgeSource.objects.exclude(last_summary_error="").only(
        "pk", "source_id", "title", "last_summary_error", "summary", "updated_at"
    )


def source_counts() -> dict[str, int]:
    total = KnowledgeSource.objects.count()
    indexed = KnowledgeSource.objects.exclude(summary="").count()
    failed = KnowledgeSource.objects.exclude(last_summary_error="").count()
    return {"total": total, "indexed": indexed, "failed": failed}


def rebuild_in_progress() -> bool:
    return locks.rebuild_lock_is_held()


def hash_token(raw_token: str) -> str:
    return hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def active_adapter_token(*, raw_token: str) -> AdapterToken | None:
    if not raw_token:
        return None
    return AdapterToken.objects.filter(token_hash=hash_token(raw_token), is_active=True).first()


async def aactive_adapter_token(*, raw_token: str) -> AdapterToken | None:
    if not raw_token:
        return None
    return await AdapterToken.objects.filter(token_hash=hash_token(raw_token), is_active=True).afirst()
