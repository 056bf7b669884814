"""Prometheus metrics of the knowledge pipeline, in the process-wide default registry.

`/metrics` (knowledge.views.metrics) serves `exposition()`: the default registry, so metrics other
apps register there (question outcomes, agent calls) appear beside these — or, in prometheus-client's
multiprocess mode (PROMETHEUS_MULTIPROC_DIR set before the process starts; `manage.py up` sets a
fresh one per run), the totals of every worker process writing to that directory.
"""

from __future__ import annotations

import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from llm.metrics import LLM_CALL_SECONDS  # noqa: F401  (defined at the LLM boundary; re-exported)

AI_REQUESTS = Counter(
    "ai_requests",
    "Knowledge-base answer requests by result.",
    ["result"],  # answered | skipped | error
)
AI_GATE = Counter("ai_gate", "Gate decisions by whether the question is answerable.", ["answerable"])
AI_VERIFICATION = Counter("ai_verification", "Verification decisions by whether the draft was good enough.", ["good_enough"])
AI_SELECTED_SOURCES = Histogram(
    "ai_selected_sources", "Sources selected per answered-or-attempted request.", buckets=(0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20)
)

for result in ("answered", "skipped", "error"):
    AI_REQUESTS.labels(result=result)  # a series exists at 0 before the first request
for flag in ("true", "false"):
    AI_GATE.labels(answerable=flag)
    AI_VERIFICATION.labels(good_enough=flag)


def exposition() -> bytes:
    """The text exposition of every metric: this process's, or all workers' in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)
