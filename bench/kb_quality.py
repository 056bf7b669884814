"""Knowledge-base answer quality on real documentation, with the offline engine, beside a plain BM25.

The corpus is the Markdown documentation shipped in the sdist of a public Python library (Starlette
0.41.3: docs/*.md, 23 pages), fetched once with `pip download` into .data/bench/ (gitignored) —
never at test time. The questions (bench/kb_quality_set.yaml) were written by hand against those
pages: answerable ones with their gold page(s) and key facts, unanswerable ones (some near misses).
Each question goes through `services.generate_reply`, the service behind `POST /api/v1/reply`.

    DATABASE_NAME=clarion_bench_kb .venv/bin/python bench/kb_quality.py [--show-misses]

Measures (as in the issue): answers given on answerable questions; answers fully right (a gold page
cited and every key fact in the reply); citation precision (cited pages that are gold pages, over
the answers given to answerable questions); silence on unanswerable questions; right page ranked
first by selection; latency per request. The baseline is page-level Okapi BM25 (k1=1.2, b=0.75) over
lower-cased words minus stop words, answering with the best BM25 sentence of its first page.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

import yaml
from django.conf import settings
from kb_rebuild import ROOT, describe, load_average, reset_knowledge_base, setup_database

from knowledge import services
from knowledge.schemas import Conversation, RequestContext
from knowledge.text import STOPWORDS, split_sentences, units

LIBRARY, VERSION = "starlette", "0.41.3"
CACHE = ROOT / ".data" / "bench"
QUESTIONS = Path(__file__).with_name("kb_quality_set.yaml")


def fetch_docs() -> Path:
    """docs/*.md of the pinned sdist, downloaded once with pip and unpacked under .data/bench/."""
    target = CACHE / f"{LIBRARY}-{VERSION}-docs"
    if target.is_dir() and any(target.glob("*.md")):
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / f"{LIBRARY}-{VERSION}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", f"{LIBRARY}=={VERSION}", "-d", str(CACHE)],
            check=True,
        )
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) == 3 and parts[1] == "docs" and parts[2].endswith(".md") and member.isfile():
                (target / parts[2]).write_bytes(tar.extractfile(member).read())
    return target


# ---------------------------------------------------------------------------- the BM25 baseline

_WORD = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]


class BM25:
    def __init__(self, pages: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.pages = pages
        self.tf = {name: Counter(_tokens(text)) for name, text in pages.items()}
        self.length = {name: sum(tf.values()) for name, tf in self.tf.items()}
        self.average = sum(self.length.values()) / len(self.length)
        df = Counter(t for tf in self.tf.values() for t in tf)
        n = len(pages)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.k1, self.b = k1, b

    def score(self, query: list[str], tf: Counter, length: float) -> float:
        total = 0.0
        for t in query:
            f = tf.get(t, 0)
            if f:
                total += self.idf.get(t, 0.0) * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.average))
        return total

    def rank(self, question: str) -> list[str]:
        query = _tokens(question)
        scored = [(self.score(query, self.tf[name], self.length[name]), name) for name in self.pages]
        return [name for score, name in sorted(scored, key=lambda p: (-p[0], p[1])) if score > 0]

    def answer(self, question: str) -> tuple[str | None, str | None]:
        ranked = self.rank(question)
        if not ranked:
            return None, None
        query = _tokens(question)
        sentences = [u.text for u in units(self.pages[ranked[0]]) if u.kind == "sentence"] or split_sentences(self.pages[ranked[0]])
        best = max(sentences, key=lambda s: self.score(query, Counter(_tokens(s)), len(_tokens(s)) or 1), default=None)
        return best, ranked[0]


# ---------------------------------------------------------------------------- running the set


def _has_facts(reply: str, facts: list[str]) -> bool:
    lowered = reply.lower()
    return all(str(f).lower() in lowered for f in facts)


async def ask(question: str):
    conversation = Conversation.model_validate({"messages": [{"role": "user", "text": question}]})
    context = RequestContext.model_validate({"platform": "bench", "channel_id": "kb-quality"})
    started = time.perf_counter()
    result = await services.generate_reply(conversation=conversation, context=context)
    return result, (time.perf_counter() - started) * 1000


def _name(source_id: str) -> str:
    return source_id.rsplit("/", 1)[-1]


async def evaluate_clarion(data: dict, *, show_misses: bool) -> dict:
    await ask("How do I warm up the index?")  # the first request builds the per-build statistics
    answered = right = first = cited = cited_gold = silent = 0
    latencies: list[float] = []
    for item in data["answerable"]:
        result, ms = await ask(item["q"])
        latencies.append(ms)
        gold = set(item["gold"])
        selected = [_name(s) for s in result.debug.get("selected_source_ids", [])]
        first += bool(selected and selected[0] in gold)
        if result.should_reply:
            answered += 1
            names = {_name(c.source_id) for c in result.citations}
            cited += len(names)
            cited_gold += len(names & gold)
            ok = bool(names & gold) and _has_facts(result.reply_text, item["facts"])
            right += ok
            if show_misses and not ok:
                print(f"WRONG  {item['q']}\n       cited {sorted(names)} gold {sorted(gold)}\n       {result.reply_text[:400]!r}\n")
        elif show_misses:
            print(f"SILENT {item['q']}  ({result.debug.get('skip_reason')}; selected {selected[:4]})\n")
    for item in data["unanswerable"]:
        result, ms = await ask(item["q"])
        latencies.append(ms)
        silent += not result.should_reply
        if show_misses and result.should_reply:
            print(f"SPOKE  {item['q']}\n       {result.reply_text[:300]!r}\n")
    return _table_row(data, answered, right, cited, cited_gold, silent, first, latencies)


def evaluate_bm25(data: dict, pages: dict[str, str]) -> dict:
    bm25 = BM25(pages)
    answered = right = first = cited = cited_gold = silent = 0
    latencies: list[float] = []
    for item in data["answerable"]:
        started = time.perf_counter()
        reply, page = bm25.answer(item["q"])
        latencies.append((time.perf_counter() - started) * 1000)
        gold = set(item["gold"])
        first += bool(page in gold)
        if reply:
            answered += 1
            cited += 1
            cited_gold += page in gold
            right += page in gold and _has_facts(reply, item["facts"])
    for item in data["unanswerable"]:
        started = time.perf_counter()
        reply, _ = bm25.answer(item["q"])
        latencies.append((time.perf_counter() - started) * 1000)
        silent += reply is None
    return _table_row(data, answered, right, cited, cited_gold, silent, first, latencies)


def _table_row(data, answered, right, cited, cited_gold, silent, first, latencies) -> dict:
    n, m = len(data["answerable"]), len(data["unanswerable"])
    stats = describe(latencies)
    return {
        "answers given on answerable questions": f"{100 * answered / n:.0f} % ({answered}/{n})",
        "answers fully right": f"{100 * right / n:.0f} % ({right}/{n})",
        "citation precision": f"{100 * cited_gold / cited:.0f} % ({cited_gold}/{cited})" if cited else "–",
        "silence on unanswerable questions": f"{100 * silent / m:.0f} % ({silent}/{m})",
        "right page ranked first": f"{100 * first / n:.0f} % ({first}/{n})",
        "latency p50 / p99": f"{stats['p50']:.1f} / {stats['p99']:.1f} ms",
    }


TARGETS = {
    "answers given on answerable questions": "≥ 75 %",
    "answers fully right": "≥ 60 %",
    "citation precision": "≥ 90 %",
    "silence on unanswerable questions": "≥ 90 %",
    "right page ranked first": "≥ BM25",
    "latency p50 / p99": "< 100 / < 300 ms",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show-misses", action="store_true", help="print each wrong, silent or unwanted answer")
    args = parser.parse_args()
    data = yaml.safe_load(QUESTIONS.read_text())
    docs = fetch_docs()
    setup_database()
    reset_knowledge_base()
    settings.LLM_BASE_URL = settings.LLM_API_KEY = ""
    report = services.rebuild_kb_index(source_dirs=[docs], source_urls=[])
    assert report.ok, report.failures
    pages = {p.name: p.read_text(encoding="utf-8") for p in sorted(docs.glob("*.md"))}
    clarion = asyncio.run(evaluate_clarion(data, show_misses=args.show_misses))
    baseline = evaluate_bm25(data, pages)
    print(
        f"\nKnowledge-base quality: {LIBRARY} {VERSION} docs ({len(pages)} Markdown pages from the PyPI sdist), "
        f"{len(data['answerable'])} answerable + {len(data['unanswerable'])} unanswerable questions, offline engine; "
        f"load average {load_average()}\n"
    )
    print("| measure | Clarion (offline engine) | plain BM25 | target |")
    print("| --- | ---: | ---: | ---: |")
    for key in TARGETS:
        print(f"| {key} | {clarion[key]} | {baseline[key]} | {TARGETS[key]} |")


if __name__ == "__main__":
    main()
