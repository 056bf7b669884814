"""Reads of the knowledge base and the AI configuration.

The knowledge base is shared by every user of the install (it is documentation, not workspace
data), so these functions take no acting user; the source page is still login-protected.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db.models import F, QuerySet

from knowledge import locks
from django.conf import settings

from knowledge.models import AdapterToken, AIConfig, KnowledgeIndex, KnowledgeSource, index_line
from knowledge.text import search_words


def _initial_values() -> dict:
    """The environment's question settings seed a new AIConfig row; after that, admin edits rule."""
    timeouts = settings.QUESTION_TIMEOUTS
    return {
        "question_timeout_low_seconds": timeouts["low"],
        "question_timeout_medium_seconds": timeouts["medium"],
        "question_timeout_high_seconds": timeouts["high"],
        "ask_timeout_seconds": timeouts["ask"],
        "clarification_threshold": settings.CLARIFICATION_THRESHOLD,
    }


def get_ai_config() -> AIConfig:
    """The single AIConfig row, created with the default prompts and policies on first use."""
    config = AIConfig.objects.filter(singleton=True).first()
    if config is None:
        config, _ = AIConfig.objects.get_or_create(singleton=True, defaults=_initial_values())
    return config


async def aget_ai_config() -> AIConfig:
    config = await AIConfig.objects.filter(singleton=True).afirst()
    if config is None:
        config, _ = await AIConfig.objects.aget_or_create(singleton=True, defaults=_initial_values())
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
        return index_line(self.source_id, self.summary)


def full_text_query(question: str) -> SearchQuery | None:
    """Any of the question's content words (Postgres stems them); None when there are none."""
    found = search_words(question)
    if not found:
        return None
    return SearchQuery(" | ".join(found), search_type="raw", config="english")


def rank_sources(*, query: str, limit: int) -> list[RankedSource]:
    """Indexed sources matching the question, best first (title > summary > body matches).

    The pre-filter of large indexes and the offline engine's selection both use this.
    """
    search = full_text_query(query)
    if search is None or limit < 1:
        return []
    rows = (
        KnowledgeSource.objects.filter(search_vector=search)
        .exclude(summary="")
        # Normalisation 1 divides by 1 + log(length), so a long page does not win on bulk alone.
        .annotate(rank=SearchRank(F("search_vector"), search, normalization=1))
        .order_by("-rank", "source_id")
        .values_list("source_id", "title", "summary", "rank")[:limit]
    )
    return [RankedSource(*row) for row in rows]


@dataclass(frozen=True)
class LoadedSource:
    source_id: str
    title: str
    url: str
    content: str


def load_sources(*, source_ids: list[str]) -> dict[str, LoadedSource]:
    """Full content of the named sources; a source that no longer exists is simply absent."""
    rows = KnowledgeSource.objects.filter(source_id__in=source_ids).only("pk", "source_id", "title", "content")
    return {row.source_id: LoadedSource(row.source_id, row.title, row.url, row.content) for row in rows}


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
