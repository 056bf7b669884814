import pytest

from questions.shorthand import Parsed, ShorthandAnswer, ShorthandError, Slot, looks_like_shorthand, parse

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
    [("1a 2b", True), ("a", True), ("s", True), ("skip", True), ("bad idea", False), ("1a and 2b", False), ("Atlas", False), ("", False)],
)
def test_looks_like_shorthand(text, expected):
    assert looks_like_shorthand(text) is expected
