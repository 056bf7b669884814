"""Deterministic implementations of the pipeline's decisions, for the offline engine.

Same inputs and outputs as the model-backed nodes (the pydantic decisions of knowledge.schemas),
so the graph is identical with or without a model:

- gate: a question is a sentence that asks (interrogative opening, "?", "explain ...") or asks for
  help (a need, a problem: "the proxy settings are not used", or a message long enough to describe
  one) and has content words; the free-text scope and refusal policy need a model and are not
  applied.
- selection: BM25 over sections with the current build's statistics (knowledge.ranking), a heading
  the question restates counting more, in the pipeline.
- answer: the passage of the loaded sources that covers the question's rare terms best (a word no
  page uses weighs as a rare one, a name no page uses the most) — its sentences, list items (nested
  ones under their parents), code blocks (when the question asks how) or table rows, quoted
  verbatim with [n] citations under the heading that gives them their subject; a whole short
  section when it is short enough; a second source when it brings most of what the first leaves
  uncovered, or two pages together when the question asks about two things. Silence when nothing
  covers it, and rather than an example that only sets a value asked for by default, a passage
  with no number for "how many…", a section that never says what the default is for "what is the
  default…", or a page without a name the question asks about.
- verification: every sentence must cite a source and be found in (or almost entirely covered
  by the words of) what it cites; every quoted code block or table row must be in its source.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from knowledge.citations import MARKER, without_markers_in_code
from knowledge.ranking import QUESTION_FRAME, QuestionShape, query_terms
from knowledge.schemas import DraftAnswer, GateDecision, VerificationDecision
from knowledge.text import VERSION_LABEL, Unit, name_parts, normalise_for_match, parse_cached, split_sentences, squash, terms, units, words

INTERROGATIVES = frozenset(
    "how what why when where which who whom whose can could does do did is are was were should shall will would may might has have am".split()
)
ASKING_PHRASES = (
    "explain", "tell me", "show me", "describe", "help me", "help with", "i need help", "i want to know",
    "i'd like to know", "how to", "where can i", "is there", "any idea", "what's", "whats", "hows", "how's",
    "walk me through", "guide me",
)  # fmt: skip
ANSWER_UNITS = 6
# The share of the question's weight (idf, so rare words count most) that the quoted passage —
# with its section's headings and its page title — must cover, and that the quoted piece itself
# must carry: a lone common word ("model") does not make an answer.
MIN_COVERAGE = 0.6
MIN_OWN = 0.3
# A long question tells the asker's circumstances as well as what they ask ("I set x in the loop
# and it stays 0. How do I carry a value out of a loop?"): past TERMS_COVERED_WHOLE terms, the
# share a passage must cover (and carry itself) falls by COVERAGE_PER_TERM a term, to LEAST_COVERAGE.
TERMS_COVERED_WHOLE = 6
COVERAGE_PER_TERM = 0.03
LEAST_COVERAGE = 0.35
SUPPORTED_COVERAGE = 0.8
# A question of this many terms or fewer ("is my week busy?") is answered only from a section that
# has every one of them: with so few, the rarest alone would carry the coverage.
FEW_TERMS = 2
# A piece of the answering section is quoted beside the best when it scores this share of it.
RELATIVE_CUTOFF = 0.4
SHORT_SECTION_CHARS = 600
SECOND_SOURCE_SHARE = 0.3
LIST_ITEMS = 10
# A question that needs two pages: each covers at least PAIR_COVERAGE, together PAIR_TOGETHER.
PAIR_COVERAGE = 0.3
PAIR_TOGETHER = 0.85
PAIR_OWN_PART = 0.2
HEADING_MATCH = 1.5  # how much a heading the question restates adds to its section's pieces
SOURCE_RANK = 0.15  # taken off per place down the selection's order of the loaded sources
# An answer often needs a fact its section's neighbours give ("how long does a confirmation card
# wait?": the card's section, and the one on not answering it): up to SIBLINGS pieces from other
# sections of the answering page, each scoring SIBLING_SHARE of the best piece or more and
# bringing a word of the question the quote does not have yet.
SIBLINGS = 2
SIBLING_SHARE = 0.4


# A message that asks for help without asking a question: a need ("I need to pass my own SSL
# context"), a request to do what the docs explain ("reset my password"), or a problem ("the proxy
# settings are not used", "certificate verify failed", "I forgot my password").
_HELP_WANTED = re.compile(
    r"\b(?:i need|i want|i'd like|i would like|i'm trying|i am trying|trying to|looking for|is it possible|please|help)\b"
    r"|^(?:change|reset|enable|disable|turn (?:on|off)|set up|configure|install|upgrade)\b"
    r"|\b(?:doesn't|does not|don't|didn't|did not|can't|cannot|can not|couldn't|unable|won't|isn't|is not|aren't|fails?|failed"
    r"|failing|failure|errors?|exceptions?|traceback|broken|breaks|crash\w*|raises|wrong|problem|issue|bug|not work\w*"
    r"|no longer|stopped|stops|forgot(?:ten)?|lost)\b",
    re.IGNORECASE,
)


# A message with this many topic words describes something the asker wants to know about ("link
# IP of requester between nginx and gunicorn so flask logs have IP"); a short remark ("The build
# is green.") does not.
DESCRIBES_A_PROBLEM = 6


def gate(question: str) -> GateDecision:
    text = " ".join(question.split())
    lowered = text.lower()
    first = (words(lowered) or [""])[0]
    content = terms(text)
    is_question = bool(text) and (
        "?" in text
        or first in INTERROGATIVES
        or lowered.startswith(ASKING_PHRASES)
        or bool(_HELP_WANTED.search(text))
        or len(content) >= DESCRIBES_A_PROBLEM
    )
    if not is_question:
        return GateDecision(is_question=False, is_answerable=False, reason="The message does not ask anything.")
    if not content:
        return GateDecision(is_question=True, is_answerable=False, reason="The question has no topic words to look up.")
    return GateDecision(
        is_question=True, is_answerable=True, rewrite_query=text.rstrip("?!. "), reason=f"A question about: {', '.join(content)}."
    )


@dataclass(frozen=True)
class _Piece:
    unit: Unit
    terms: frozenset[str]
    weak: frozenset[str] = frozenset()  # terms only found inside code: names and strings count half
    linking: frozenset[str] = frozenset()  # terms inside its links: they name another page
    examples: frozenset[str] = frozenset()  # terms only in its examples of asking (see _QUOTED)


@dataclass(frozen=True)
class _Section:
    heading: str
    context: frozenset[str]  # terms of the headings above it (page title added per request)
    terms: frozenset[str]  # terms of everything in it
    examples: frozenset[str]  # terms only in its examples of asking
    pieces: tuple[_Piece, ...]
    chars: int
    negated: bool  # its heading negates ("What happens if I don't answer?")


@dataclass(frozen=True)
class _Analysed:
    sections: dict[int, _Section]
    headings: frozenset[str]
    negated_headings: bool  # a heading of the page negates
    vocabulary: frozenset[str]
    normalised: str
    squashed: str


# Pages at least this long are analysed with the build's statistics (analyse_long_pages), not by
# the first request that quotes them: a reference page of a hundred kilobytes takes tens of
# milliseconds.
LONG_PAGE_CHARS = 16_000


def analyse_long_pages(pages: Iterable[tuple[str, str]]) -> None:
    """pages: (content, kind) of every page of a build."""
    for content, kind in pages:
        if len(content) >= LONG_PAGE_CHARS:
            _analyse(content, kind)


# Text in quotation marks in running text (not the quote characters a code span shows), and what
# marks a quote as an example of asking: several words, the first in lower case. A quoted word
# names a value or a term (the "default" option), a quoted sentence a message the page explains,
# and a quote that is a link's text what it links to.
_QUOTED = re.compile(r'(?<![`\w])"(\w[^"\n`]{0,198}?[\w?!.])"(?![`\w])|“([^”\n`]{1,200})”')
_EXAMPLE = re.compile(r"^[a-z]\S*\s+\S+\s+\S")
# "What happens if I don't answer a question?" and "How do I answer a question?" share every
# word that weighs; only the negation tells which heading the question restates.
_NEGATION = re.compile(r"\b(?:not|never|without|no)\b|n't\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def _analyse(content: str, kind: str = "markdown") -> _Analysed:
    # Sources only change through a rebuild, and the same few answer most questions.
    document = parse_cached(content, kind)
    grouped: dict[int, list[_Piece]] = {}
    for unit in units(content, kind=kind):
        text = VERSION_LABEL.sub("", unit.text)
        weak: frozenset[str] = frozenset()
        if unit.kind == "code":
            lead_terms = frozenset(terms(unit.lead))
            weak = frozenset(terms(unit.text)) - lead_terms
            text = f"{unit.lead} {unit.text}"
        elif unit.kind == "row":
            text = f"{unit.header.splitlines()[0] if unit.header else ''} {unit.text}"
        elif unit.kind == "item" and (unit.lead or unit.parents):
            # An item is read with the sentence that introduces its list ("The encoding types are:")
            # and, nested, with the items it sits under (an exception under its base class).
            around = " ".join((unit.lead, *unit.parents))
            weak = frozenset(terms(around)) - frozenset(terms(unit.text))
            text = f"{around} {unit.text}"
        piece_terms = frozenset(terms(text))
        examples: frozenset[str] = frozenset()
        if unit.kind != "code":
            weak |= name_parts(text)
            # Words a page only quotes — what to type, in "remind me to call Bob tomorrow" — are
            # examples of asking: they answer how to ask, not a question about Bob.
            quoted = [m[1] or m[2] for m in _QUOTED.finditer(text)]
            if asking := [q for q in quoted if _EXAMPLE.search(q) and q not in unit.link_text]:
                without_them = " ".join([_QUOTED.sub(" ", text), *(q for q in quoted if q not in asking)])
                examples = piece_terms - frozenset(terms(without_them))
        # A sentence that is mostly links names other pages; a link inside a statement is part of it.
        linking = frozenset(terms(unit.link_text)) if unit.linked else frozenset()
        grouped.setdefault(unit.section, []).append(_Piece(unit, piece_terms, weak, linking, examples))
    sections = {}
    for number, pieces in grouped.items():
        path = document.section_headings[number] if number < len(document.section_headings) else ()
        every = frozenset().union(*(p.terms for p in pieces))
        heading = path[-1] if path else ""
        sections[number] = _Section(
            heading=heading,
            context=frozenset(t for heading in path for t in terms(heading)),
            terms=every,
            examples=every - frozenset().union(*(p.terms - p.examples for p in pieces)),
            pieces=tuple(pieces),
            chars=sum(len(p.unit.text) for p in pieces),
            negated=bool(_NEGATION.search(heading)),
        )
    return _Analysed(
        sections=sections,
        headings=frozenset(section.heading for section in sections.values()),
        negated_headings=any(section.negated for section in sections.values()),
        vocabulary=frozenset(terms(content)),
        normalised=normalise_for_match(content),
        squashed=squash(content),
    )


@dataclass(frozen=True)
class _Candidate:
    score: float
    coverage: float
    own: float
    source: int  # 1-based number of the loaded source
    section: int
    piece: _Piece


def _local_weights(wanted: list[str], analysed: list[_Analysed]) -> dict[str, float]:
    """idf over the loaded sources' sections, when the caller has no corpus statistics."""
    sections = [s.terms | s.context for a in analysed for s in a.sections.values()]
    n = max(1, len(sections))
    return {t: math.log(1 + (n - (df := sum(1 for s in sections if t in s)) + 0.5) / (df + 0.5)) for t in wanted}


# Code is the answer when the question asks how to do something — anywhere in it ("…? How do I do
# that?") — or asks for the syntax, a command, an example or what to write, or for a way to
# change what something does.
_SWITCH = (
    r"\bis there (?:a|an|any) (?:way|option|setting|flag|config\w*)\b|\bturn (?:\w+ )?(?:off|on)\b"
    r"|\b(?:disable|enable|configure|settings?|options?|flags?)\b"
)
# A name to type, introduced as one ("called `x_y`", "use `--flag`", "set `a.b=1`"): an identifier
# with "_", ".", "-", "=" or "(" in it, or an option.
_NAMES_CODE = re.compile(
    r"\b(?:called|named|use|using|set|setting|pass|passing|add|adding|with|via|through|enable|disable|run|call)\s+(?:the\s+|a\s+|an\s+)?"
    r"`(?:-{1,2}[\w-]+|[\w.]*[_.=(][\w.=()\[\]-]*|[\w-]+-[\w-]+)`"
)
_HOW_TO = re.compile(
    r"^\s*(?:how|show me|example)\b|\bhow (?:do|can|should|would|to)\b|\b(?:syntax|snippet|example)\b"
    r"|\bwhat (?:do|should) i (?:put|write|add|type|set|use)\b|\bwhat(?:'s| is) the (?:command|code)\b"
    rf"|{_SWITCH}|\bcan i\b",
    re.IGNORECASE,
)
# A question after a way to change what something does ("is there a way to…", "how do I turn that
# off?") is answered first by an option or setting written as code (`--skip-string-normalization`,
# `profile = "black"`).
_ASKS_FOR_A_SWITCH = re.compile(_SWITCH, re.IGNORECASE)
_ACTIONABLE = re.compile(r"`-{1,2}[\w-]+|`[\w.]+\s*=|`[^`]*\s-{1,2}[a-z]")


_DEFAULT = terms("default")[0]

# A question that asks for a quantity ("how many workers", "what is the timeout") is answered by a
# passage that states a number ("#1128", an issue, is none); one that asks what something is by
# default, by a passage that states a value of any kind and says what the default is.
_QUANTITY = re.compile(
    r"\bhow (?:many|much|long|often|big|large|fast|wide)\b"
    r"|^\W*(?:what|which)\b(?:\W+\w+){0,3}?\W+(?:port|timeout|size|width|length|depth|level|limit|maximum|minimum|max|min"
    r"|number|count|versions?|percentage|rate|interval|delay|quality|age|expiry|lifetime)\b",
    re.IGNORECASE,
)
_ASKS_DEFAULT = re.compile(r"^\W*(?:what|which|how)\b.*\bdefaults?\b", re.IGNORECASE)
# "What does the percentage mean?" asks what a quantity stands for, not for a number.
_ASKS_MEANING = re.compile(r"\b(?:mean|means|meaning|stand\s+for|stands\s+for)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![#\d])\d")
_VALUE = re.compile(r"\d|`[^`]+`|\"[^\"]+\"|'[^' ]+'|\b(?:True|False|None|[A-Z][A-Z0-9_]{1,})\b")


@dataclass(frozen=True)
class _Asks:
    """What a question asks for, beyond its words."""

    value: re.Pattern[str] | None  # what a quotable piece must state
    default: bool  # what something is by default: the section must say "default"
    names: frozenset[str]  # the names of its asking sentences: the page must have each

    @classmethod
    def of(cls, question: str) -> _Asks:
        asks_default = bool(_ASKS_DEFAULT.search(question))
        quantity = _QUANTITY.search(question) and not _ASKS_MEANING.search(question)
        value = _NUMBER if quantity else _VALUE if asks_default else None
        return cls(value=value, default=asks_default, names=QuestionShape.of(question).asked_names)


# A question needs two pages when it asks about two things: "A and B", "A or B", "A vs B", "A, B".
_TWO_THINGS = re.compile(r"\b(?:and|or|vs|versus|both|between|difference)\b|,", re.IGNORECASE)


def answer(
    *,
    question: str,
    sources: list[tuple[str, str]] | list[tuple[str, str, str]],
    max_chars: int = 10_000,
    max_units: int = ANSWER_UNITS,
    weights: Mapping[str, float] | None = None,
) -> DraftAnswer:
    """sources: (title, content[, kind]) of each loaded source, numbered [1].. in this order.
    weights: each question term's weight (the corpus idf); computed over the sources if absent.

    Whole pieces only: a piece that does not fit in max_chars is passed over for a shorter one.
    """
    wanted = query_terms(question)
    if not wanted:
        return DraftAnswer(answer="", answered_from_sources=False)
    analysed = [_analyse(src[1], src[2] if len(src) > 2 else "markdown") for src in sources]
    weight = dict(weights) if weights else _local_weights(wanted, analysed)
    weight = {t: max(0.05, weight.get(t, max(weight.values(), default=1.0))) for t in wanted}
    total = sum(weight.values())
    how_to = bool(_HOW_TO.search(question))
    asks_for_a_switch = bool(_ASKS_FOR_A_SWITCH.search(question))
    asks_default = _DEFAULT in wanted
    wanted_set = frozenset(wanted)
    page_titles = [frozenset(terms(src[0])) for src in sources]
    # Where a loaded heading negates, a heading restates the question fully only if both negate or
    # neither does; where none does, a problem report ("X doesn't work") loses nothing.
    negates = bool(_NEGATION.search(question))
    headings_negate = any(info.negated_headings for info in analysed)

    def said(item: _Piece | _Section) -> frozenset[str]:
        # A how-to question is answered by the examples of asking too; any other by what pages say.
        return item.terms if how_to else item.terms - item.examples

    def mass(found: Iterable[str]) -> float:
        return sum(weight[t] for t in found)

    candidates: list[_Candidate] = []
    section_cover: dict[tuple[int, int], float] = {}
    for number, (info, title_terms) in enumerate(zip(analysed, page_titles, strict=True), start=1):
        intro = min(info.sections, default=None)
        for key, section in info.sections.items():
            context = section.context | title_terms
            section_wanted = wanted_set & (said(section) | context)
            section_cover[(number, key)] = mass(section_wanted) / total
            if section_cover[(number, key)] < PAIR_COVERAGE:
                continue  # no piece of it can cover enough of the question, even with another source
            # A heading the question restates ("Does Black have an API?") names what the section
            # answers: the share of the heading's words the question has, times their weight.
            # The words that frame a question ("difference", "example") count on neither side.
            heading_terms = frozenset(terms(section.heading)) - QUESTION_FRAME
            fit = len(heading_terms & wanted_set) / len(heading_terms) if heading_terms else 0.0
            heading_match = fit * mass(heading_terms & wanted_set) / total
            if headings_negate and section.negated != negates:
                heading_match *= 0.5
            for index, piece in enumerate(section.pieces):
                own_terms = wanted_set & said(piece)
                # A page's opening sentences are about what its title names.
                opening = index < 2 and piece.unit.kind in ("sentence", "item")
                if not own_terms and not opening:
                    continue
                if piece.unit.kind == "code" and not how_to and not (own_terms - piece.weak):
                    continue  # code that only shares names with the question is no answer to a "what"
                if asks_default and piece.unit.kind == "code" and own_terms & piece.weak:
                    continue  # an example that sets the value does not say what it is by default
                in_context = (wanted_set & context) - own_terms
                nearby = (wanted_set & said(section)) - own_terms - in_context
                own = (mass(own_terms - piece.weak - piece.linking) + 0.5 * mass(own_terms & (piece.weak | piece.linking))) / total
                # A section is about what its heading names (its first sentences most of all,
                # and at the top of the page, what the title names).
                named = section.context | (title_terms if key == intro and opening else frozenset())
                own += (0.5 if opening else 0.3) * mass((wanted_set & named) - own_terms) / total
                coverage = (mass(own_terms) + mass(in_context) + 0.5 * mass(nearby)) / total
                score = own + 0.6 * mass(in_context) / total + 0.3 * mass(nearby) / total
                score += HEADING_MATCH * heading_match * (1.0 if opening else 0.5)
                score -= SOURCE_RANK * (number - 1)  # the sources come best first
                if piece.unit.linked:
                    score -= 0.3
                if piece.unit.kind == "code" and how_to:
                    score += 0.15
                elif asks_for_a_switch and _ACTIONABLE.search(piece.unit.text):
                    score += 0.3
                if piece.unit.kind == "item" and len(words(piece.unit.text)) < 4:
                    score -= 0.2  # a bare name in a list says nothing on its own
                candidates.append(_Candidate(score, coverage, own, number, key, piece))
    asks = _Asks.of(question)
    needed = max(LEAST_COVERAGE, MIN_COVERAGE - COVERAGE_PER_TERM * max(0, len(wanted) - TERMS_COVERED_WHOLE))
    page_terms = [info.vocabulary | title for info, title in zip(analysed, page_titles, strict=True)]

    def qualifies(c: _Candidate) -> bool:
        section = analysed[c.source - 1].sections[c.section]
        return (
            c.coverage >= needed
            and (len(wanted_set) > FEW_TERMS or wanted_set <= said(section) | section.context | page_titles[c.source - 1])
            and c.own >= MIN_OWN * needed / MIN_COVERAGE
            and (asks.value is None or bool(asks.value.search(c.piece.unit.text)))
            and (not asks.default or _DEFAULT in section.terms)
            and asks.names <= page_terms[c.source - 1]
        )

    qualified = [c for c in candidates if qualifies(c)]
    if not qualified:
        if not _TWO_THINGS.search(question):
            return DraftAnswer(answer="", answered_from_sources=False)
        return _from_two_sources(wanted_set, candidates, analysed, sources, mass=mass, total=total, max_chars=max_chars)
    best = max(qualified, key=lambda c: (c.score, -c.source, -c.piece.unit.position))
    chosen = _from_section(best, candidates, analysed, max_units=max_units, how_to=how_to)
    chosen += _from_siblings(best, chosen, candidates, wanted_set, said)
    section = analysed[best.source - 1].sections[best.section]
    covered = set(wanted) & (said(section) | section.context | page_titles[best.source - 1])
    missing = set(wanted) - covered
    if mass(missing) >= SECOND_SOURCE_SHARE * total:
        # Only a piece that brings most of what is missing: a stray shared word is not the other half.
        others = [c for c in qualified if c.source != best.source and mass(said(c.piece) & missing) >= 0.5 * mass(missing)]
        if others:
            second = max(others, key=lambda c: (mass(said(c.piece) & missing), c.score))
            chosen += _from_section(second, candidates, analysed, max_units=2)
    return _render(chosen, analysed, titles=[src[0] for src in sources], max_chars=max_chars)


def _from_two_sources(
    wanted: frozenset[str],
    candidates: list[_Candidate],
    analysed: list[_Analysed],
    sources: list[tuple[str, str]] | list[tuple[str, str, str]],
    *,
    mass: Callable[[Iterable[str]], float],
    total: float,
    max_chars: int,
) -> DraftAnswer:
    """Two pieces from two sources that together cover the question ("A and B?")."""
    # A section's opening sentences stand for what its heading names: they may carry less.
    strong = [
        c
        for c in candidates
        if c.coverage >= PAIR_COVERAGE
        and (c.own >= MIN_OWN or (c.own >= PAIR_OWN_PART and c.piece in analysed[c.source - 1].sections[c.section].pieces[:2]))
    ]
    if not strong:
        return DraftAnswer(answer="", answered_from_sources=False)
    titles = [frozenset(terms(src[0])) for src in sources]

    def about(c: _Candidate) -> frozenset[str]:
        # A piece says what its section's headings and its page's title name ("# Retries").
        return c.piece.terms | analysed[c.source - 1].sections[c.section].context | titles[c.source - 1]

    best_pair: tuple[float, _Candidate, _Candidate] | None = None
    for first in strong:
        for second in strong:
            if second.source <= first.source:
                continue
            one, two = about(first), about(second)
            together = mass(wanted & (one | two)) / total
            # Each must bring its own part of the question, and together nearly all of it.
            only_first = mass(wanted & (one - two)) / total
            only_second = mass(wanted & (two - one)) / total
            if together < PAIR_TOGETHER or min(only_first, only_second) < PAIR_OWN_PART:
                continue
            if best_pair is None or first.score + second.score > best_pair[0]:
                best_pair = (first.score + second.score, first, second)
    if best_pair is None:
        return DraftAnswer(answer="", answered_from_sources=False)
    return _render([best_pair[1], best_pair[2]], analysed, titles=[src[0] for src in sources], max_chars=max_chars)


def _from_siblings(
    best: _Candidate,
    chosen: list[_Candidate],
    candidates: list[_Candidate],
    wanted: frozenset[str],
    said: Callable[[_Piece], frozenset[str]],
) -> list[_Candidate]:
    """The best pieces of the answering page's other sections that bring a word of the question
    the chosen pieces do not have."""
    have = frozenset[str]().union(*(said(c.piece) for c in chosen)) & wanted
    others = [c for c in candidates if c.source == best.source and c.section != best.section and c.score >= SIBLING_SHARE * best.score]
    added: list[_Candidate] = []
    for _ in range(SIBLINGS):
        bringing = [c for c in others if (said(c.piece) & wanted) - have]
        if not bringing:
            break
        top = max(bringing, key=lambda c: c.score)
        added.append(top)
        have |= said(top.piece) & wanted
    return added


def _from_section(
    best: _Candidate, candidates: list[_Candidate], analysed: list[_Analysed], *, max_units: int, how_to: bool = False
) -> list[_Candidate]:
    """The best piece and its neighbours worth quoting: the whole section when it is short; for a
    question that asks how, the section's example too."""
    section = analysed[best.source - 1].sections[best.section]
    if section.chars <= SHORT_SECTION_CHARS and len(section.pieces) <= max_units:
        scored = {c.piece.unit.position: c for c in candidates if c.source == best.source and c.section == best.section}
        return [scored.get(p.unit.position) or _Candidate(0.0, 0.0, 0.0, best.source, best.section, p) for p in section.pieces]
    same = [c for c in candidates if c.source == best.source and c.section == best.section and c.score >= RELATIVE_CUTOFF * best.score]
    same.sort(key=lambda c: -c.score)
    picked = [best] + [c for c in same if c is not best][: max_units - 1]
    if how_to and not any(c.piece.unit.kind == "code" for c in picked):
        examples = [c for c in candidates if c.source == best.source and c.section == best.section and c.piece.unit.kind == "code"]
        picked += sorted(examples, key=lambda c: -c.score)[:1]
    if how_to:
        # How to do a thing is often a name to use ("a parser flag called `ignore_unknown_options`")
        # that a sentence after the section's opening gives: the best such sentence not quoted yet.
        have = {c.piece.unit.position for c in picked}
        naming = [
            c
            for c in candidates
            if c.source == best.source
            and c.section == best.section
            and c.piece.unit.position not in have
            and _NAMES_CODE.search(c.piece.unit.text)
        ]
        # Quoted right after the best piece: the answer's length budget must not leave it out.
        picked += [replace(c, score=best.score) for c in sorted(naming, key=lambda c: -c.score)[:1]]
    leads = {c.piece.unit.lead for c in picked if c.piece.unit.kind == "item" and c.piece.unit.lead}
    if leads:
        # The whole list a lead-in introduces, not a few of its items.
        have = {c.piece.unit.position for c in picked}
        picked += [
            _Candidate(0.0, 0.0, 0.0, best.source, best.section, p)
            for p in section.pieces
            if p.unit.kind == "item" and p.unit.lead in leads and p.unit.position not in have
        ][:LIST_ITEMS]
    return picked


def _render(chosen: list[_Candidate], analysed: list[_Analysed], *, titles: list[str], max_chars: int) -> DraftAnswer:
    unique: dict[tuple[int, int], _Candidate] = {}
    for c in chosen:
        unique.setdefault((c.source, c.piece.unit.position), c)
    # The budget goes to the strongest pieces first (the matching item of a long list before its
    # neighbours), with room for a heading and a lead-in each; what fits is quoted in reading order.
    budget = 0
    kept: set[tuple[int, int]] = set()
    for key, c in sorted(unique.items(), key=lambda kv: -kv[1].score):
        unit = c.piece.unit
        estimate = len(unit.shown) + len(unit.lead) + len(analysed[c.source - 1].sections[c.section].heading) + 24
        if unit.kind == "row":
            estimate += len(unit.header)
        if budget + estimate <= max_chars:
            budget += estimate
            kept.add(key)
    ordered = [unique[key] for key in sorted(kept)]
    parts: list[tuple[int, int, str]] = []  # (source, section, markdown block)
    used = 0
    group: tuple[int, int] | None = None
    lead_shown: set[str] = set()
    parents_shown: dict[tuple[int, int], set[tuple[int, str]]] = {}
    for c in ordered:
        unit = c.piece.unit
        section = analysed[c.source - 1].sections[c.section]
        prefix = ""
        if (c.source, c.section) != group:
            heading = section.heading
            if (
                heading
                and heading != titles[c.source - 1]
                and not normalise_for_match(unit.text)[:60].startswith(normalise_for_match(heading))
            ):
                prefix = f"**{heading}** — "
        block = _quote(
            unit,
            c.source,
            prefix=prefix,
            heading=section.heading,
            show_lead=unit.lead not in lead_shown,
            shown_parents=parents_shown.setdefault((c.source, c.section), set()),
        )
        cost = len(block) + 2
        if used + cost > max_chars:
            continue
        if unit.lead:
            lead_shown.add(unit.lead)
        used += cost
        group = (c.source, c.section)
        parts.append((c.source, c.section, block))
    if not parts:
        return DraftAnswer(answer="", answered_from_sources=False)
    text = parts[0][2]
    for (source, section_number, block), (before_source, before_section, before) in zip(parts[1:], parts, strict=False):
        together = (source, section_number) == (before_source, before_section)
        if together and block.lstrip().startswith("- ") and before.splitlines()[-1].lstrip().startswith("- "):
            text += "\n" + block  # the next item of the same list
        elif together and "\n" not in block and "\n" not in before and not block.startswith(("- ", "**")) and not before.startswith("- "):
            text += " " + block  # the next sentence of the same paragraph
        else:
            text += "\n\n" + block
    return DraftAnswer(answer=text, citations=sorted({s for s, _, _ in parts}), answered_from_sources=True)


def _quote(unit: Unit, number: int, *, prefix: str, heading: str, show_lead: bool, shown_parents: set[tuple[int, str]]) -> str:
    marker = f"[{number}]"
    if unit.kind == "code":
        intro = f"{prefix}{_with_marker(unit.lead, number)}" if unit.lead else f"**{heading or 'Example'}** {marker}:"
        fence = "````" if "```" in unit.text else "```"
        return f"{intro}\n\n{fence}{unit.lang}\n{unit.text}\n{fence}"
    if unit.kind == "row":
        intro = f"**{heading or 'Table'}** {marker}:"
        table = f"{unit.header}\n{unit.text}" if unit.header else unit.text
        return f"{intro}\n\n{table}"
    if unit.kind == "item":
        item = f"- {_with_marker(unit.shown, number)}"
        shown_parents.add((len(unit.parents), unit.text))
        if unit.parents:
            # A nested item under the items it belongs to (an exception under its base classes),
            # each parent once per section.
            lines = [
                f"{'  ' * depth}- {_with_marker(parent, number)}"
                for depth, parent in enumerate(unit.parents)
                if (depth, parent) not in shown_parents
            ]
            shown_parents.update(enumerate(unit.parents))
            item = "\n".join([*lines, f"{'  ' * len(unit.parents)}{item}"])
        if unit.lead and show_lead:
            return f"{prefix}{_with_marker(unit.lead, number)}\n\n{item}"
        return f"{prefix}{item[2:]}" if prefix else item
    return f"{prefix}{_with_marker(unit.shown, number)}"


_TRAILING_STOP = re.compile(r"[.!?…:;]+$")


def _with_marker(sentence: str, number: int) -> str:
    """The marker goes before the sentence's closing punctuation, all of it ("..." included)."""
    sentence = sentence.rstrip()
    if match := _TRAILING_STOP.search(sentence):
        return f"{sentence[: match.start()].rstrip()} [{number}]{match.group(0)}"
    return f"{sentence} [{number}]"


# ---------------------------------------------------------------------------- verification

_FENCED = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_TABLE_LINES = re.compile(r"(?:^\|[^\n]*(?:\n|$))+", re.MULTILINE)
_CLAIM = re.compile(r"(?P<text>.*?)(?P<markers>(?:[ \t]*\[\d{1,3}\])+)(?P<tail>[.!?…:;,]*)", re.DOTALL)
_LEAD_IN = re.compile(r"^\s*\*\*(?P<heading>[^*\n]+)\*\*\s*(?:—\s*)?")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE)


def verify(*, draft: str, sources: list[str], kinds: Sequence[str] = ()) -> VerificationDecision:
    """sources: the content of each cited source, numbered as in the draft's markers; kinds: the
    format of each (Markdown when not given). A page is read as the answer step read it: the
    same analysis, already made."""
    analysed = [_analyse(text, kind) for text, kind in zip(sources, kinds or ["markdown"] * len(sources), strict=True)]
    issues: list[str] = []
    claims = 0
    last_markers: list[int] = []
    position = 0
    blocks = sorted(
        [(m.start(), m.end(), "code", m.group(0)) for m in _FENCED.finditer(draft)]
        + [(m.start(), m.end(), "table", m.group(0)) for m in _TABLE_LINES.finditer(draft)],
    )
    segments: list[tuple[str, str]] = []
    for start, end, kind, text in blocks:
        if start < position:
            continue  # a table-looking line inside a code block
        segments.append(("prose", draft[position:start]))
        segments.append((kind, text))
        position = end
    segments.append(("prose", draft[position:]))

    def supported(claim: str, cited: list[int]) -> bool:
        text = normalise_for_match(claim)
        if any(text and text in analysed[n - 1].normalised for n in cited):
            return True
        claim_terms = set(terms(claim))
        covered = set().union(*(analysed[n - 1].vocabulary for n in cited))
        return len(claim_terms & covered) / len(claim_terms) >= SUPPORTED_COVERAGE

    for kind, text in segments:
        if kind in ("code", "table"):
            body = text
            if kind == "code":
                body = "\n".join(text.strip("\n").split("\n")[1:-1])
            else:
                body = "\n".join(line for line in text.splitlines() if not re.fullmatch(r"\|?[\s:|-]+\|?", line.strip()))
            if not body.strip():
                continue
            claims += 1
            label = _excerpt(body)
            if not last_markers:
                issues.append(f"“{label}” cites no source.")
            elif any(n < 1 or n > len(sources) for n in last_markers):
                issues.append(f"“{label}” cites a source that was not loaded.")
            elif not all(any(squash(line) in analysed[n - 1].squashed for n in last_markers) for line in body.splitlines() if line.strip()):
                issues.append(f"“{label}” is not in the source it cites.")
            continue
        rest = 0
        text = without_markers_in_code(text)
        for match in _CLAIM.finditer(text):
            rest = match.end()
            cited = [int(n) for n in MARKER.findall(match.group("markers"))]
            last_markers = cited
            claim = _BULLET.sub("", match.group("text"))
            lead = _LEAD_IN.match(claim)
            pieces = []
            if lead:
                # A section's name as the page has it (an object described inside another's
                # description is named with it: "StreamResponse.enable_compression").
                if not any(lead.group("heading") in analysed[n - 1].headings for n in cited if 1 <= n <= len(sources)):
                    pieces.append(lead.group("heading"))
                claim = claim[lead.end() :]
            pieces.extend(split_sentences(claim))
            for piece in pieces:
                if not terms(piece):
                    continue
                claims += 1
                label = _excerpt(piece)
                if any(n < 1 or n > len(sources) for n in cited):
                    issues.append(f"“{label}” cites a source that was not loaded.")
                elif not supported(piece, cited):
                    issues.append(f"“{label}” is not supported by the source it cites.")
        for sentence in split_sentences(_BULLET.sub("", text[rest:])):
            if terms(MARKER.sub("", sentence)):
                claims += 1
                issues.append(f"“{_excerpt(sentence)}” cites no source.")
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
