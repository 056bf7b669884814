"""The question detector: when a plain reply ends by asking the person something, the
question becomes a card with options and a complexity (which sets its timeout)."""

from __future__ import annotations

import logging
import re
from typing import Literal

from pydantic import BaseModel, Field

from llm import CallBudget, ChatMessage, LLMClient, LLMError, auxiliary_budget
from questions.text import last_sentence

log = logging.getLogger("clarion.questions")

Complexity = Literal["low", "medium", "high"]


class DetectedQuestion(BaseModel):
    question: str = Field(max_length=500)
    options: list[str] = Field(min_length=2, max_length=6)
    complexity: Complexity


class Detection(BaseModel):
    questions: list[DetectedQuestion] = Field(max_length=4)


DETECT_PROMPT = """The assistant's reply below may end by asking the user a question. If it does,
extract each question the user is expected to answer, with 2-6 short answer options the user is
likely to pick, and a complexity: "low" for yes/no or a simple choice, "medium" for 3-4 domain
options, "high" for open-ended or technical. If the reply asks nothing, return no questions.

Reply:
{reply}"""

_YES_NO = re.compile(r"^(should|shall|do|does|did|would|will|can|could|is|are|want|may)\b", re.IGNORECASE)
_LAST_OR = re.compile(r"^(?P<head>.+?)(?:,\s*|\s+)or\s+(?P<last>[^,]+)$", re.IGNORECASE)
# The words that introduce the list in "Do you want it in A, B or C?", "Use A or B?", "…: A, B or C?"
_LEAD_IN = re.compile(
    r"^.*\b(?:in|into|under|on|as|with|from|to|for|use|about|prefer|between|choose|pick|want|like|either|be)\s+|^.*:\s*", re.IGNORECASE
)


def asks_something(reply: str) -> bool:
    return last_sentence(reply).endswith("?")


async def detect(*, client: LLMClient, reply: str, budget: CallBudget | None = None) -> list[DetectedQuestion]:
    """Questions the reply ends with; [] when it asks nothing. Never raises.

    The model call has the short auxiliary budget (`llm.auxiliary_budget()`) unless `budget` says
    otherwise; when it fails the offline rules decide.
    """
    if not asks_something(reply):
        return []
    if not client.is_offline:
        try:
            detection = await client.structured(
                [ChatMessage(role="user", content=DETECT_PROMPT.format(reply=reply[-3000:]))],
                schema=Detection,
                budget=budget or auxiliary_budget(),
            )
            return detection.questions
        except LLMError as exc:
            log.warning(
                "detector fell back to offline rules: %s after %d attempt(s)", exc.kind, exc.attempts,
                extra={"aux_call": "detector", "outcome": exc.kind, "attempts": exc.attempts},
            )  # fmt: skip
    found = offline_detect(reply)
    return [found] if found else []


def offline_detect(reply: str) -> DetectedQuestion | None:
    question = last_sentence(reply)
    if options := _listed_options(question.rstrip("?")):
        return DetectedQuestion(question=question, options=options, complexity="low" if len(options) == 2 else "medium")
    if _YES_NO.match(question):
        return DetectedQuestion(question=question, options=["Yes", "No"], complexity="low")
    return None


def _listed_options(body: str) -> list[str]:
    """["A", "B", "C"] from "… in A, B or C"; [] when the question lists no alternatives."""
    match = _LAST_OR.match(body)
    if not match:
        return []
    head = [part.strip() for part in match["head"].split(",")]
    head[0] = _LEAD_IN.sub("", head[0]).strip()
    parts = [p.strip(" .'\"“”") for p in [*head, match["last"]] if p.strip(" .'\"“”")]
    options = [p[:1].upper() + p[1:] for p in parts if len(p) <= 80]
    return options if 2 <= len(options) <= 6 and len(options) == len(parts) else []
