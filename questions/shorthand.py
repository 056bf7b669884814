"""Text typed in the chat box while a question card waits: is it an answer, and which?

The answer shorthand: `1a 2b`, `1a, 2b`, `a b`, `2ac`, `s`/`skip`. Numbers are the questions'
positions as shown ("2 of 3"); bare letters answer the unanswered questions in order. Several
letters after a number pick several options (multi-select only). A letter is the key printed on
the option: the first option shown is `a` (and `1`). Cards show options as asked, so guesses never
move a key.

`answers_the_card` is the rule that keeps a pending card from swallowing the chat (see its
docstring); everything else typed goes through as a new message and the card is cancelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KEYS = "abcdefghij"
# A token is shorthand when it has the shape of one, whether or not its keys exist on the card: a
# question number with one letter (`1a`, and the mistyped `1z`) or with several keys (`2ac`), or a
# letter alone. So `1z` is an error ("option z is not one of a–c"), never a typed answer; `2pm`
# and `1st` are not shorthand and stay typed answers.
_TOKEN = re.compile(r"^(?:(?P<number>[0-9]{1,2})(?P<letters>[a-z]|[a-j]+)|(?P<letter>[a-z]))$")
_NUMBER = re.compile(r"[0-9]{1,2}")
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
    # Option indexes in the order the card shows them; the n-th letter picks order[n].
    order: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ShorthandAnswer:
    position: int
    indexes: tuple[int, ...]


@dataclass(frozen=True)
class Parsed:
    skip: bool
    answers: tuple[ShorthandAnswer, ...] = ()


def is_number(text: str) -> bool:
    """A number alone (`2`: the option shown second). ASCII digits only: "²" is text, not 2."""
    return bool(_NUMBER.fullmatch(text.strip()))


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
        slot: Slot | None  # None: no question has the number typed
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
    order = slot.order or tuple(range(slot.option_count))
    return tuple(order[KEYS.index(letter)] for letter in letters)


# --- new request or answer? ---------------------------------------------------------------------

SHORT_REPLY_WORDS = 6
SHORT_REPLY_CHARS = 80
# First words that make a message a request of its own rather than an answer.
REQUEST_WORDS = frozenset(
    """add archive can cancel change clean complete could create delete did do does find give help how
    is list make mark move new open please plan remove rename search set show start summarise summarize
    tell tidy update what whats what's when where which who why will write""".split()
)


def answers_the_card(text: str, *, option_labels: list[str], allow_custom: bool) -> bool:
    """Does text typed in the chat box answer the pending card, or is it a new message?

    It answers the card when it is
      1. a key or the shorthand: `b`, `1a 2b`, `2ac`, `skip`/`s`;
      2. a number alone (`2`: the second option shown);
      3. an option's label, as written on the card (case and trailing punctuation aside);
      4. or — only where the card takes a typed answer — a short reply: one line, at most six
         words and 80 characters, not a question ("…?") and not starting like a request
         ("delete …", "show …", "what …", "clean …").
    Anything else ("clean up my tasks", "what's due this week?", a long paragraph) is a new
    request: it is sent as a message, and the waiting card is cancelled with a receipt saying so.
    """
    stripped = text.strip()
    if not stripped:
        return False
    if looks_like_shorthand(stripped) or is_number(stripped):
        return True
    if label_index(stripped, option_labels) is not None:
        return True
    if not allow_custom:
        return False
    words = stripped.split()
    first = words[0].casefold().strip(".,!:;\"'“”")
    return (
        "\n" not in stripped
        and len(words) <= SHORT_REPLY_WORDS
        and len(stripped) <= SHORT_REPLY_CHARS
        and not stripped.endswith("?")
        and first not in REQUEST_WORDS
    )


def label_index(text: str, option_labels: list[str]) -> int | None:
    """The option whose label the text repeats, if any."""
    wanted = _plain(text)
    return next((i for i, label in enumerate(option_labels) if _plain(label) == wanted), None)


def _plain(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".!")
