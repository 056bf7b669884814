"""Ranking by rare terms and by section: BM25 over the sections of the knowledge base. No Django.

A question's words are not all worth the same: "digest" names a topic, "http" is on every page of
an HTTP library's docs. Each term weighs its inverse document frequency (BM25's idf) and a page
is scored by its best-matching section — the body of the section, the headings above it and the
page title, the headings and title counting more — plus a little of the page as a whole, so a
page that answers in one place beats one that mentions each word somewhere.

The same weights decide, in the offline answer step, whether a passage covers the question.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from wordfreq import zipf_frequency

from knowledge.text import CASED_TOKEN, parse_cached, split_sentences, term_list, terms

K1 = 1.2
B = 0.75
TITLE_WEIGHT = 2  # a term in the page title counts as two occurrences in the section
HEADING_WEIGHT = 2  # likewise a term in the headings above the section
PAGE_SHARE = 1.0  # the page-level BM25 is added to the best section's score
SECTION_EXTRA = 20  # added to every section's length: a two-line section is not a page
HEADING_MATCH = 1.0  # offline selection: a restated heading adds this share of its terms' weight
# A plain word's weight by how common it is in English (its Zipf frequency: 6 is "see", 4 is
# "indentation"): full up to COMMON_FROM, falling to COMMONEST_FACTOR at COMMONEST.
COMMON_FROM = 4.0
COMMONEST = 6.0
COMMONEST_FACTOR = 0.3
OWN_IDENTIFIER = 0.1  # an identifier of the asker's own that no page uses
SCENE_WORD = 0.3  # a term found only in the sentences that do not ask


@dataclass(frozen=True)
class RankedPage:
    source_id: str
    title: str
    score: float


@dataclass
class _Section:
    doc: int
    tf: Counter[str]  # field-weighted term frequencies (body + headings + title)
    length: float
    heading: frozenset[str] = frozenset()  # the terms of its own heading


@dataclass
class Corpus:
    """Term statistics of a set of pages, built once per index build and shared by requests."""

    source_ids: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    document_frequency: Counter = field(default_factory=Counter)
    sections: list[_Section] = field(default_factory=list)
    page_tf: list[Counter] = field(default_factory=list)
    page_length: list[int] = field(default_factory=list)
    postings: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # term → section numbers
    page_postings: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    average_section_length: float = 1.0
    average_page_length: float = 1.0
    # source_id → (pk, title, content, kind): the offline engine loads its sources from here.
    pages: dict[str, tuple] = field(default_factory=dict)

    @classmethod
    def build(cls, pages: list[tuple]) -> Corpus:
        """pages: (source_id, title, content, kind[, pk]) of every indexed page."""
        corpus = cls()
        for doc, (source_id, title, content, kind, *rest) in enumerate(pages):
            corpus.pages[source_id] = (rest[0] if rest else None, title, content, kind)
            corpus.source_ids.append(source_id)
            corpus.titles.append(title)
            document = parse_cached(content, kind)
            title_terms = term_list(title)
            page_terms = title_terms + term_list(content)
            page_tf = Counter(page_terms)
            corpus.page_tf.append(page_tf)
            corpus.page_length.append(len(page_terms))
            corpus.document_frequency.update(set(page_tf))
            for term in page_tf:
                corpus.page_postings[term].append(doc)
            bodies: dict[int, list[str]] = defaultdict(list)
            for block in document.blocks:
                bodies[block.section].extend(term_list(block.text if block.kind != "code" else f"{block.lead} {block.text}"))
            for number, path in enumerate(document.section_headings):
                body = bodies.get(number, [])
                if not body and number:
                    continue
                tf = Counter(body)
                for term in set(t for heading in path for t in term_list(heading)):
                    tf[term] += HEADING_WEIGHT
                for term in set(title_terms):
                    tf[term] += TITLE_WEIGHT
                index = len(corpus.sections)
                heading = frozenset(term_list(path[-1])) if path else frozenset()
                corpus.sections.append(_Section(doc, tf, float(len(body) + SECTION_EXTRA), heading))
                for term in tf:
                    corpus.postings[term].append(index)
        if corpus.sections:
            corpus.average_section_length = sum(s.length for s in corpus.sections) / len(corpus.sections)
        if corpus.page_length:
            corpus.average_page_length = max(1.0, sum(corpus.page_length) / len(corpus.page_length))
        # A question's words weigh by their English frequency: the word list is read with the
        # build, not by the first question.
        _english_zipf("the")
        return corpus

    @property
    def size(self) -> int:
        return len(self.source_ids)

    def idf(self, term: str) -> float:
        """BM25's idf."""
        n = max(1, self.size)
        df = self.document_frequency.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def weights(self, question: str) -> dict[str, float]:
        """Each question term's weight: its idf, with what the words of a question say about the
        term beside what the pages say.

        - A name no page uses (Redis, QUIC) is what the pages lack and weighs the most.
        - A plain word no page uses is as often the user's word for something the pages say
          otherwise ("cap" for "limit"), and weighs as a word one page uses; an identifier of the
          asker's own (`total_qty`, `app.main`) that no page uses weighs next to nothing.
        - A plain word the pages do use weighs less the more common it is in English ("keep",
          "stop" against "indentation"): a handful of pages is too few to tell that from its idf.
        - Words only in the sentences that set the scene ("I set x = 0 in the loop. …") weigh
          less than those of the sentences that ask.
        """
        shape = QuestionShape.of(question)
        out: dict[str, float] = {}
        for term in query_terms(question):
            used = bool(self.document_frequency.get(term))
            if term in shape.named:
                weight = self.idf(term)
            elif used:
                weight = self.idf(term) * _plain_word_factor(shape.commonness.get(term, 0.0))
            else:
                weight = self.idf_of_rarest
            if not used and term in shape.code:
                weight *= OWN_IDENTIFIER
            out[term] = weight if term in shape.asked else weight * SCENE_WORD
        return out

    def page_share(self, weights: dict[str, float], source_id: str) -> float:
        """The share of the question's weight (`weights`, as `weights()` gives them) whose terms
        the page has, anywhere in it."""
        total = sum(weights.values())
        try:
            page = self.page_tf[self.source_ids.index(source_id)]
        except ValueError:
            return 0.0
        return sum(weight for term, weight in weights.items() if term in page) / total if total else 0.0

    @property
    def idf_of_rarest(self) -> float:
        n = max(1, self.size)
        return math.log(1 + (n - 0.5) / 1.5)

    def rank(self, question: str, *, limit: int, restated_headings: bool = False) -> list[RankedPage]:
        """restated_headings: a section whose heading the question restates scores more (the
        offline engine's selection; the model's pre-filter keeps plain BM25)."""
        weights = self.weights(question)
        if not weights or limit < 1:
            return []
        best_section: dict[int, float] = defaultdict(float)
        section_scores: dict[int, float] = defaultdict(float)
        for term, weight in weights.items():
            for index in self.postings.get(term, ()):
                section = self.sections[index]
                tf = section.tf[term]
                norm = K1 * (1 - B + B * section.length / self.average_section_length)
                section_scores[index] += weight * tf * (K1 + 1) / (tf + norm)
        for index, score in section_scores.items():
            heading = self.sections[index].heading
            if restated_headings and heading:
                # A heading the question restates ("Which Python versions does Black support?").
                shared = heading & weights.keys()
                score += HEADING_MATCH * len(shared) / len(heading) * sum(weights[t] for t in shared)
            doc = self.sections[index].doc
            best_section[doc] = max(best_section[doc], score)
        page_scores: dict[int, float] = defaultdict(float)
        for term, weight in weights.items():
            for doc in self.page_postings.get(term, ()):
                tf = self.page_tf[doc][term]
                norm = K1 * (1 - B + B * self.page_length[doc] / self.average_page_length)
                page_scores[doc] += weight * tf * (K1 + 1) / (tf + norm)
        scored = [(best_section[doc] + PAGE_SHARE * page_scores[doc], doc) for doc in best_section]
        scored.sort(key=lambda pair: (-pair[0], self.source_ids[pair[1]]))
        return [RankedPage(self.source_ids[doc], self.titles[doc], round(score, 4)) for score, doc in scored[:limit] if score > 0]


# Words that frame a question rather than name its topic ("what is the difference between …", "is
# there any guidance for …", "what's the simplest way to …").
QUESTION_FRAME = frozenset(
    terms(
        "difference differences possible example examples mean means happen happens work works guidance advice recommend"
        " recommended recommendation intended supposed proper properly correct correctly best practice practices approach"
        " idea ideas solution workaround suggestion suggest tips simple simplest simply easy easiest easily straightforward"
        " variant alternative equivalent somehow anyway wondering wonder confused understand sure really actually"
        " someone somebody anyone anybody"
    )
)


_NUMBER_WITH_UNIT = re.compile(r"^(\d+)(?:m?s|m|secs?|mins?|h|hrs?|kb?|mb|gb)$")


def query_terms(question: str) -> list[str]:
    found = [t for t in terms(question) if t not in QUESTION_FRAME] or terms(question)
    # "60s", "10ms", "5mb": docs write the number and the unit apart ("60 seconds"), and the
    # number is what a passage must have.
    return list(dict.fromkeys(match.group(1) if (match := _NUMBER_WITH_UNIT.match(term)) else term for term in found))


_WORD_SHAPE = re.compile(r"[A-Za-z][\w-]*")
# A token written as code: snake_case, dotted.names, calls, paths, assignments, camelCase.
_CODE_SHAPE = re.compile(r"\S*(?:[_.(){}\[\]=/\\]|[a-z][A-Z])\S*")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_ASKING_OPENING = re.compile(
    r"^\W*(?:how|what|why|when|where|which|who|whom|whose|can|could|does|do|did|is|are|was|were|should|shall|will|would"
    r"|may|might|has|have|any|anyone|tell|explain|show)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class QuestionShape:
    """What the way a question is written says about its terms."""

    named: frozenset[str]  # written as names: capitalised inside a sentence, or in capitals (QUIC)
    asked_names: frozenset[str]  # the names of the sentences that ask
    asked: frozenset[str]  # the terms of the sentences that ask
    code: frozenset[str]  # the terms of tokens written as code
    commonness: dict[str, float]  # each term's English Zipf frequency (of its most common word)

    @classmethod
    def of(cls, question: str) -> QuestionShape:
        sentences = split_sentences(question)
        asking = _asking_sentences(sentences)
        asked = frozenset(t for sentence in asking for t in term_list(sentence))
        if len(asked) < 2:
            asked = frozenset(term_list(question))  # "How do I do that?": the topic is in the sentences before it
        code: set[str] = set()
        for token in _CODE_SHAPE.findall(question):
            code.update(term_list(token.strip("`'\",.:;?!")))
        for span in _CODE_SPAN.findall(question):
            code.update(term_list(span))
        commonness: dict[str, float] = {}
        for token in CASED_TOKEN.findall(question):
            frequency = _english_zipf(token.lower())
            for term in term_list(token):
                commonness[term] = max(commonness.get(term, 0.0), frequency)
        return cls(
            named=_named_terms(sentences),
            asked_names=_named_terms(asking),
            asked=asked,
            code=frozenset(code),
            commonness=commonness,
        )


def _asking_sentences(sentences: list[str]) -> list[str]:
    """The sentences that ask: with a "?", an interrogative opening, or the last one (whose "?"
    the gate may have taken off)."""
    last = len(sentences) - 1
    return [s for i, s in enumerate(sentences) if "?" in s or _ASKING_OPENING.match(s) or i == last]


def _named_terms(sentences: list[str]) -> frozenset[str]:
    named: list[str] = []
    for sentence in sentences:
        for index, match in enumerate(_WORD_SHAPE.finditer(sentence)):
            word = match.group(0)
            if (index and word[0].isupper()) or (len(word) > 1 and word.isupper()):
                named.extend(terms(word))
    return frozenset(named)


@functools.lru_cache(maxsize=65_536)
def _english_zipf(word: str) -> float:
    return zipf_frequency(word, "en")


def _plain_word_factor(zipf: float) -> float:
    if zipf <= COMMON_FROM:
        return 1.0
    share = min(1.0, (zipf - COMMON_FROM) / (COMMONEST - COMMON_FROM))
    return 1.0 - (1.0 - COMMONEST_FACTOR) * share
