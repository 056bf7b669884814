"""Seed 002's answer shorthand typed in the chat box: `1a 2b`, `1a, 2b`, `a b`, `2ac`, `s`/`skip`.

Numbers are the questions' positions as shown ("2 of 3"); bare letters answer the unanswered
questions in order. Several letters after a number pick several options (multi-select only).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

KEYS = "abcdefghij"
_TOKEN = re.compile(r"^(?:(?P<number>\d{1,2})(?P<letters>[a-j]+)|(?P<letter>[a-j]))$")
_SPLIT = re.compile(r"[\s,;]+")


class ShorthandError(ValueError):
    pass


@dataclass(frozen=True)
class Slot:
    """A question as the shorthand sees it."""

    position: int  # 1-based, as shown
    option_count: int
    multi_select: bool
    pending: bool


@dataclass(frozen=True)
class ShorthandAnswer:
    position: int
    indexes: tuple[int, ...]


@dataclass(frozen=True)
class Parsed:
    skip: bool
    answers: tuple[ShorthandAnswer, ...] = ()


def looks_like_shorthand(text: str) -> bool:
    """True when the whole text is shorthand (so "bad idea" stays a typed answer)."""
    lowered = text.strip().lower()
    if lowered in ("s", "skip"):
        return True
    tokens = [t for t in _SPLIT.split(lowered) if t]
    return bool(tokens) and all(_TOKEN.match(t) for t in tokens)


def parse(text: str, slots: list[Slot]) -> Parsed:
    lowered = text.strip().lower()
    if lowered in ("s", "skip"):
        return Parsed(skip=True)
    by_position = {s.position: s for s in slots}
    unanswered = [s for s in slots if s.pending]
    answers: dict[int, ShorthandAnswer] = {}
    bare = 0
    for token in (t for t in _SPLIT.split(lowered) if t):
        match = _TOKEN.match(token)
        if not match:
            raise ShorthandError(f"“{token}” is not an answer; use a question number and option letter, e.g. 1a.")
        if match["letter"]:
            if bare >= len(unanswered):
                raise ShorthandError(f"There are only {len(unanswered)} unanswered question(s); “{token}” has none left to answer.")
            slot, letters = unanswered[bare], match["letter"]
            bare += 1
        else:
            number = int(match["number"])
            slot = by_position.get(number)
            if slot is None:
                raise ShorthandError(f"There is no question {number}.")
            if not slot.pending:
                raise ShorthandError(f"Question {number} is already answered.")
            letters = match["letters"]
        answers[slot.position] = ShorthandAnswer(slot.position, _indexes(slot, letters))
    return Parsed(skip=False, answers=tuple(sorted(answers.values(), key=lambda a: a.position)))


def _indexes(slot: Slot, letters: str) -> tuple[int, ...]:
    keys = KEYS[: slot.option_count]
    for letter in letters:
        if letter not in keys:
            raise ShorthandError(f"Option {letter} is not one of {keys[0]}–{keys[-1]} (question {slot.position}).")
    if len(letters) > 1 and not slot.multi_select:
        raise ShorthandError(f"Question {slot.position} takes one option; pick one of {keys[0]}–{keys[-1]}.")
    if len(set(letters)) != len(letters):
        raise ShorthandError(f"An option was given twice for question {slot.position}.")
    return tuple(KEYS.index(letter) for letter in letters)
