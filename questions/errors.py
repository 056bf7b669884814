"""What the question services refuse with. Each carries the message the person (or, for
`AskRejected`, the model) is shown; `questions.services` re-exports them for its callers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from project.errors import Conflict, NotFound, Rejected

if TYPE_CHECKING:
    from questions.models import PendingQuestion


class AskRejected(ValueError):
    """The model may not ask right now; the text tells it why (it arrives as a tool error)."""


class AnswerRejected(Rejected):
    """An answer that does not fit its question; nothing was written. The text is for the person."""


class QuestionNotFound(NotFound):
    """No such question or group — or another user's, which looks the same."""

    def __init__(self, message: str = "That question was not found."):
        super().__init__(message)


class AlreadyResolved(Conflict):
    """Someone (or the deadline) resolved this question first. Entry points show its receipt."""

    def __init__(self, question: PendingQuestion):
        super().__init__("That question was already answered.")
        self.question = question
