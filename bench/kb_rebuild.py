"""Knowledge-base rebuild of 1 000 generated sources: first run vs. unchanged re-run (and a run
with 10 changed files), with the fake OpenAI-compatible model at zero delay (real SDK, real HTTP)
and with the offline engine.

    DATABASE_NAME=clarion_bench_kb .venv/bin/python bench/kb_rebuild.py [--sources 1000] [--concurrency 4 16]

It is also where the other knowledge-base benchmarks (kb_prefilter.py, kb_pipeline.py) get their
shared set-up: Django on the dedicated database, the generated corpus, percentiles.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("DATABASE_NAME", "clarion_bench_kb")
os.environ.setdefault("LOG_LEVEL", "WARNING")
if "bench" not in os.environ["DATABASE_NAME"]:
    sys.exit("refusing to run: DATABASE_NAME must contain 'bench' (the benchmark wipes knowledge-base tables)")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from query_tools import ensure_database  # noqa: E402

from knowledge import services  # noqa: E402
from tests.fake_openai import FakeOpenAI, Reply  # noqa: E402

WORDS = (
    "proxy tls certificate nginx caddy docker compose volume backup restore upgrade migrate schema index "
    "token scope webhook slack discord matrix email digest notification reminder deadline countdown timeout "
    "retry backoff quota rate limit cache redis worker daphne channel websocket stream markdown citation "
    "summary prompt gate verification selection embedding vector search ranking filter archive export import "
    "csv json yaml calendar project task note label priority owner share permission audit login password "
    "session cookie csrf origin header cors latency memory cpu disk log metric alert dashboard grafana "
    "prometheus tracing sampling budget billing invoice language locale timezone theme shortcut keyboard"
).split()


_SYLLABLES = "ka lo mi ra ten vu zor pel dan fi gro shu bel cor nix tal ve quo sam wen dri lux mor pra syn".split()


def vocabulary(size: int = 20_000) -> list[str]:
    """Real topic words first (the most frequent), then pronounceable made-up words: documentation
    vocabularies are large and Zipf-distributed, which is what makes full-text matches selective."""
    rng = random.Random(42)
    words = list(dict.fromkeys(WORDS))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


VOCABULARY = vocabulary()
_ZIPF_CUMULATIVE = list(itertools.accumulate(1.0 / (rank + 1) ** 1.07 for rank in range(len(VOCABULARY))))


def zipf_words(rng: random.Random, n: int) -> list[str]:
    return rng.choices(VOCABULARY, cum_weights=_ZIPF_CUMULATIVE, k=n)


def setup_database() -> None:
    ensure_database()
    call_command("migrate", verbosity=0)


def reset_knowledge_base() -> None:
    from knowledge.models import KnowledgeIndex, KnowledgeSource, SummaryDraft

    with connection.cursor() as cursor:
        for model in (KnowledgeSource, KnowledgeIndex, SummaryDraft):
            cursor.execute(f'TRUNCATE "{model._meta.db_table}"')


def generated_page(rng: random.Random, n: int) -> str:
    """A ~1.5 KB Markdown page: a title, an opening sentence, 3-6 sections of Zipf-distributed words."""
    topic = " ".join(zipf_words(rng, 2))
    paragraphs = []
    for _ in range(rng.randint(3, 6)):
        sentences = [" ".join(zipf_words(rng, rng.randint(8, 16))).capitalize() + "." for _ in range(rng.randint(2, 5))]
        paragraphs.append(" ".join(sentences))
    sections = "\n\n".join(f"## {zipf_words(rng, 1)[0].capitalize()} {n}\n\n{p}" for p in paragraphs)
    return f"# Page {n}: {topic}\n\nThis page explains {topic} for setup number {n}.\n\n{sections}\n"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def describe(ms: list[float]) -> dict:
    return {"p50": statistics.median(ms), "p99": percentile(ms, 0.99), "max": max(ms), "mean": statistics.fmean(ms)}


def load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def write_corpus(folder: Path, count: int) -> None:
    rng = random.Random(20261121)
    for n in range(count):
        (folder / f"page-{n:04d}.md").write_text(generated_page(rng, n))


def timed_rebuild(folder: Path, **kwargs) -> tuple[float, services.RebuildReport]:
    started = time.perf_counter()
    report = services.rebuild_kb_index(source_dirs=[folder], source_urls=[], **kwargs)
    seconds = time.perf_counter() - started
    assert report.ok, report.failures[:3]
    return seconds, report


def scenario(label: str, folder: Path, concurrency: int, count: int) -> list[dict]:
    reset_knowledge_base()
    rows = []
    first, report = timed_rebuild(folder, concurrency=concurrency)
    rows.append(
        {"mode": label, "concurrency": concurrency, "run": "first run", "summarised": report.summarised, "seconds": first, "count": count}
    )
    again, report = timed_rebuild(folder, concurrency=concurrency)
    rows.append(
        {
            "mode": label,
            "concurrency": concurrency,
            "run": "unchanged re-run",
            "summarised": report.summarised,
            "seconds": again,
            "count": count,
        }
    )
    for n in range(10):
        path = folder / f"page-{n * count // 10:04d}.md"
        path.write_text(path.read_text() + f"\nEdited at {time.time()}.\n")
    changed, report = timed_rebuild(folder, concurrency=concurrency)
    rows.append(
        {
            "mode": label,
            "concurrency": concurrency,
            "run": "10 files changed",
            "summarised": report.summarised,
            "seconds": changed,
            "count": count,
        }
    )
    return rows


def main(count: int, concurrencies: list[int]) -> None:
    setup_database()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as tmp:
        folder = Path(tmp)
        write_corpus(folder, count)
        with FakeOpenAI(default=Reply.text("Explains a generated setup topic; relevant when configuring that part.")) as fake:
            settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake.base_url, "sk-bench", "fake"
            for concurrency in concurrencies:
                rows += scenario("fake model, zero delay", folder, concurrency, count)
                write_corpus(folder, count)  # undo the edits
            requests = len(fake.requests)
        settings.LLM_BASE_URL = settings.LLM_API_KEY = ""
        rows += scenario("offline engine", folder, concurrencies[0], count)
    print(f"\nKnowledge-base rebuild of {count} generated Markdown sources (~1.5 KB each); load average {load_average()}; "
          f"{requests} summarisation requests reached the fake model\n")  # fmt: skip
    print("| summariser | concurrency | run | summarised | seconds | ms per source read |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['mode']} | {r['concurrency']} | {r['run']} | {r['summarised']} | {r['seconds']:.2f} | {1000 * r['seconds'] / r['count']:.2f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 16])
    args = parser.parse_args()
    main(args.sources, args.concurrency)
