import pytest

from questions.shorthand import (
    Parsed,
    ShorthandAnswer,
    ShorthandError,
    Slot,
    answers_the_card,
    is_number,
    label_index,
    looks_like_shorthand,
    parse,
)

THREE = [Slot(1, 4, False, True), Slot(2, 3, False, True), Slot(3, 3, True, True)]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1a 2b", (ShorthandAnswer(1, (0,)), ShorthandAnswer(2, (1,)))),
        ("1a, 2b", (ShorthandAnswer(1, (0,)), ShorthandAnswer(2, (1,)))),
        ("a b", (ShorthandAnswer(1, (0,)), ShorthandAnswer(2, (1,)))),
        ("2c 1d", (ShorthandAnswer(1, (3,)), ShorthandAnswer(2, (2,)))),
        ("3ac", (ShorthandAnswer(3, (0, 2)),)),
        ("1A;2B", (ShorthandAnswer(1, (0,)), ShorthandAnswer(2, (1,)))),
    ],
)
def test_parse(text, expected):
    assert parse(text, THREE) == Parsed(skip=False, answers=expected)


@pytest.mark.parametrize("text", ["s", "skip", " SKIP "])
def test_skip(text):
    assert parse(text, THREE) == Parsed(skip=True)


@pytest.mark.parametrize(
    "text, message",
    [
        ("3a 4b", "There is no question 4."),
        ("1e", "Option e is not one of a–d (question 1)."),
        ("2d", "Option d is not one of a–c (question 2)."),
        ("1ab", "Question 1 takes one option; pick one of a–d."),
        ("a b c d", "There are only 3 unanswered question(s)"),
        ("3aa", "An option was given twice for question 3."),
        # A mistyped key is shorthand all the same, and an error: never a typed answer.
        ("1z", "Option z is not one of a–d (question 1)."),
        ("2a 3z", "Option z is not one of a–c (question 3)."),
        ("z", "Option z is not one of a–d (question 1)."),
    ],
)
def test_errors(text, message):
    with pytest.raises(ShorthandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text, THREE)


def test_bare_letters_answer_the_unanswered_questions_in_order():
    slots = [Slot(1, 3, False, False), Slot(2, 3, False, True)]
    assert parse("c", slots).answers == (ShorthandAnswer(2, (2,)),)
    with pytest.raises(ShorthandError, match="Question 1 is already answered"):
        parse("1a", slots)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1a 2b", True), ("a", True), ("s", True), ("skip", True), ("bad idea", False), ("1a and 2b", False), ("Atlas", False), ("", False),
        # The shape counts, not whether the key exists: these are mistyped keys.
        ("1z", True), ("z", True), ("2a 1q", True),
        # Not the shape of shorthand: short replies that happen to start with a number.
        ("2pm", False), ("1st", False), ("3rd", False),
    ],
)  # fmt: skip
def test_looks_like_shorthand(text, expected):
    assert looks_like_shorthand(text) is expected


def test_letters_follow_the_order_the_card_shows():
    # Guesses put option 2 first, then 0, then 1: "a" is the first option shown.
    slots = [Slot(1, 3, False, True, order=(2, 0, 1)), Slot(2, 2, True, True, order=(1, 0))]
    assert parse("1a 2ab", slots).answers == (ShorthandAnswer(1, (2,)), ShorthandAnswer(2, (1, 0)))
    assert parse("c", slots).answers == (ShorthandAnswer(1, (1,)),)


# --- the rule: a new request or an answer to the pending card? ---------------------------------

LABELS = ["Delete completed tasks", "Review open tasks", "Review work in progress"]


@pytest.mark.parametrize(
    "text",
    [
        "b", "B", "1a 2b", "2ac", "skip", "s", "2", "12",  # keys, shorthand, numbers
        "Review open tasks", "review open tasks.", "  DELETE COMPLETED TASKS ",  # a label as written
    ],
)  # fmt: skip
def test_keys_digits_shorthand_and_labels_answer_any_card(text):
    assert answers_the_card(text, option_labels=LABELS, allow_custom=False)
    assert answers_the_card(text, option_labels=LABELS, allow_custom=True)


@pytest.mark.parametrize("text", ["the old ones", "only Atlas", "from the station", "both, I think", "Morning"])
def test_short_replies_answer_a_card_that_takes_typed_answers(text):
    assert answers_the_card(text, option_labels=LABELS, allow_custom=True)
    # …and pass a card that only takes its options: they go to the chat as messages.
    assert not answers_the_card(text, option_labels=LABELS, allow_custom=False)


@pytest.mark.parametrize(
    "text",
    [
        "clean up my tasks",
        "delete all my completed tasks",
        "what's due this week",
        "Show my notes about the launch",
        "is Atlas on track?",
        "move the design tasks to Project Atlas and tell me what is left over",
        "first line\nsecond line",
        "x" * 81,
        "",
        "   ",
    ],
)
def test_new_requests_go_through_as_messages(text):
    assert not answers_the_card(text, option_labels=LABELS, allow_custom=True)
    assert not answers_the_card(text, option_labels=LABELS, allow_custom=False)


@pytest.mark.parametrize("text", ["1z", "z", "9", "2a 3q"])
def test_a_mistyped_key_is_never_a_new_message_or_a_typed_answer(text):
    # It answers the card (as an error the person can fix), on cards with and without typed answers.
    assert answers_the_card(text, option_labels=LABELS, allow_custom=True)
    assert answers_the_card(text, option_labels=LABELS, allow_custom=False)
    assert looks_like_shorthand(text) or is_number(text)


@pytest.mark.parametrize(
    "text, expected", [("2", True), (" 12 ", True), ("123", False), ("\u00b2", False), ("\u0661", False), ("2a", False)]
)
def test_only_ascii_digits_are_a_number(text, expected):
    assert is_number(text) is expected


def test_label_index_matches_the_label_as_written():
    assert label_index("review work in progress!", LABELS) == 2
    assert label_index("review", LABELS) is None
