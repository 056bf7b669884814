"""Plain-text helpers shared by ingestion, the offline engine and verification. No Django.

The offline engine's notion of "the same word" (terms) is deliberately small and symmetric: the
question and the sources go through the same normalisation, so a crude stemmer is enough.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from html.parser import HTMLParser

# Postgres' English stop words (snowball), plus a few words that carry no topic in questions.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don shouldn isn aren wasn weren hasn haven hadn doesn didn won wouldn
    couldn mustn let get got please thanks thank tell explain know want need way use using also via e g
    """.split()
)

_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s", "e")


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            root = word[: -len(suffix)]
            return root + "y" if suffix in ("ies", "ied") else root
    return word


def words(text: str) -> list[str]:
    """Lower-case alphanumeric words, split the way Postgres' parser splits LLM_BASE_URL."""
    return _WORD.findall(text.lower())


def terms(text: str) -> list[str]:
    """Distinct stemmed content words, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word in STOPWORDS or len(word) < 2:
            continue
        seen.setdefault(stem(word), None)
    return list(seen)


def search_words(text: str, *, limit: int = 24) -> list[str]:
    """Distinct non-stop words of a question, for an OR full-text query (Postgres stems them)."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS and len(word) >= 2:
            seen.setdefault(word, None)
    return list(seen)[:limit]


# ---------------------------------------------------------------------------- sentences and units

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'#*+:.])\1{2,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def strip_links(text: str) -> str:
    """Markdown links become their text: a relative link would point nowhere outside its page."""
    return _LINK.sub(lambda m: m.group(1), text)


@dataclass(frozen=True)
class Unit:
    """One quotable sentence (or list item) of a source, with the heading it sits under."""

    text: str
    heading: str
    position: int
    linked: bool = False  # it pointed to another page: navigation more often than an answer


def units(content: str) -> list[Unit]:
    """Quotable sentences of a Markdown/RST/plain-text document: code, tables and headings excluded."""
    out: list[Unit] = []
    heading = ""
    block: list[str] = []
    in_fence = False
    in_literal = False  # RST "::" literal block: indented lines after it
    lines = content.splitlines()

    def flush() -> None:
        nonlocal block
        if block:
            for sentence in split_sentences(" ".join(block)):
                text = strip_links(sentence)
                if _quotable(text):
                    out.append(Unit(text, heading, len(out), linked=bool(_LINK.search(sentence))))
        block = []

    for line in lines:
        stripped = line.strip()
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if in_literal:
            if not stripped or line[:1].isspace():
                continue
            in_literal = False
        if not stripped or stripped.startswith(("|", "<!--", ".. ")):
            flush()
            in_literal = stripped.startswith(".. ")  # an RST directive: its indented body is not prose
            continue
        if match := _HEADING.match(stripped):
            flush()
            heading = match.group(2)
            continue
        if _RST_UNDERLINE.match(stripped):
            # The line above was an RST heading, not prose.
            if block:
                heading = block.pop()
            flush()
            continue
        if line.startswith(("    ", "\t")) and not block:
            continue  # indented code
        if match := _LIST_ITEM.match(line):
            flush()
            block = [match.group(1)]
            continue
        if stripped.endswith("::"):
            # RST "Paragraph::" introduces an indented literal block and reads as "Paragraph:".
            block.append(stripped[:-1])
            flush()
            in_literal = True
            continue
        block.append(stripped.lstrip("> "))
    flush()
    return out


def _quotable(sentence: str) -> bool:
    # An introduction to a list or code block reads as a dangling half-thought out of context.
    return len(sentence) >= 20 and not sentence.endswith(":") and len(words(sentence)) >= 4


def normalise_for_match(text: str) -> str:
    """Lower-cased words joined by single spaces: markup, punctuation and markers do not count."""
    return " ".join(words(strip_links(text)))


# ---------------------------------------------------------------------------- titles and summaries


def title_of(content: str, *, kind: str, fallback: str) -> str:
    lines = [line.strip() for line in content.splitlines()]
    for i, line in enumerate(lines):
        if match := _HEADING.match(line):
            return match.group(2)[:300]
        if kind == "rst" and line and i + 1 < len(lines) and _RST_UNDERLINE.match(lines[i + 1]):
            return line[:300]
    if kind == "text":
        first = next((line for line in lines if line), "")
        if first and len(first) <= 120:
            return first
    return fallback.replace("-", " ").replace("_", " ").strip().capitalize()[:300] or "Untitled"


def headings_of(content: str) -> list[str]:
    found = []
    lines = content.splitlines()
    in_fence = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if (match := _HEADING.match(stripped)) and len(match.group(1)) >= 2:
            found.append(match.group(2))
        elif stripped and i + 1 < len(lines) and _RST_UNDERLINE.match(lines[i + 1].strip()) and i > 1:
            found.append(stripped)
    return found


SUMMARY_MAX_CHARS = 300


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:-— ")
    return cut + "…"


def extractive_summary(*, title: str, content: str) -> str:
    """The offline engine's index entry: the title, the opening sentence, the section headings."""
    opening = next((u.text for u in units(content)), "")
    sections = [h for h in headings_of(content) if h.lower() != title.lower()][:8]
    summary = f"{title}."
    if opening:
        summary += f" {opening}"
    if not summary.endswith((".", "!", "?")):
        summary += "."
    if sections:
        summary += f" Sections: {', '.join(sections)}."
    return clip(summary, SUMMARY_MAX_CHARS)


def clean_summary(text: str) -> str:
    """One line of plain text: what a model wrote for the index, without quotes or Markdown."""
    # Markdown emphasis and code marks go; underscores inside names (LLM_BASE_URL) stay.
    text = re.sub(r"`+|\*\*|__(?=\w)|(?<=\w)__|^#+\s*|^>\s*", "", text.strip(), flags=re.MULTILINE)
    text = text.strip().strip('"').strip("'")
    text = re.sub(r"^(summary|index entry)\s*:\s*", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^\s*[-•]\s*", "", text, flags=re.MULTILINE)
    return clip(text, SUMMARY_MAX_CHARS)


# ---------------------------------------------------------------------------- HTML


class _HTMLToText(HTMLParser):
    """HTML → Markdown-ish text: headings keep their level, list items their bullets, code its fence."""

    SKIP = {"script", "style", "noscript", "svg", "nav", "footer", "form", "template", "iframe", "button"}
    BLOCK = {"p", "div", "section", "article", "main", "header", "table", "tr", "blockquote", "dl", "dt", "dd", "ul", "ol", "br", "hr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._pre = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in self.SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag == "pre":
            self._pre += 1
            self.parts.append("\n\n```\n")
        elif tag in self.BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            self.parts.append("\n```\n\n")
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"} or tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML page."""
    parser = _HTMLToText()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    lines = [line.rstrip() for line in text.splitlines()]
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(line if line.strip() else "" for line in lines)).strip()
    # "# Title" lines come out with a stray leading space when the heading text started with one.
    cleaned = re.sub(r"^(#{1,6}) +", r"\1 ", cleaned, flags=re.MULTILINE)
    cleaned = re.sub(r"^- +", "- ", cleaned, flags=re.MULTILINE)
    return " ".join(parser.title.split()), cleaned
