"""Pydantic models at the edges of the knowledge pipeline: model decisions, the AIResult contract,
and the platform-neutral Conversation + RequestContext an adapter sends."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# ---------------------------------------------------------------------------- the result contract


class Citation(BaseModel):
    n: int = Field(description="The number used in the reply text, [n].")
    source_id: str
    title: str
    url: str = Field(description="The source's page in Clarion (/kb/sources/<pk>/) or its original URL.")


class ClosestPage(BaseModel):
    source_id: str
    title: str
    url: str = Field(description="The source's page in Clarion (/kb/sources/<pk>/) or its original URL.")


class AIResult(BaseModel):
    should_reply: bool
    reply_text: str | None = None
    citations: list[Citation] = []
    closest_pages: list[ClosestPage] = Field(
        default=[],
        description="When the sources were read and did not answer: the pages that came closest, best first "
        "(a chat can say where to look; nothing in them answers).",
    )
    debug: dict | None = Field(default=None, description="For logs and tests; never shown to users.")


# ---------------------------------------------------------------------------- model decisions
# Stable shapes: they are logged, asserted in tests, and sent to the model as JSON schemas.


class GateDecision(BaseModel):
    is_question: bool = Field(description="Does the latest message ask for information or help?")
    is_answerable: bool = Field(description="Is it inside the answer scope and not excluded by the refusal policy?")
    rewrite_query: str | None = Field(default=None, description="A short self-contained search query, when answerable.")
    reason: str = Field(default="", description="One sentence explaining the decision (logged only).")


class SourceSelection(BaseModel):
    selected_source_ids: list[str] = Field(description="Source ids copied exactly from the index, best first; empty if none helps.")


class DraftAnswer(BaseModel):
    answer: str = Field(description="The answer, citing sources inline as [n]; empty when the sources do not answer.")
    citations: list[int] = Field(default=[], description="Numbers of the sources cited in the answer.")
    answered_from_sources: bool = Field(default=True, description="False when the sources do not answer the question.")


class VerificationDecision(BaseModel):
    is_good_enough: bool = Field(description="True only if the draft is supported, on topic, clear and safe to post.")
    issues: list[str] = Field(default=[], description="Each problem found; empty when none.")
    suggested_fix: str | None = Field(default=None, description="One sentence, when a fix is possible.")


# ---------------------------------------------------------------------------- adapter input

MAX_MESSAGES = 100
MAX_MESSAGE_CHARS = 8000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class ConversationMessage(_Strict):
    role: Literal["user", "assistant"]
    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    timestamp: datetime | None = None
    author_id: str | None = Field(default=None, max_length=200)


class Conversation(_Strict):
    messages: list[ConversationMessage] = Field(min_length=1, max_length=MAX_MESSAGES)

    @field_validator("messages")
    @classmethod
    def _has_a_user_message(cls, messages: list[ConversationMessage]) -> list[ConversationMessage]:
        if not any(m.role == "user" for m in messages):
            raise ValueError("needs at least one message with role 'user'")
        return messages

    @property
    def latest_question(self) -> str:
        return next(m.text for m in reversed(self.messages) if m.role == "user")

    def history(self) -> list[dict]:
        """Messages before the latest user message, oldest first."""
        last_user = max(i for i, m in enumerate(self.messages) if m.role == "user")
        return [{"role": m.role, "content": m.text} for m in self.messages[:last_user]]


class RequestContext(_Strict):
    platform: str = Field(min_length=1, max_length=50)
    guild_id: str | None = Field(default=None, max_length=200)
    channel_id: str | None = Field(default=None, max_length=200)
    thread_id: str | None = Field(default=None, max_length=200)
    message_id: str | None = Field(default=None, max_length=200)


class ReplyRequest(_Strict):
    """The body of `POST /api/v1/reply`."""

    conversation: Conversation
    context: RequestContext
