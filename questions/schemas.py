"""Validation at the edges of the questions feature (length, count and range rules), as pydantic models.

The model's `ask_user` arguments and a person's answer are both checked here; a violation is a
message a model can correct or a person can act on.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from project.text import refuse_nul, visible_bidi_controls
from questions.errors import AnswerRejected

QUESTION_MAX = 500
OPTION_MAX = 200
PLACEHOLDER_MAX = 100
CUSTOM_MAX = 1000
HEADER_MAX = 40
MIN_OPTIONS, MAX_OPTIONS = 2, 6
MAX_QUESTIONS_PER_ASK = 4

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
# What a model writes on a card is shown to a person: its bidirectional controls become visible
# markers ("<U+202E>"), so a reversed option cannot pass for another.
Shown = AfterValidator(visible_bidi_controls)


class OptionSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: Annotated[NonEmpty, StringConstraints(max_length=OPTION_MAX), Shown]
    description: Annotated[str, StringConstraints(strip_whitespace=True, max_length=OPTION_MAX), Shown] = ""


class QuestionSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: Annotated[NonEmpty, StringConstraints(max_length=QUESTION_MAX), Shown]
    header: Annotated[str, StringConstraints(strip_whitespace=True, max_length=HEADER_MAX), Shown] = Field(
        "", description="A 1-3 word chip shown above the question, e.g. 'Project'."
    )
    options: list[OptionSpec] = Field(min_length=MIN_OPTIONS, max_length=MAX_OPTIONS)
    allow_custom: bool = Field(True, description="Let the user type their own answer.")
    placeholder: Annotated[str, StringConstraints(strip_whitespace=True, max_length=PLACEHOLDER_MAX), Shown] = ""
    multi_select: bool = Field(False, description="Let the user pick several options.")
    timeout_seconds: float | None = Field(
        None, ge=5, le=3600, description="Seconds before the default (the most likely option) is applied."
    )

    @field_validator("options")
    @classmethod
    def _distinct_labels(cls, options: list[OptionSpec]) -> list[OptionSpec]:
        labels = [o.label.casefold() for o in options]
        if len(set(labels)) != len(labels):
            raise ValueError("option labels must be distinct")
        return options


class AskUserArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: list[QuestionSpec] = Field(min_length=1, max_length=MAX_QUESTIONS_PER_ASK)


class AnswerInput(BaseModel):
    """One person's answer to one question, before it is checked against that question."""

    model_config = ConfigDict(extra="forbid", strict=True)

    selected_indexes: list[int] = Field(default_factory=list)
    # When the client names the label it showed, it must match the option at that index.
    labels: list[str] | None = None
    custom: str | None = None
    # A confirmation's ticked changes, by their place in its list (0 = the first). None: every
    # change listed. Checked against the card in questions.services.
    changes: list[int] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "AnswerInput":
        if self.custom is not None:
            self.custom = refuse_nul(self.custom, what="That answer").strip()
            if not self.custom:
                raise ValueError("Type an answer first.")
            if len(self.custom) > CUSTOM_MAX:
                raise ValueError(f"That answer is {len(self.custom):,} characters; the limit is {CUSTOM_MAX:,}.")
            if self.selected_indexes:
                raise ValueError("Pick options or type an answer, not both.")
            if self.changes is not None:
                raise ValueError("Tick changes or type an answer, not both.")
        elif not self.selected_indexes:
            raise ValueError("Pick an option or type an answer.")
        return self


class AnswerFields(BaseModel):
    """An answer as a client sends it, the same over both edges: the card's form posted over HTTP
    (its strings turned into numbers by `chat.question_views.parse_answer_form`, explicitly) and
    the websocket's `answer` frame (`chat.frames.AnswerQuestion`). Strict: a bool is not an index
    and a string is not a number."""

    model_config = ConfigDict(extra="ignore", strict=True)  # a frame's HEADERS, a form's CSRF token

    option: int | None = None  # a button: one option
    options: list[int] | None = None  # checkboxes: several
    label: str | list[str] | None = None  # what the client showed at those indexes
    custom: str | None = None  # typed
    # A confirmation's ticked changes, by place in its list; the one field for them on both edges.
    changes: list[int] | None = Field(None, max_length=500)

    def to_answer(self) -> AnswerInput:
        """Raises AnswerRejected, or pydantic's ValidationError from AnswerInput's rules."""
        if self.option is not None and self.options is not None:
            raise AnswerRejected("Pick one option, or several, not both.")
        picked = [self.option] if self.option is not None else (self.options or [])
        labels = [self.label] if isinstance(self.label, str) else self.label
        return AnswerInput(selected_indexes=picked, labels=labels, custom=self.custom, changes=self.changes)
