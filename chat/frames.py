"""The websocket protocol's client side, validated at the edge.

htmx's ws extension sends a form as JSON: its fields plus a HEADERS object. Each form carries an
`action` field naming what it asks for.
"""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from project.errors import Rejected


class FrameError(Rejected):
    """A frame Clarion will not act on; the text is shown to the user."""


class _Frame(BaseModel):
    model_config = ConfigDict(extra="ignore")  # HEADERS and any future htmx fields


class SendMessage(_Frame):
    action: Literal["send_message"]
    message: str = Field(max_length=200_000)


class Retry(_Frame):
    action: Literal["retry"]


class Stop(_Frame):
    action: Literal["stop"]


class Regenerate(_Frame):
    action: Literal["regenerate"]


class AnswerQuestion(_Frame):
    action: Literal["answer"]
    question_id: uuid.UUID
    option: int | None = None
    options: list[int] | None = None
    label: str | None = None
    custom: str | None = Field(None, max_length=5000)


class SkipQuestions(_Frame):
    action: Literal["skip"]
    group_id: uuid.UUID


class QuestionClock(_Frame):
    action: Literal["pause", "resume"]
    question_id: uuid.UUID


ClientFrame = Annotated[
    Union[SendMessage, Retry, Stop, Regenerate, AnswerQuestion, SkipQuestions, QuestionClock], Field(discriminator="action")
]
_client_frame = TypeAdapter(ClientFrame)


def parse_frame(text_data: str | None, bytes_data: bytes | None, *, max_bytes: int):
    if text_data is None:
        raise FrameError("Binary frames are not supported.")
    if len(text_data.encode("utf-8", errors="replace")) > max_bytes:
        raise FrameError(f"That frame is larger than {max_bytes // 1024} KiB and was not processed.")
    try:
        payload = json.loads(text_data)
    except json.JSONDecodeError:
        raise FrameError("That frame is not valid JSON and was not processed.") from None
    if not isinstance(payload, dict):
        raise FrameError("A frame must be a JSON object.")
    try:
        return _client_frame.validate_python(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        # The first location element is the discriminator's value; the field name is what helps.
        loc = first["loc"][1:] if len(first["loc"]) > 1 else first["loc"]
        where = ".".join(str(p) for p in loc) or "frame"
        raise FrameError(f"Frame field '{where}': {first['msg']}.") from None
