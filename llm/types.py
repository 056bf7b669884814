"""Provider-neutral types at the LLM boundary. No Django, no SDK types leak past here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, AsyncIterator, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from llm.budget import CallBudget


class ToolCall(BaseModel):
    id: str
    name: str
    # Raw JSON text exactly as the model sent it: callers decide how to parse and
    # how to report a malformed argument object back to the model.
    arguments: str


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None  # for role="tool"
    name: str | None = None  # tool name for role="tool"


class ToolSpec(BaseModel):
    # Frozen: the client encodes a spec once and reuses that encoding for every request.
    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object


class Completion(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = []
    usage: Usage
    model: str
    finish_reason: str | None = None
    attempts: int = 1
    seconds: float = 0.0


class TextDelta(BaseModel):
    type: Literal["text"] = "text"
    text: str


class StreamRestart(BaseModel):
    """Discard the text streamed so far: retry number `attempt` is starting."""

    type: Literal["restart"] = "restart"
    attempt: int
    reason: str


class StreamDone(BaseModel):
    """Always the last event of a successful stream; carries the full answer."""

    type: Literal["done"] = "done"
    completion: Completion


StreamEvent = Annotated[TextDelta | StreamRestart | StreamDone, Field(discriminator="type")]

T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class LLMClient(Protocol):
    """`timeout` overrides the first-token (non-streamed: whole-answer) limit of the client's
    default budget; `budget` replaces that budget for one call (see llm.budget.CallBudget)."""

    name: str  # human label for the UI
    is_offline: bool

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSpec] | None = None,
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> Completion: ...

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSpec] | None = None,
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> AsyncIterator[TextDelta | StreamRestart | StreamDone]: ...

    async def structured(
        self,
        messages: list[ChatMessage],
        *,
        schema: type[T],
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> T: ...
