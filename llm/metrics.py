"""The one metric of the LLM boundary, shared by every caller (chat turns, the knowledge pipeline)."""

from __future__ import annotations

from prometheus_client import Histogram

LLM_CALL_SECONDS = Histogram(
    "llm_call_seconds",
    "Wall-clock seconds of one model call attempt, by purpose (gate, select, answer, verify, summarize, ...) and outcome.",
    ["purpose", "outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
