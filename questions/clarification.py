"""Clarification: before acting on a request, analyse how ambiguous it is; below the
threshold, ask instead of guessing. Answers enhance the request through each option's `maps_to`.

With a model the analysis is a structured output; offline, YAML templates under
questions/templates/ match known ambiguous requests ("clean up my tasks").
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field

from llm import CallBudget, ChatMessage, LLMClient, LLMError, auxiliary_budget
from llm.offline.intents import asks_how_clarion_works

log = logging.getLogger("clarion.questions")
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
MAX_ROUNDS = 2
MAX_PROJECT_OPTIONS = 5

AmbiguityType = Literal["scope", "action", "missing_context", "safety", "outside_domain", "clear"]


class ClarificationOption(BaseModel):
    key: str = Field(pattern=r"^[a-f]$")
    label: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=200)
    maps_to: str = Field("", max_length=300, description="What choosing this adds to the request.")
    replaces_request: bool = Field(False, description="True when maps_to is a complete request that replaces the original.")


class ClarificationQuestion(BaseModel):
    id: str = Field(max_length=60)
    header: str = Field("", max_length=40)
    question: str = Field(min_length=1, max_length=500)
    options: list[ClarificationOption] = Field(min_length=2, max_length=6)
    allow_freeform: bool = True  # a person may always say it in their own words
    multi_select: bool = False


class AmbiguityAnalysis(BaseModel):
    confidence: float = Field(ge=0, le=1)
    ambiguity_type: AmbiguityType
    understood: str = Field(max_length=500)
    unclear_aspects: list[str] = Field(default_factory=list, max_length=6)
    complexity: Literal["low", "medium", "high"] = "medium"
    questions: list[ClarificationQuestion] = Field(default_factory=list, max_length=4)

    @classmethod
    def clear(cls, request: str) -> "AmbiguityAnalysis":
        return cls(confidence=1.0, ambiguity_type="clear", understood=request[:500])


ANALYSIS_PROMPT = """You are checking whether a request to a workspace assistant (projects, tasks,
notes) is clear enough to act on. Estimate your confidence (0-1) that you know exactly what the
user wants. Classify the ambiguity: scope (which items), action (which operation), missing_context,
safety (destructive and unclear), outside_domain, or clear. Say what you understood and what is
unclear. Only when confidence is below {threshold}, write 1-4 multiple-choice questions (2-6
options each, keys a-f) whose `maps_to` text, appended to the request, makes it precise.

Workspace: {context}

Request: {request}"""


async def analyze(
    *,
    client: LLMClient,
    request: str,
    context: str,
    projects: list[str],
    threshold: float,
    budget: CallBudget | None = None,
    prompt_template: str = "",
    answered_before: bool = False,
) -> AmbiguityAnalysis:
    """Never raises: when the analysis fails, the request is treated as clear (never block a turn).

    The call has the short auxiliary budget (`llm.auxiliary_budget()`, LLM_AUX_TIMEOUT_SECONDS)
    unless `budget` says otherwise: a hung model costs the turn seconds, not the main call's budget.
    `prompt_template` is the admin's edited prompt (AIConfig.clarification_prompt); empty: the built-in one.
    `answered_before`: the request already carries answers to a clarification. The offline
    templates would ask the very same card again, so offline it is then clear.
    """
    if not client.is_offline:
        template = prompt_template.strip() or ANALYSIS_PROMPT
        prompt = template.format(threshold=threshold, context=context[-3000:], request=request)
        try:
            return await client.structured(
                [ChatMessage(role="user", content=prompt)], schema=AmbiguityAnalysis, budget=budget or auxiliary_budget()
            )
        except LLMError as exc:
            log.warning(
                "clarification analysis failed (%s after %d attempt(s)); no clarification, treating the request as clear",
                exc.kind, exc.attempts, extra={"aux_call": "clarification", "outcome": exc.kind, "attempts": exc.attempts},
            )  # fmt: skip
            return AmbiguityAnalysis.clear(request)
    if answered_before:
        return AmbiguityAnalysis.clear(request)
    return analyze_with_templates(request, projects=projects)


def analyze_with_templates(request: str, *, projects: list[str]) -> AmbiguityAnalysis:
    # "How do I reset the demo workspace?" asks how, and the guide answers it: nothing is done, so
    # there is nothing to ask about.
    if asks_how_clarion_works(request):
        return AmbiguityAnalysis.clear(request)
    for template in templates():
        if any(re.search(pattern, request, re.IGNORECASE) for pattern in template["triggers"]):
            return _from_template(template, projects)
    return AmbiguityAnalysis.clear(request)


@functools.cache
def templates() -> tuple[dict, ...]:
    return tuple(yaml.safe_load(path.read_text()) for path in sorted(TEMPLATES_DIR.glob("*.yaml")))


def _from_template(template: dict, projects: list[str]) -> AmbiguityAnalysis:
    questions = []
    for spec in template["questions"]:
        options = [dict(o) for o in spec["options"]]
        if per_project := spec.get("options_from_projects"):
            for name in projects[:MAX_PROJECT_OPTIONS]:
                options.append({k: v.format(name=name) for k, v in per_project.items()})
        for i, option in enumerate(options):
            option["key"] = "abcdef"[i]
        if len(options) >= 2:
            questions.append(
                ClarificationQuestion(**{k: v for k, v in spec.items() if k != "options_from_projects"} | {"options": options[:6]})
            )
    return AmbiguityAnalysis(**template["analysis"], questions=questions)


def needs_clarification(analysis: AmbiguityAnalysis, *, threshold: float) -> bool:
    return analysis.confidence < threshold and bool(analysis.questions)


def enhance(request: str, picks: list[tuple[str, bool]]) -> str:
    """The request, made precise by what the answers map to (the query enhancer step).

    `picks` are (maps_to, replaces_request): a complete request replaces the vague one,
    qualifiers ("in Atlas") are appended in question order.
    """
    text = request.strip()
    for maps_to, replaces in picks:
        maps_to = (maps_to or "").strip()
        if maps_to:
            text = maps_to if replaces else f"{text} {maps_to}"
    return text
