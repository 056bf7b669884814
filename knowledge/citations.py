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
_MARKERS_AFTER_STOP = re.compile(r"([.!?])((?:\s*\[\d{1,3}\])+)")
_SPACES_BEFORE_MARKER = re.compile(r"[ \t]+(?=\[\d{1,3}\])")
_REPEATED_MARKER = re.compile(r"(\[\d{1,3}\])(?:\s*\1)+")


@dataclass(frozen=True)
class CitedText:
    text: str
    # 1-based numbers in the caller's numbering (e.g. of the loaded sources), in final order:
    # sources[order[0] - 1] is cited as [1] in `text`.
    order: list[int]
    dropped: list[int] = field(default_factory=list)


def normalise(text: str, *, available: int) -> CitedText:
    """Keep markers 1..available, renumber them 1..m by first appearance, drop the rest."""
    text = _MARKERS_AFTER_STOP.sub(lambda m: f"{_spaced(m.group(2))}{m.group(1)}", text.strip())
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
        n = int(match.group(1))
        return f"[{renumber[n]}]" if n in renumber else ""

    text = MARKER.sub(replace, text)
    text = _REPEATED_MARKER.sub(r"\1", text)
    text = _SPACES_BEFORE_MARKER.sub(" ", text)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)  # where a dropped marker left a gap
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
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
    sentence = re.match(r"[^\n]*?[.!?](?=\s|$)|[^\n]*", text).group(0)
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
