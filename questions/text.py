"""Small text helpers shared by the offline guesser, detector and clarification."""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    "a an and are as at be by can do does for from have i in is it me my of on or our should so that the "
    "their them then there these they this to us was we what when where which who will with would you your".split()
)


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS and len(w) > 1}


def last_sentence(text: str) -> str:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if s.strip()]
    return sentences[-1] if sentences else ""
