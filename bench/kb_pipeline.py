"""End-to-end knowledge-pipeline overhead outside the model: the time `answer_from_knowledge_base`
spends in Clarion (graph, ORM, prompt building, citation checks, logging, metrics), with the
model's share subtracted. The model is the fake OpenAI-compatible server at zero delay, reached
through the real SDK; "model time" is the wall-clock of each model call attempt (SDK + loopback
HTTP + parsing), as recorded in `debug["llm_calls"]`. The offline engine has no model time at all.

    DATABASE_NAME=clarion_bench_kb .venv/bin/python bench/kb_pipeline.py [--requests 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from django.conf import settings
from kb_rebuild import describe, load_average, reset_knowledge_base, setup_database

from knowledge import services
from tests.fake_openai import FakeOpenAI, Reply

CONNECTING = "docs/user-guide/connecting-your-own-model.md"
ANSWER = "Set `LLM_BASE_URL`, `LLM_API_KEY` and `LLM_MODEL` [1]. Restart Clarion afterwards [1]."


def scripted_turn() -> list[Reply]:
    return [
        Reply.json({"is_question": True, "is_answerable": True, "rewrite_query": "connect own model", "reason": "in scope"}),
        Reply.json({"selected_source_ids": [CONNECTING]}),
        Reply.json({"answer": ANSWER, "citations": [1], "answered_from_sources": True}),
        Reply.json({"is_good_enough": True, "issues": [], "suggested_fix": None}),
    ]


async def run(label: str, n: int, *, fake: FakeOpenAI | None) -> dict:
    totals, overheads, model = [], [], []
    for i in range(n + 10):
        if fake is not None:
            fake.script(*scripted_turn())
        started = time.perf_counter()
        result = await services.answer_from_knowledge_base(question="How do I connect my own model?")
        total = time.perf_counter() - started
        assert result.should_reply, result.debug
        model_seconds = sum(c["seconds"] for c in result.debug["llm_calls"])
        if i >= 10:  # warm-up excluded
            totals.append(total * 1000)
            model.append(model_seconds * 1000)
            overheads.append((total - model_seconds) * 1000)
    return {"label": label, "total": describe(totals), "model": statistics.median(model), "overhead": describe(overheads)}


async def main(n: int) -> list[dict]:
    rows = [await run("offline engine (no model)", n, fake=None)]
    with FakeOpenAI(default=None) as fake:
        settings.LLM_BASE_URL, settings.LLM_API_KEY, settings.LLM_MODEL = fake.base_url, "sk-bench", "fake"
        rows.append(await run("fake model, index in the prompt (7 sources)", n, fake=fake))
        settings.KNOWLEDGE_PREFILTER_THRESHOLD = 3
        rows.append(await run("fake model, full-text pre-filter path", n, fake=fake))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    setup_database()
    reset_knowledge_base()
    settings.LLM_BASE_URL = settings.LLM_API_KEY = ""
    services.rebuild_kb_index()  # the shipped user guide, offline summaries
    rows = asyncio.run(main(args.requests))
    print(f"\nKnowledge pipeline, \"How do I connect my own model?\" over the shipped user guide, {args.requests} requests per row "
          f"(after 10 warm-up); load average {load_average()}\n")  # fmt: skip
    print("| engine | model calls | total p50 ms | model time p50 ms | overhead p50 ms | overhead p99 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        calls = 0 if r["label"].startswith("offline") else 4
        print(
            f"| {r['label']} | {calls} | {r['total']['p50']:.2f} | {r['model']:.2f} | {r['overhead']['p50']:.2f} | {r['overhead']['p99']:.2f} |"
        )
