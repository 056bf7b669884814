"""Text from outside — a person's or a model's — made safe to store and to show.

Postgres cannot store a NUL character (U+0000) in a text column: the statement fails, which a
request shows as a 500 and a websocket as a dropped connection. Every entry point that stores a
person's text refuses it here first, with a message; a search query drops it instead (nothing is
lost: no stored text can contain it).

Bidirectional controls (embeddings, overrides, isolates and marks) reorder the text around them:
a link whose text is U+202E then "gpj.exe" reads as "exe.jpg". As code review tools do, text a
model wrote shows each as what it is, a "<U+202E>" marker, instead of obeying it.
"""

from __future__ import annotations

import re

from project.errors import Rejected

NUL = "\x00"


class ContainsNul(Rejected):
    """The text holds a NUL character; nothing was written."""


def refuse_nul(text: str, *, what: str) -> str:
    """`text` unchanged, or ContainsNul naming `what` ("That message") for the person."""
    if NUL in text:
        raise ContainsNul(f"{what} contains a NUL character (U+0000); remove it and try again.")
    return text


def without_nul(text: str) -> str:
    return text.replace(NUL, "")


BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def bidi_marker(control: str) -> str:
    return f"<U+{ord(control):04X}>"


def visible_bidi_controls(text: str) -> str:
    """`text` with each bidirectional control replaced by its marker, as plain text."""
    return BIDI_CONTROLS.sub(lambda m: bidi_marker(m.group()), text)


def excerpt(text: str, limit: int) -> str:
    """`text` on one line, cut at a word to at most `limit` characters, "…" marking the cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0] + "…"
