"""Selection pre-filter latency over 10 000 indexed sources: the Postgres full-text ranking
(`knowledge.selectors.rank_sources`) that hands the selector its candidates when the index is too
large for a prompt, and that the offline engine selects with.

    DATABASE_NAME=clarion_bench_kb .venv/bin/python bench/kb_prefilter.py [--sources 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import random
import time

from django.conf import settings
from django.db import connection
from kb_rebuild import VOCABULARY, describe, generated_page, load_average, reset_knowledge_base, setup_database, zipf_words

from knowledge import selectors
from knowledge.models import KnowledgeIndex, KnowledgeSource, content_hash, index_line

# Bump when the generator changes: a stored corpus is reused only if it is this one.
CORPUS = "bench-zipf-v2/"


def load(count: int) -> float:
    """Bulk-insert `count` generated, summarised sources and their index (skipped when present)."""
    if KnowledgeSource.objects.filter(source_id__startswith=CORPUS).count() == count:
        return 0.0
    reset_knowledge_base()
    rng = random.Random(10_000)
    started = time.perf_counter()
    rows = []
    for n in range(count):
        content = generated_page(rng, n)
        summary = f"Explains {' '.join(zipf_words(rng, 3))} for setup {n}; read it when configuring that."
        digest = content_hash(content)
        rows.append(KnowledgeSource(source_id=f"{CORPUS}page-{n:05d}.md", title=content.splitlines()[0][2:], kind="markdown",
                                    content=content, content_hash=digest, summary=summary, summary_hash=digest))  # fmt: skip
        if len(rows) == 1000:
            KnowledgeSource.objects.bulk_create(rows)
            rows = []
    KnowledgeSource.objects.bulk_create(rows)
    text = "\n".join(index_line(s, m) for s, m in KnowledgeSource.objects.order_by("source_id").values_list("source_id", "summary"))
    KnowledgeIndex.objects.create(text=text, source_count=count, is_current=True)
    with connection.cursor() as cursor:
        cursor.execute(f'VACUUM ANALYZE "{KnowledgeSource._meta.db_table}"')
    return time.perf_counter() - started


TEMPLATES = ["how do I set up {} with {}?", "what does {} {} mean?", "why is my {} {} failing?", "can I change the {} of a {}?"]


def questions(n: int, *, ranks: range) -> list[str]:
    """Questions with two topic words drawn from a band of the vocabulary's frequency ranks."""
    rng = random.Random(7)
    band = VOCABULARY[ranks.start : ranks.stop]
    return [rng.choice(TEMPLATES).format(*rng.sample(band, 2)) for _ in range(n)]


def measure(qs: list[str], *, limit: int) -> tuple[dict, float]:
    for q in qs[:10]:
        selectors.rank_sources(query=q, limit=limit)  # warm-up
    timings, returned = [], 0
    for q in qs:
        started = time.perf_counter()
        found = selectors.rank_sources(query=q, limit=limit)
        timings.append((time.perf_counter() - started) * 1000)
        returned += len(found)
    return describe(timings), returned / len(qs)


def matching(q: str) -> int:
    search = selectors.full_text_query(q)
    return KnowledgeSource.objects.filter(search_vector=search).count()


def plan_of(q: str, limit: int) -> str:
    from django.contrib.postgres.search import SearchRank
    from django.db.models import F

    search = selectors.full_text_query(q)
    queryset = (
        KnowledgeSource.objects.filter(search_vector=search)
        .exclude(summary="")
        .annotate(rank=SearchRank(F("search_vector"), search, normalization=1))
        .order_by("-rank", "source_id")
        .values_list("source_id", "title", "summary", "rank")[:limit]
    )  # fmt: skip  (the same query as selectors.rank_sources)
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return " / ".join(r[0].strip() for r in cursor.fetchall() if "Scan" in r[0])


def main(count: int, n_queries: int) -> None:
    setup_database()
    load_seconds = load(count)
    candidates = settings.KNOWLEDGE_PREFILTER_CANDIDATES
    bands = [("typical: topic words of frequency rank 100-5 000", range(100, 5000)),
             ("worst case: the 20 most frequent topic words", range(0, 20))]  # fmt: skip
    rows = []
    for band_label, ranks in bands:
        qs = questions(n_queries, ranks=ranks)
        matches = [matching(q) for q in qs[:100]]
        for label, limit in ((f"pre-filter ({candidates} candidates)", candidates), ("offline selection (4 sources)", 4)):
            stats, avg = measure(qs, limit=limit)
            rows.append((band_label, label, sum(matches) / len(matches), avg, stats))
        rows[-1] = (*rows[-1], plan_of(qs[0], candidates))
    print(f"\nSelection pre-filter over {count} indexed sources ({n_queries} questions per row, two topic words each); "
          f"load {load_seconds:.1f} s (0 = reused); load average {load_average()}\n")  # fmt: skip
    print("| questions | query | sources matching (mean) | returned | p50 ms | p99 ms | max ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for band_label, label, matched, avg, stats, *_ in rows:
        print(f"| {band_label} | {label} | {matched:.0f} | {avg:.1f} | {stats['p50']:.2f} | {stats['p99']:.2f} | {stats['max']:.2f} |")
    for band_label, *_, plan in (r for r in rows if len(r) == 6):
        print(f"\nPlan ({band_label}): {plan}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    main(args.sources, args.queries)
