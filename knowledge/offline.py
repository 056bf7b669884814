"""Deterministic implementations of the pipeline's decisions, for the offline engine.

Same inputs and outputs as the model-backed nodes (the pydantic decisions of knowledge.schemas),
so the graph is identical with or without a model:

- gate: a question is a sentence that asks (interrogative opening, "?", "explain ...") and has
  content words; the free-text scope and refusal policy need a model and are not applied.
- selection: Postgres full-text ranking (selectors.rank_sources), in the pipeline.
- answer: the loaded sources' sentences that share the most words with the question, quoted
  verbatim with [n] citations, in reading order.
- verification: every sentence must cite a source and be found in (or almost entirely covered
  by the words of) what it cites.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from knowledge.citations import MARKER
from knowledge.schemas import DraftAnswer, GateDecision, VerificationDecision
from knowledge.text import Unit, normalise_for_match, split_sentences, terms, units, words

INTERROGATIVES = frozenset(
    "how what why when where which who whom whose can could does do did is are was were should shall will would may might has have am".split()
)
ASKING_PHRASES = (
    "explain", "tell me", "show me", "describe", "help me", "help with", "i need help", "i want to know",
    "i'd like to know", "how to", "where can i", "is there", "any idea", "what's", "whats", "hows", "how's",
    "walk me through", "guide me",
)  # fmt: skip
ANSWER_UNITS = 4
# A sentence quoted in an answer shares at least this share of the question's content words
# (counting its section heading), so a lone common word ("model") does not make an answer.
MIN_COVERAGE = 0.5
SUPPORTED_COVERAGE = 0.8
RELATIVE_CUTOFF = 0.85


def gate(question: str) -> GateDecision:
    text = " ".join(question.split())
    lowered = text.lower()
    first = (words(lowered) or [""])[0]
    is_question = bool(text) and ("?" in text or first in INTERROGATIVES or lowered.startswith(ASKING_PHRASES))
    content = terms(text)
    if not is_question:
        return GateDecision(is_question=False, is_answerable=False, reason="The message does not ask anything.")
    if not content:
        return GateDecision(is_question=True, is_answerable=False, reason="The question has no topic words to look up.")
    return GateDecision(
        is_question=True, is_answerable=True, rewrite_query=text.rstrip("?!. "), reason=f"A question about: {', '.join(content)}."
    )


@dataclass(frozen=True)
class _Candidate:
    score: float
    source: int  # 1-based number of the loaded source
    position: int
    text: str


@dataclass(frozen=True)
class _Analysed:
    units: list[tuple[Unit, frozenset[str], frozenset[str]]]  # unit, its terms, its heading's terms
    vocabulary: frozenset[str]
    normalised: str


@functools.lru_cache(maxsize=256)
def _analyse(content: str) -> _Analysed:
    # Sources only change through a rebuild, and the same few answer most questions.
    found = units(content)
    return _Analysed(
        units=[(u, frozenset(terms(u.text)), frozenset(terms(u.heading))) for u in found],
        vocabulary=frozenset(terms(content)),
        normalised=normalise_for_match(content),
    )


def answer(*, question: str, sources: list[tuple[str, str]], max_chars: int = 10_000, max_units: int = ANSWER_UNITS) -> DraftAnswer:
    """sources: (title, content) of each loaded source, numbered [1].. in this order.

    Whole sentences only: those that do not fit in max_chars are passed over for shorter ones.
    """
    wanted = set(terms(question))
    if not wanted:
        return DraftAnswer(answer="", answered_from_sources=False)
    needed = max(1, math.ceil(len(wanted) * MIN_COVERAGE))
    candidates: list[_Candidate] = []
    for number, (title, content) in enumerate(sources, start=1):
        in_title = wanted & set(terms(title))
        for unit, unit_terms, heading_terms in _analyse(content).units:
            in_text = wanted & unit_terms
            in_heading = (wanted & heading_terms) - in_text
            if not in_text or len(in_text) + len(in_heading) < needed:
                continue
            score = len(in_text) + 0.5 * len(in_heading) + 0.5 * len(in_title) - (0.5 if unit.linked else 0.0)
            candidates.append(_Candidate(score, number, unit.position, unit.text))
    if not candidates:
        return DraftAnswer(answer="", answered_from_sources=False)
    # Only the strongest sentences: a weaker one that merely mentions a word dilutes the answer.
    cutoff = RELATIVE_CUTOFF * max(c.score for c in candidates)
    best: list[_Candidate] = []
    used = 0
    for candidate in sorted((c for c in candidates if c.score >= cutoff), key=lambda c: (-c.score, c.source, c.position)):
        cost = len(candidate.text) + 6  # the marker and the separator
        if used + cost <= max_chars:
            best.append(candidate)
            used += cost
        if len(best) == max_units:
            break
    if not best:  # nothing fits whole: the best sentence, shortened by the caller
        best = [max(candidates, key=lambda c: c.score)]
    # Quoted in reading order: source by source, each in its own order.
    chosen = sorted(best, key=lambda c: (c.source, c.position))
    paragraphs: list[str] = []
    current_source = None
    for candidate in chosen:
        sentence = _with_marker(candidate.text, candidate.source)
        if candidate.source == current_source:
            paragraphs[-1] += " " + sentence
        else:
            paragraphs.append(sentence)
            current_source = candidate.source
    return DraftAnswer(answer="\n\n".join(paragraphs), citations=sorted({c.source for c in chosen}), answered_from_sources=True)


def _with_marker(sentence: str, number: int) -> str:
    sentence = sentence.rstrip()
    if sentence.endswith((".", "!", "?")):
        return f"{sentence[:-1]} [{number}]{sentence[-1]}"
    return f"{sentence} [{number}]"


def verify(*, draft: str, sources: list[str]) -> VerificationDecision:
    """sources: the content of each cited source, numbered as in the draft's markers."""
    analysed = [_analyse(text) for text in sources]
    normalised = [a.normalised for a in analysed]
    vocabularies = [a.vocabulary for a in analysed]
    issues: list[str] = []
    claims = 0
    for paragraph in draft.split("\n\n"):
        for sentence in split_sentences(paragraph):
            cited = [int(n) for n in MARKER.findall(sentence)]
            claim = MARKER.sub("", sentence)
            claim_terms = set(terms(claim))
            if not claim_terms:
                continue
            claims += 1
            label = _excerpt(claim)
            if not cited:
                issues.append(f"“{label}” cites no source.")
                continue
            if any(n < 1 or n > len(sources) for n in cited):
                issues.append(f"“{label}” cites a source that was not loaded.")
                continue
            text = normalise_for_match(claim)
            if any(text and text in normalised[n - 1] for n in cited):
                continue
            covered = set().union(*(vocabularies[n - 1] for n in cited))
            if len(claim_terms & covered) / len(claim_terms) >= SUPPORTED_COVERAGE:
                continue
            issues.append(f"“{label}” is not supported by the source it cites.")
    if not claims:
        issues.append("The draft states nothing.")
    return VerificationDecision(
        is_good_enough=not issues,
        issues=issues,
        suggested_fix="Quote only sentences found in the cited sources." if issues else None,
    )


def _excerpt(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
