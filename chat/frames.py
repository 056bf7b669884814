"""The websocket protocol's client side, validated at the edge.

htmx's ws extension sends a form as JSON: its fields plus a HEADERS object. Each form carries an
`action` field naming what it asks for. Frames are parsed by pydantic in strict mode straight from
the JSON text: `true` is not an index and `"1"` is not a number, and a frame nested deeper than
the parser's limit is refused with a message rather than exhausting the stack.
"""

from __future__ import annotations

import uuid
import zoneinfo
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic_core import ErrorDetails

from project.errors import Rejected
from questions.schemas import AnswerFields


class FrameError(Rejected):
    """A frame Clarion will not act on; the text is shown to the user."""


class _Frame(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # HEADERS and any future htmx fields


class SendMessage(_Frame):
    action: Literal["send_message"]
    message: str = Field(max_length=200_000)
    # The browser's IANA time zone (static/js/clarion.js adds it): what "due today" means to the person.
    time_zone: str | None = Field(None, max_length=64)

    @field_validator("time_zone")
    @classmethod
    def _known_time_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                zoneinfo.ZoneInfo(value)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"“{value}” is not a time zone this server knows") from None
        return value


class Retry(_Frame):
    action: Literal["retry"]


class Stop(_Frame):
    action: Literal["stop"]


class Regenerate(_Frame):
    action: Literal["regenerate"]


class EditMessage(_Frame):
    action: Literal["edit_message"]
    # A form field, so the id comes as text: digits only (strict mode takes no "1" for a number).
    message_id: str = Field(pattern=r"^[0-9]{1,18}$")
    message: str = Field(max_length=200_000)


class AnswerQuestion(AnswerFields):
    """The answer's fields are the HTTP form's (one model, one set of rules); see AnswerFields."""

    action: Literal["answer"]
    question_id: uuid.UUID


class SkipQuestions(_Frame):
    action: Literal["skip"]
    group_id: uuid.UUID


class QuestionClock(_Frame):
    action: Literal["pause", "resume", "expire"]
    question_id: uuid.UUID


ClientFrame = Annotated[
    Union[SendMessage, Retry, Stop, Regenerate, EditMessage, AnswerQuestion, SkipQuestions, QuestionClock], Field(discriminator="action")
]
_client_frame = TypeAdapter(ClientFrame)


def parse_frame(text_data: str | None, bytes_data: bytes | None, *, max_bytes: int) -> ClientFrame:
    if text_data is None:
        raise FrameError("Binary frames are not supported.")
    if len(text_data.encode("utf-8", errors="replace")) > max_bytes:
        raise FrameError(f"That frame is larger than {max_bytes // 1024} KiB and was not processed.")
    try:
        return _client_frame.validate_json(text_data, strict=True)
    except ValidationError as exc:
        raise FrameError(_problem(exc.errors(include_url=False, include_input=False)[0])) from None


def _problem(error: ErrorDetails) -> str:
    """The first thing wrong with a frame, for the person."""
    if error["type"] == "json_invalid":
        # The JSON parser stops at a fixed depth (far deeper than any frame) instead of recursing on.
        if "recursion limit" in str((error.get("ctx") or {}).get("error", "")):
            return "That frame is nested too deeply and was not processed."
        return "That frame is not valid JSON and was not processed."
    if error["type"] == "dict_type" and not error["loc"]:
        return "A frame must be a JSON object."
    # The first location element is the discriminator's value; the field name is what helps.
    loc = error["loc"][1:] if len(error["loc"]) > 1 else error["loc"]
    where = ".".join(str(p) for p in loc) or "frame"
    return f"Frame field '{where}': {error['msg']}."
