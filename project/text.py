"""Text a person sends, checked before it can reach Postgres.

Postgres cannot store a NUL character (U+0000) in a text column: the statement fails, which a
request shows as a 500 and a websocket as a dropped connection. Every entry point that stores a
person's text refuses it here first, with a message; a search query drops it instead (nothing is
lost: no stored text can contain it).
"""

from __future__ import annotations

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
