"""A scripted, OpenAI-compatible HTTP server for tests (stdlib only).

It is real HTTP on 127.0.0.1, so the real `openai` SDK, other threads and other
processes (e.g. a Daphne server under test) can all talk to it.

    with FakeOpenAI() as fake:
        fake.script(Reply.error(500, "boom"), Reply.text("hello there"))
        client = OpenAICompatibleClient(base_url=fake.base_url, api_key="k", model="m")

Replies are served FIFO, one per POST /v1/chat/completions. A script entry may be a
`Reply` or a callable `body -> Reply` (body is the parsed JSON request). When the
queue is empty the server answers with `fake.default` (Reply.text("ok") unless
configured; set it to None to answer 500 instead, which makes unscripted calls loud).

Calls that run side by side (clarification beside the chat call) arrive in no fixed order, so
`script_structured` queues replies for structured-output requests (`response_format` set:
clarification, question detection, option ranking) apart from the rest; while that queue is
empty, every request is served from the main one.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest


@dataclass(frozen=True)
class FakeToolCall:
    name: str
    arguments: str  # raw JSON text
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    kind: str  # "text" | "error" | "garbage"  (tool calls and json are text replies with extras)
    text: str = ""
    tool_calls: tuple[FakeToolCall, ...] = ()
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""  # raw body for error/garbage
    chunks: int | None = None  # streamed text deltas; None = one per word
    finish_reason: str | None = None  # None = "tool_calls" if tool_calls else "stop"
    # modifiers
    delay: float = 0.0  # seconds before the status line is sent
    chunk_delay: float = 0.0  # seconds between SSE events
    cut_after: int | None = None  # streaming: send n SSE events then drop the connection (no [DONE])
    stall_after: int | None = None  # streaming: send n SSE events (0 = headers only), then go silent ...
    stall_seconds: float = 0.0  # ... for this long (or until the server stops), then finish the stream

    # ---- builders

    @classmethod
    def text(cls, text: str, *, chunks: int | None = None, **mods: Any) -> Reply:
        return cls(kind="text", text=text, chunks=chunks, **mods)

    @classmethod
    def tool_call(cls, name: str, arguments: dict | str, *, id: str | None = None, text: str = "", **mods: Any) -> Reply:
        return cls(kind="text", text=text, **mods).and_tool_call(name, arguments, id=id)

    def and_tool_call(self, name: str, arguments: dict | str, *, id: str | None = None) -> Reply:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return dataclasses.replace(self, tool_calls=(*self.tool_calls, FakeToolCall(name, args, id)))

    @classmethod
    def json(cls, obj: Any, **mods: Any) -> Reply:
        return cls(kind="text", text=json.dumps(obj), chunks=1, **mods)

    @classmethod
    def error(cls, status: int, message: str, *, headers: dict[str, str] | None = None, type: str = "error", **mods: Any) -> Reply:
        body = json.dumps({"error": {"message": message, "type": type, "code": None}})
        return cls(kind="error", status=status, body=body, headers=headers or {}, **mods)

    @classmethod
    def hang(cls, seconds: float = 3600.0) -> Reply:
        """Accept the request and answer nothing (until `seconds` pass or the server stops)."""
        return cls(kind="text", text="too late", delay=seconds)

    @classmethod
    def garbage(cls, body: str = "<html><body>upstream hiccup {</body></html>", **mods: Any) -> Reply:
        return cls(kind="garbage", body=body, **mods)

    def with_(self, **mods: Any) -> Reply:
        """Copy with modifiers, e.g. Reply.text("hi").with_(cut_after=2)."""
        return dataclasses.replace(self, **mods)


@dataclass
class _State:
    default: Reply | None
    queue: collections.deque = field(default_factory=collections.deque)
    structured: collections.deque = field(default_factory=collections.deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    counter: int = 0


class FakeOpenAI:
    def __init__(self, *, default: Reply | None = Reply.text("ok")) -> None:  # noqa: B008  (a frozen Reply)
        self._state = _State(default=default)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    def start(self) -> FakeOpenAI:
        state = self._state
        state.stopping.clear()

        class Handler(_Handler):
            fake_state = state

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval keeps stop() (and so every fixture teardown) fast.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._state.stopping.set()  # wakes handlers sleeping on `delay`
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- scripting and inspection

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeOpenAI is not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def default(self) -> Reply | None:
        return self._state.default

    @default.setter
    def default(self, reply: Reply | None) -> None:
        self._state.default = reply

    def script(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        with self._state.lock:
            self._state.queue.extend(replies)

    def script_structured(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        """Replies for requests that ask for structured output, served before the main queue."""
        with self._state.lock:
            self._state.structured.extend(replies)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed JSON bodies of every chat-completions request, in arrival order."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        with self._state.lock:
            return list(self._state.headers)

    @property
    def pending(self) -> int:
        with self._state.lock:
            return len(self._state.queue) + len(self._state.structured)

    def reset(self) -> None:
        with self._state.lock:
            self._state.queue.clear()
            self._state.structured.clear()
            self._state.requests.clear()
            self._state.headers.clear()


class _Handler(BaseHTTPRequestHandler):
    fake_state: _State
    protocol_version = "HTTP/1.1"  # chunked SSE, so a cut stream is detectably incomplete

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        state = self.fake_state
        with state.lock:
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if "response_format" in body and state.structured:
                entry = state.structured.popleft()
            else:
                entry = state.queue.popleft() if state.queue else state.default
            state.counter += 1
            serial = state.counter
        if entry is None:
            self._send_json(500, {"error": {"message": "FakeOpenAI: script queue is empty", "type": "server_error"}})
            return
        reply = entry(body) if callable(entry) else entry
        if reply.delay and state.stopping.wait(reply.delay):
            return
        try:
            self._respond(reply, body, f"chatcmpl-fake{serial}")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered: expected in tests

    # ---- responses

    def _respond(self, reply: Reply, body: dict[str, Any], cid: str) -> None:
        if reply.kind == "error":
            self._send_raw(reply.status, reply.body.encode(), "application/json", reply.headers)
            return
        if reply.kind == "garbage":
            self._send_raw(200, reply.body.encode(), "text/html", reply.headers)
            return
        model = body.get("model", "fake-model")
        usage = _usage(body, reply)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        if body.get("stream"):
            self._stream(reply, body, cid, model, usage, finish)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": tc.id or f"call_{i}", "type": "function", "function": {"name": tc.name, "arguments": tc.arguments}}
                for i, tc in enumerate(reply.tool_calls)
            ]
        payload = {
            "id": cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }
        self._send_raw(200, json.dumps(payload).encode(), "application/json", reply.headers)

    def _stream(self, reply: Reply, body: dict[str, Any], cid: str, model: str, usage: dict, finish: str) -> None:
        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
            }

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in _split_text(reply.text, reply.chunks)]
        for i, tc in enumerate(reply.tool_calls):
            head = {"index": i, "id": tc.id or f"call_{i}", "type": "function", "function": {"name": tc.name, "arguments": ""}}
            events.append(chunk({"tool_calls": [head]}))
            for frag in _fragments(tc.arguments, 7):
                events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]}))
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(
                {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model, "choices": [], "usage": usage}
            )

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()  # headers now: a server that then stalls has still "answered"
        state = self.fake_state
        for n, event in enumerate(events):
            if reply.cut_after is not None and n >= reply.cut_after:
                # FIN without the terminating zero-length chunk: exactly what a dropped
                # proxy connection looks like to the client.
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if reply.stall_after is not None and n == reply.stall_after and state.stopping.wait(reply.stall_seconds):
                return
            if reply.chunk_delay and n and state.stopping.wait(reply.chunk_delay):
                return
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: Any) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", {})

    def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True


def _split_text(text: str, chunks: int | None) -> list[str]:
    if not text:
        return []
    if chunks is None:
        words = text.split(" ")
        return [w if i == 0 else " " + w for i, w in enumerate(words)]
    size = max(1, -(-len(text) // max(1, chunks)))
    return _fragments(text, size)


def _fragments(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    # Deterministic pseudo-token counts (words), enough to assert usage is plumbed through.
    prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    completion = len(reply.text.split()) + sum(len(tc.arguments) // 4 + 1 for tc in reply.tool_calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


__all__ = ["FakeOpenAI", "FakeToolCall", "Reply", "fake_openai"]
