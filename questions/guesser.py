"""The answer guesser: ranks a question's options with a confidence and a one-line
reason, from the conversation and the workspace. Its top option becomes the timeout default.

Runs beside the card, not before it: the person sees the question at once and the hints swap in.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from pydantic import BaseModel, Field

from llm import CallBudget, ChatMessage, LLMClient, LLMError, auxiliary_budget
from questions.text import words

log = logging.getLogger("clarion.questions")


class OptionGuess(BaseModel):
    index: int = Field(ge=0)
    confidence: float = Field(ge=0, le=1)
    reasoning: str = Field(max_length=200, description="One short line: why this option fits.")


class GuessResult(BaseModel):
    ranking: list[OptionGuess]


GUESS_PROMPT = """You predict how a user will answer a multiple-choice question, so a sensible
default can be applied if they don't answer in time. Use the conversation and workspace below.
Give every option a confidence between 0 and 1 (together at most 1) and a one-line reason.

Conversation and workspace:
{context}

Question: {question}
Options:
{options}"""


async def rank_options(
    *, client: LLMClient, question: str, options: list[dict], context: str, budget: CallBudget | None = None
) -> list[dict]:
    """[{"index", "confidence", "reasoning"}] best first. Never raises: falls back to the offline
    ranking when the model can't answer within its short auxiliary budget (`llm.auxiliary_budget()`
    unless `budget` says otherwise)."""
    if not client.is_offline:
        listing = "\n".join(
            f"{i}. {o['label']}" + (f" — {o['description']}" if o.get("description") else "") for i, o in enumerate(options)
        )
        prompt = GUESS_PROMPT.format(context=context[-4000:], question=question, options=listing)
        try:
            result = await client.structured(
                [ChatMessage(role="user", content=prompt)], schema=GuessResult, budget=budget or auxiliary_budget()
            )
            ranking = [g.model_dump() for g in result.ranking if g.index < len(options)]
            if ranking:
                return _normalized(ranking)
        except LLMError as exc:
            log.warning(
                "guesser fell back to offline ranking: %s after %d attempt(s)", exc.kind, exc.attempts,
                extra={"aux_call": "guesser", "outcome": exc.kind, "attempts": exc.attempts},
            )  # fmt: skip
    return offline_rank(question=question, options=options, context=context)


def offline_rank(*, question: str, options: list[dict], context: str) -> list[dict]:
    """Word overlap between each option and the context, softened into confidences."""
    context_words = words(context)
    scored: list[dict[str, Any]] = []
    for i, option in enumerate(options):
        shared = sorted(words(f"{option['label']} {option.get('description', '')}") & context_words)
        # A slight preference for earlier options: askers tend to list the likely one first.
        score = len(shared) * 1.5 - i * 0.1
        reason = (
            f"Matches “{', '.join(shared[:3])}” in the conversation or workspace." if shared else "No strong signal; ranked by position."
        )
        scored.append({"index": i, "score": score, "reasoning": reason})
    total = sum(math.exp(s["score"]) for s in scored)
    ranking = [{"index": s["index"], "confidence": math.exp(s["score"]) / total, "reasoning": s["reasoning"]} for s in scored]
    return sorted(ranking, key=lambda r: -r["confidence"])


def _normalized(ranking: list[dict]) -> list[dict]:
    total = sum(r["confidence"] for r in ranking)
    if total > 1:
        ranking = [{**r, "confidence": r["confidence"] / total} for r in ranking]
    return sorted(ranking, key=lambda r: -r["confidence"])
