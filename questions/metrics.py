"""Prometheus metrics of questions, in the default registry that /metrics exposes."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from questions.models import PendingQuestion

QUESTION_RESOLUTIONS = Counter(
    "question_resolutions", "Questions resolved, by how (option, custom, shorthand, timeout_default, skipped…).", ["outcome"]
)
QUESTION_ANSWER_SECONDS = Histogram(
    "question_answer_seconds",
    "Seconds from a question being shown to its resolution.",
    buckets=(1, 2, 5, 8, 15, 25, 45, 60, 120, 300, 600, 1800),
)

for outcome in PendingQuestion.ResolvedVia.values:
    QUESTION_RESOLUTIONS.labels(outcome=outcome)


def observe(questions: list[PendingQuestion]) -> None:
    for question in questions:
        if question.resolved_at is None:
            continue
        QUESTION_RESOLUTIONS.labels(outcome=question.resolved_via or "unknown").inc()
        QUESTION_ANSWER_SECONDS.observe(max(0.0, (question.resolved_at - question.created_at).total_seconds()))
