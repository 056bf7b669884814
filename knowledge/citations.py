"""Citation integrity: an answer may only cite the sources that were loaded, as inline [n] markers.

The markers in the text are the truth: every citation returned corresponds to an [n] the reader
can see, numbered 1..m in order of first appearance. A marker naming anything that was not
loaded is removed from the text and reported as dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MARKER = re.compile(r"\[(\d{1,3})\]")
# Citations written after the full stop ("... endpoint. [1]") are moved before it, so a sentence
# and its markers stay together when the text is split or cut.
# A run of stops ("...", "?!") moves as a whole: "It waits... [1]" becomes "It waits [1]...".
_MARKERS_AFTER_STOP = re.compile(r"(?<![.!?…\s])([.!?…]+)((?:[ \t]*\[\d{1,3}\])+)")
_SPACES_BEFORE_MARKER = re.compile(r"[ \t]+(?=\[\d{1,3}\])")
_REPEATED_MARKER = re.compile(r"(\[\d{1,3}\])(?:\s*\1)+")


@dataclass(frozen=True)
class CitedText:
    text: str
    # 1-based numbers in the caller's numbering (e.g. of the loaded sources), in final order:
    # sources[order[0] - 1] is cited as [1] in `text`.
    order: list[int]
    dropped: list[int] = field(default_factory=list)


# Code is quoted as written: `items[1]` is not a citation, and "def .iter_raw" keeps its space.
_CODE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$|(`+)[^`\n]+?\2", re.MULTILINE | re.DOTALL)


def without_markers_in_code(text: str) -> str:
    """The text with the brackets inside its code replaced by look-alikes, for reading its [n]
    markers: `Literal[10]` is code, not a citation of source 10."""
    return _CODE.sub(lambda m: m.group(0).replace("[", "\u27e6").replace("]", "\u27e7"), text)


def normalise(text: str, *, available: int) -> CitedText:
    """Keep markers 1..available, renumber them 1..m by first appearance, drop the rest."""
    code: list[str] = []

    def hide(match: re.Match) -> str:
        code.append(match.group(0))
        return f"\x00{len(code) - 1}\x00"

    cited = _normalise(_CODE.sub(hide, text.strip()), available=available)
    restored = re.sub(r"\x00(\d+)\x00", lambda m: code[int(m.group(1))], cited.text)
    return CitedText(text=restored, order=cited.order, dropped=cited.dropped)


def _normalise(text: str, *, available: int) -> CitedText:
    text = _MARKERS_AFTER_STOP.sub(lambda m: f"{_spaced(m.group(2))}{m.group(1)}", text)
    order: list[int] = []
    dropped: list[int] = []
    for match in MARKER.finditer(text):
        n = int(match.group(1))
        if 1 <= n <= available:
            if n not in order:
                order.append(n)
        elif n not in dropped:
            dropped.append(n)
    renumber = {old: new for new, old in enumerate(order, start=1)}

    def replace(match: re.Match) -> str:
        n = int(match.group(2))
        if n in renumber:
            return f"{match.group(1)}[{renumber[n]}]{match.group(3) or ''}"
        return ""  # with the spaces around it, so no gap is left before the punctuation

    text = re.sub(r"([ \t]*)\[(\d{1,3})\]([ \t]+(?=[.,;:!?]))?", replace, text)
    text = _REPEATED_MARKER.sub(r"\1", text)
    text = _SPACES_BEFORE_MARKER.sub(" ", text)
    text = re.sub(r"(?<=\S)[ \t]{2,}", " ", text).strip()
    return CitedText(text=text, order=order, dropped=dropped)


def _spaced(markers: str) -> str:
    return " " + "".join(f"[{n}]" for n in MARKER.findall(markers))


def truncate(text: str, *, max_chars: int) -> str:
    """At most max_chars: cut after the last whole sentence (with its markers) that fits."""
    if len(text) <= max_chars:
        return text
    window = text[:max_chars]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)|\n\n", window)]
    cut = max((e for e in ends if e >= max_chars // 3), default=0)
    if cut:
        return window[:cut].rstrip()
    # No sentence ends early enough: cut at a word, never inside a marker, and keep the
    # markers of the sentence that was cut so what remains of it is still attributed.
    first = re.match(r"[^\n]*?[.!?](?=\s|$)|[^\n]*", text)
    assert first is not None  # the second alternative matches any text, even an empty one
    sentence = first.group(0)
    markers = "".join(f"[{n}]" for n in MARKER.findall(sentence) if f"[{n}]" not in text[: max_chars // 3])
    suffix = "…" + (f" {markers}" if markers else "")
    window = text[: max(1, max_chars - len(suffix))]
    head = window.rsplit(" ", 1)[0] if " " in window else window
    head = re.sub(r"\[\d{0,3}$", "", head).rstrip(" ,;:")
    return head + suffix


def cite(text: str, *, available: int, max_chars: int) -> CitedText:
    """normalise → truncate → renumber what survived the cut."""
    first = normalise(text, available=available)
    if len(first.text) <= max_chars:
        return first
    second = normalise(truncate(first.text, max_chars=max_chars), available=len(first.order))
    order = [first.order[n - 1] for n in second.order]
    return CitedText(text=second.text[:max_chars], order=order, dropped=first.dropped)
