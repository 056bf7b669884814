"""LLMClient for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp, ...).

The SDK's own retries are disabled: every call follows the boundary's one policy
(`llm.budget`), so each attempt has a hard wall-clock limit, streams can be restarted
visibly (StreamRestart), and the number of attempts is reported back to the caller.

A stream has three limits rather than one deadline: the first chunk must arrive within
`first_token_seconds`, no two chunks may be further apart than `idle_seconds`, and the whole
call (retries included) ends at `total_seconds`. A model that streams steadily for longer
than the first-token limit therefore finishes; one that stalls is restarted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import weakref
from typing import Any, AsyncIterator, Awaitable, Callable, NoReturn
from urllib.parse import urlsplit

import httpx2
import openai
import pydantic
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

from .budget import CallBudget, call_with_retries, first_token_timeout_error, idle_timeout_error, total_timeout_error
from .errors import LLMError, redact
from .types import (
    ChatMessage,
    Completion,
    StreamDone,
    StreamRestart,
    T,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)

log = logging.getLogger("clarion.llm")

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_UNREADABLE = "The model returned a response Clarion could not read."
# The response class of the SDK's own HTTP library: asked for as the result, the SDK hands the
# response back unread, for the stream to be read line by line.
_RAW_RESPONSE = httpx2.Response


class OpenAICompatibleClient:
    is_offline = False

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        budget: CallBudget | None = None,
        timeout_seconds: float | None = None,
        max_retries: int | None = None,
        idle_timeout_seconds: float | None = None,
        total_timeout_seconds: float | None = None,
        connect_timeout_seconds: float | None = None,
        backoff_base: float | None = None,
        backoff_max: float | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`budget` is the default for every call; the keyword shortcuts override its fields
        (timeout_seconds is the first-token / non-streamed limit)."""
        budget = budget or CallBudget()
        overrides = {
            "first_token_seconds": timeout_seconds,
            "max_retries": None if max_retries is None else max(0, max_retries),
            "idle_seconds": idle_timeout_seconds,
            "total_seconds": total_timeout_seconds,
            "connect_seconds": connect_timeout_seconds,
            "backoff_base": backoff_base,
            "backoff_max": backoff_max,
        }
        self.budget = CallBudget(**{**budget.__dict__, **{k: v for k, v in overrides.items() if v is not None}})
        self.model = model
        self._sleep = sleep
        self._api_key = api_key
        self._base_url = base_url
        # An AsyncOpenAI client's connection pool belongs to the event loop that opened it, and a
        # management command, a test and the server each run their own loop: one per loop.
        self._sdk_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = weakref.WeakKeyDictionary()
        # As the SDK resolves it, without building a client (its TLS setup costs ~0.1 s).
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.name = f"OpenAI-compatible · {model} @ {_host(self.base_url)}"

    # Kept for callers that read the defaults.
    @property
    def timeout_seconds(self) -> float:
        return self.budget.first_token_seconds

    @property
    def max_retries(self) -> int:
        return self.budget.max_retries

    # ------------------------------------------------------------------ public API

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSpec] | None = None,
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> Completion:
        request = self._request(messages, tools)
        budget = (budget or self.budget).with_first_token(timeout)
        started = time.monotonic()
        try:
            completion = await self._complete_with_retries(request, budget, started)
        except LLMError as err:
            self._log("complete", started, err.attempts, error=err)
            raise
        self._log("complete", started, completion.attempts, usage=completion.usage)
        return completion

    async def structured(
        self,
        messages: list[ChatMessage],
        *,
        schema: type[T],
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> T:
        request = self._request(messages, None)
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False},
        }
        budget = (budget or self.budget).with_first_token(timeout)
        started = time.monotonic()
        try:
            completion = await self._complete_with_retries(request, budget, started)
            result = _validate(schema, completion.content, completion.attempts)
        except LLMError as err:
            self._log("structured", started, err.attempts, error=err)
            raise
        self._log("structured", started, completion.attempts, usage=completion.usage)
        return result

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolSpec] | None = None,
        timeout: float | None = None,
        budget: CallBudget | None = None,
    ) -> AsyncIterator[TextDelta | StreamRestart | StreamDone]:
        request = self._request(messages, tools)
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
        budget = (budget or self.budget).with_first_token(timeout)
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget.total_seconds
        attempt = 0
        while True:
            attempt += 1
            acc = _StreamAccumulator()
            opened = False
            emitted_text = False
            try:
                first_token_at = min(loop.time() + budget.first_token_seconds, deadline)
                try:
                    async with asyncio.timeout_at(first_token_at):
                        response = await self._post(request, budget, stream=True)
                except TimeoutError:
                    raise self._timeout_error(budget, first_token_at, deadline, first=True) from None
                opened = True
                try:
                    reads = _sse_reads(response).__aiter__()
                    wait_until = first_token_at
                    while True:
                        # The deadline is only armed while *we* await the network. An
                        # asyncio.timeout spanning the yield below would fire inside the
                        # consumer's code instead (as a bare CancelledError).
                        try:
                            async with asyncio.timeout_at(wait_until):
                                chunks = await anext(reads)
                        except StopAsyncIteration:
                            break
                        except TimeoutError:
                            raise self._timeout_error(budget, wait_until, deadline, first=acc.chunks == 0) from None
                        text = "".join([acc.add(chunk) for chunk in chunks])
                        wait_until = min(loop.time() + budget.idle_seconds, deadline)
                        if text:
                            emitted_text = True
                            yield TextDelta(text=text)
                finally:
                    await response.aclose()
                completion = acc.finish(self.model, attempt, time.monotonic() - started)
            except Exception as exc:
                err = self._map_error(exc, budget.first_token_seconds, mid_stream=opened)
                err.attempts = attempt
                delay = budget.next_delay(attempt, err)
                if not budget.should_retry(err, failed_attempt=attempt, delay=delay, remaining=deadline - loop.time()):
                    self._log("stream", started, attempt, error=err)
                    _raise(err, exc)
                if emitted_text:
                    yield StreamRestart(attempt=attempt + 1, reason=err.user_message)
                await self._sleep(delay)
                continue
            self._log("stream", started, attempt, usage=completion.usage)
            yield StreamDone(completion=completion)
            return

    # ------------------------------------------------------------------ internals

    def _new_sdk_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self._base_url,
            # Local servers (Ollama, llama.cpp) ignore the key but the SDK insists on one.
            api_key=self._api_key or "not-needed",
            max_retries=0,
            timeout=self._http_timeout(self.budget),
        )

    def _sdk(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._sdk_clients.get(loop)
        if client is None:
            client = self._sdk_clients[loop] = self._new_sdk_client()
        return client

    async def _post(self, request: dict[str, Any], budget: CallBudget, *, stream: bool) -> Any:
        """POST /chat/completions through the SDK (auth, base URL, status errors), with the
        body encoded here (`_body`): it is plain JSON already, so the SDK's per-request
        conversion of typed parameters is skipped. Streamed: the open response, read by
        `_sse_reads`."""
        options: Any = {"timeout": self._http_timeout(budget)}
        body = _body(request)
        if stream:
            return await self._sdk().post("/chat/completions", cast_to=_RAW_RESPONSE, content=body, options=options, stream=True)
        return await self._sdk().post("/chat/completions", cast_to=ChatCompletion, content=body, options=options)

    @staticmethod
    def _http_timeout(budget: CallBudget) -> httpx2.Timeout:
        # Our own asyncio deadlines (first token, idle, total) decide; httpx only bounds the
        # TCP connect, and its read limit is kept out of their way.
        return httpx2.Timeout(budget.total_seconds + 5, connect=min(budget.connect_seconds, budget.first_token_seconds))

    @staticmethod
    def _timeout_error(budget: CallBudget, fired_at: float, deadline: float, *, first: bool) -> LLMError:
        if fired_at >= deadline and not (first and budget.total_seconds <= budget.first_token_seconds):
            return total_timeout_error(budget)
        return first_token_timeout_error(budget.first_token_seconds) if first else idle_timeout_error(budget.idle_seconds)

    async def _complete_with_retries(self, request: dict[str, Any], budget: CallBudget, started: float) -> Completion:
        async def attempt() -> Completion:
            return _to_completion(await self._post(request, budget, stream=False), 1, 0.0)

        attempts = 0

        def count(number: int, seconds: float, outcome: str) -> None:
            nonlocal attempts
            attempts = number

        completion = await call_with_retries(attempt, budget=budget, map_error=self._map_error, on_attempt=count, sleep=self._sleep)
        return completion.model_copy(update={"attempts": attempts, "seconds": round(time.monotonic() - started, 3)})

    def _request(self, messages: list[ChatMessage], tools: list[ToolSpec] | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": [_message_param(m) for m in messages]}
        if tools:
            request["tools"] = tools  # encoded by `_body`
        return request

    def _map_error(self, exc: BaseException, timeout: float, *, mid_stream: bool = False) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        # APITimeoutError subclasses APIConnectionError, so it must be checked first.
        if isinstance(exc, (TimeoutError, openai.APITimeoutError)):
            return first_token_timeout_error(timeout)
        if isinstance(exc, openai.APIConnectionError):
            if mid_stream:
                return LLMError("stream_interrupted", "The connection to the model dropped while it was answering.")
            return LLMError("connection", f"The model endpoint at {self.base_url} could not be reached.")
        if isinstance(exc, openai.APIResponseValidationError):
            return LLMError("invalid_response", _UNREADABLE, status=exc.status_code)
        if isinstance(exc, openai.APIStatusError):
            return self._map_status(exc)
        if isinstance(exc, openai.APIError):
            # An {"error": ...} object sent inside a 200 stream: the server gave up mid-answer.
            detail = redact(exc.message, self._api_key)[:200]
            return LLMError("server", f"The model endpoint reported an error: {detail}.")
        # Anything else (json.JSONDecodeError from a garbled SSE line, a chunk of the
        # wrong shape, ...) means the server sent something we cannot interpret.
        return LLMError("invalid_response", _UNREADABLE)

    def _map_status(self, exc: openai.APIStatusError) -> LLMError:
        status = exc.status_code
        detail = redact(_error_detail(exc), self._api_key)[:200]
        if status == 429:
            return LLMError(
                "rate_limited",
                "The model endpoint is rate limiting Clarion (429); try again shortly.",
                status=status,
                retry_after=_retry_after(exc.response.headers),
            )
        if status >= 500:
            return LLMError("server", f"The model endpoint failed ({status}).", status=status)
        if status in (401, 403):
            return LLMError("auth", f"The model endpoint refused Clarion's credentials ({status}): {detail}.", status=status)
        if status == 408:
            return LLMError("timeout", f"The model endpoint timed out ({status}).", status=status)
        return LLMError("bad_request", f"The model endpoint rejected the request ({status}): {detail}.", status=status)

    def _log(
        self,
        op: str,
        started: float,
        attempts: int,
        *,
        usage: Usage | None = None,
        error: LLMError | None = None,
    ) -> None:
        seconds = round(time.monotonic() - started, 3)
        fields = {
            "op": op,
            "model": self.model,
            "attempts": attempts,
            "seconds": seconds,
            "tokens": usage.total_tokens if usage else 0,
            "outcome": error.kind if error else "ok",
        }
        if error:
            log.warning(
                "llm %(op)s failed model=%(model)s outcome=%(outcome)s attempts=%(attempts)d seconds=%(seconds).2f",
                fields,
                extra=fields,
            )
        else:
            log.info(
                "llm %(op)s ok model=%(model)s attempts=%(attempts)d seconds=%(seconds).2f tokens=%(tokens)d",
                fields,
                extra=fields,
            )


class _StreamAccumulator:
    """Rebuilds the full answer (text, tool calls, usage) from streamed chunks."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.chunks = 0

    def add(self, chunk: object) -> str:
        """One chunk as the server sent it (parsed JSON); a chunk of the wrong shape is unreadable."""
        try:
            return self._add(chunk)  # type: ignore[arg-type]
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            raise LLMError("invalid_response", _UNREADABLE) from exc

    def _add(self, chunk: dict[str, Any]) -> str:
        if not isinstance(chunk, dict):
            raise TypeError("a chunk is a JSON object")
        self.chunks += 1
        self.model = chunk.get("model") or self.model
        if chunk.get("usage") is not None:
            self.usage = _usage(chunk["usage"])
        text = ""
        for choice in chunk.get("choices") or []:
            if choice.get("index") not in (0, None):
                continue
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            delta = choice.get("delta")
            if delta is None:
                continue
            if delta.get("content"):
                text += delta["content"]
            for tc in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(tc.get("index", 0), {"id": "", "name": "", "arguments": ""})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                function = tc.get("function")
                if function is not None:
                    # Names arrive whole in practice, but some servers repeat them per
                    # fragment; only arguments are concatenated.
                    if function.get("name"):
                        slot["name"] = slot["name"] or function["name"]
                    if function.get("arguments"):
                        slot["arguments"] += function["arguments"]
        if text:
            self.text.append(text)
        return text

    def finish(self, model: str, attempts: int, seconds: float) -> Completion:
        if self.chunks == 0:
            raise LLMError("invalid_response", _UNREADABLE)
        # The SDK swallows [DONE], so "the model finished" is judged by finish_reason,
        # or by the usage chunk, which include_usage servers send after it.
        if self.finish_reason is None and self.usage is None:
            raise LLMError("stream_interrupted", "The connection to the model dropped while it was answering.")
        calls = [ToolCall(id=c["id"] or f"call_{i}", name=c["name"], arguments=c["arguments"]) for i, c in sorted(self.calls.items())]
        if any(not c.name for c in calls):
            raise LLMError("invalid_response", _UNREADABLE)
        return Completion(
            content="".join(self.text),
            tool_calls=calls,
            usage=self.usage or Usage(),
            model=self.model or model,
            finish_reason=self.finish_reason,
            attempts=attempts,
            seconds=round(seconds, 3),
        )


async def _sse_reads(response: Any) -> AsyncIterator[list[object]]:
    """The JSON chunks of a server-sent-events body, a list per read from the network.

    Parsed with `json` alone, from bytes: the SDK would build a typed model object per chunk, and
    reading by lines would take every chunk through several layers of async iterators. A model
    that sends faster than the reader reads arrives as several chunks in one read; they are
    handled together (one deadline, one update of the screen), and nothing waits for a read to
    fill. As the SDK does, `[DONE]` ends the stream and an `{"error": …}` chunk raises
    `openai.APIError`. Lines end in LF, CRLF or CR; an event ends at an empty line or at the end
    of the body."""
    reads = response.aiter_bytes()
    pending = b""  # an unfinished line, carried into the next read
    data: list[bytes] = []  # the data lines of the event being read
    while True:
        try:
            received = await anext(reads, None)
        except Exception as exc:  # the body could not be read to its end: the connection dropped
            raise openai.APIConnectionError(message="The stream was cut off.", request=response.request) from exc
        text = pending + (received or b"")
        # A CR at the end may be the first half of a CRLF: it waits for the next read.
        held = b"\r" if received is not None and text.endswith(b"\r") else b""
        lines = text[: len(text) - len(held)].replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        if received is None:  # the end of the body ends its last line and its last event
            lines.append(b"")
            pending = b""
        else:
            pending = lines.pop() + held
        chunks: list[object] = []
        for line in lines:
            if line:
                field, _, value = line.partition(b":")
                if field == b"data":
                    data.append(value[1:] if value.startswith(b" ") else value)
                continue  # comments (":…"), event names and ids carry nothing a chunk needs
            if not data:
                continue
            payload, data = b"\n".join(data), []
            if payload.startswith(b"[DONE]"):
                if chunks:
                    yield chunks
                return
            chunks.append(_sse_chunk(payload, response))
        if chunks:
            yield chunks
        if received is None:
            return


def _sse_chunk(payload: bytes, response: Any) -> object:
    chunk = json.loads(payload)
    if isinstance(chunk, dict) and chunk.get("error"):
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else None
        raise openai.APIError(
            message if isinstance(message, str) and message else "An error occurred during streaming",
            response.request,
            body=error,
        )
    return chunk


def _body(request: dict[str, Any]) -> bytes:
    """The request as its JSON body (as the SDK would encode it), with the tools' encodings reused."""
    tools: list[ToolSpec] = request.get("tools") or []
    rest = {key: value for key, value in request.items() if key != "tools"}
    body = json.dumps(rest, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    if not tools:
        return body
    return body[:-1] + b',"tools":[' + b",".join(_tool_json(t) for t in tools) + b"]}"


# id(spec) → (spec, its encoding). The entry holds the spec, so its id is not reused while cached.
_TOOL_JSON: dict[int, tuple[ToolSpec, bytes]] = {}
_TOOL_JSON_MAX = 256


def _tool_json(tool: ToolSpec) -> bytes:
    """A tool as the request lists it, encoded once per spec: the tools' schemas are most of every
    request's body, and the same few specs go out with every model call."""
    cached = _TOOL_JSON.get(id(tool))
    if cached is not None:
        return cached[1]
    entry = {"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}
    encoded = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    if len(_TOOL_JSON) >= _TOOL_JSON_MAX:
        _TOOL_JSON.clear()
    _TOOL_JSON[id(tool)] = (tool, encoded)
    return encoded


def _raise(err: LLMError, cause: BaseException) -> NoReturn:
    if err is cause:
        raise err
    raise err from cause


def _to_completion(response: object, attempts: int, seconds: float) -> Completion:
    # A non-JSON 200 body comes back from the SDK as a plain str, and a JSON body of
    # the wrong shape as a half-empty model: both are "unreadable", not crashes.
    if not isinstance(response, ChatCompletion) or not response.choices:
        raise LLMError("invalid_response", _UNREADABLE)
    try:
        choice = response.choices[0]
        message = choice.message
        calls = [
            ToolCall(id=tc.id, name=tc.function.name, arguments=tc.function.arguments or "")
            for tc in (message.tool_calls or [])
            if isinstance(tc, ChatCompletionMessageFunctionToolCall)
        ]
        return Completion(
            content=message.content or "",
            tool_calls=calls,
            usage=_usage(response.usage) if response.usage is not None else Usage(),
            model=response.model or "",
            finish_reason=choice.finish_reason,
            attempts=attempts,
            seconds=round(seconds, 3),
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise LLMError("invalid_response", _UNREADABLE) from exc


def _usage(usage: Any) -> Usage:
    """From the SDK's usage object or a streamed chunk's plain `usage` dict."""
    read = usage.get if isinstance(usage, dict) else lambda name: getattr(usage, name, None)
    prompt = read("prompt_tokens") or 0
    completion = read("completion_tokens") or 0
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=read("total_tokens") or prompt + completion)


def _validate(schema: type[T], content: str, attempts: int) -> T:
    match = _FENCE.match(content)
    text = match.group(1) if match else content
    try:
        return schema.model_validate_json(text)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            problem = "its answer was not valid JSON"
        else:
            field = ".".join(str(p) for p in first["loc"]) or "(root)"
            problem = f"field '{field}': {first['msg']}"
        raise LLMError(
            "invalid_response",
            f"The model's answer did not match the expected format ({problem}).",
            retryable=False,
            attempts=attempts,
        ) from exc


def _message_param(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        # `name` is deliberately not sent: the OpenAI schema has no such field on
        # tool messages and strict servers reject unknown keys.
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content or ""}
    param: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        param["tool_calls"] = [
            {"id": tc.id, "type": "function", "function": {"name": tc.name, "arguments": tc.arguments}} for tc in message.tool_calls
        ]
    elif param["content"] is None:
        param["content"] = ""
    return param


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body:
        return body
    try:
        text = exc.response.text
    except Exception:  # the body of a streamed error response may be unread
        text = ""
    return text.strip() or exc.message


def _retry_after(headers: Any) -> float | None:
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue  # HTTP-date form: rare for LLM endpoints, fall back to jitter
    return None


def _host(base_url: str) -> str:
    parts = urlsplit(base_url)
    # hostname/port rather than netloc so user:password@ never reaches the UI.
    host = parts.hostname or base_url
    return f"{host}:{parts.port}" if parts.port else host


__all__ = ["OpenAICompatibleClient"]
