"""The durable anchor for `bench/answer_path.py`: LangGraph asks with `interrupt()`, the answer
resumes the run with `Command(resume=...)` through `AsyncPostgresSaver`, and the model's reply
streams back over a websocket. Bench-only: it needs the `bench` extra (langgraph-checkpoint-postgres).

    ANCHOR_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/clarion_bench_anchor \\
    ANCHOR_MODEL_URL=http://127.0.0.1:PORT/v1 \\
        python -m daphne -b 127.0.0.1 -p 8001 bench.anchors.langgraph_server:application

It is served by Daphne, as Clarion is, and the model is the same zero-delay fake
OpenAI-compatible server reached through the same `openai` SDK, streamed. The graph is the
canonical human-in-the-loop shape: `agent` calls the model; a tool call routes to `ask`, whose
`interrupt()` ends the run with the question stored in the checkpoint; the answer is checked
against the stored interrupt (read back from Postgres, so any process could take it), then
`Command(resume=label)` re-enters `ask`, which appends the tool result, and `agent` streams the
reply. The checkpointer's connections come from a psycopg-pool pool (`ANCHOR_POOL_SIZE`).

Protocol, JSON text frames on ws://HOST/ws/<thread id>/:
  client → {"action": "send_message", "message": "..."}          starts a run
  server → {"type": "question", "id": "<interrupt id>", "question": ..., "options": [...]}
  client → {"action": "answer", "question_id": "<interrupt id>", "option": <index>}
  server → {"type": "receipt", "question_id": ..., "answer": "<label>"}  resume accepted (durably)
  server → {"type": "stream_started"} as a model call starts, {"type": "delta", "text": ...} per chunk
  server → {"type": "saved", "text": "<whole reply>"}             run finished, checkpoint written
  server → {"type": "error", "message": ...}                      bad frame / stale answer; socket stays up
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from openai import AsyncOpenAI
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

ASK_USER_TOOL = {
    "type": "function",
    "function": {
        "name": "ask_user",
        "description": "Ask the user one or more multiple-choice questions and wait for the answers.",
        "parameters": {
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string"},
                            "header": {"type": "string"},
                            "options": {"type": "array", "items": {"type": "object", "properties": {"label": {"type": "string"}}}},
                        },
                        "required": ["question", "options"],
                    },
                }
            },
            "required": ["questions"],
        },
    },
}
SYSTEM_PROMPT = "You are a workspace assistant. When the request is ambiguous, ask with ask_user."


class State(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


_model: AsyncOpenAI | None = None


def model() -> AsyncOpenAI:
    global _model
    if _model is None:
        _model = AsyncOpenAI(base_url=os.environ["ANCHOR_MODEL_URL"], api_key="sk-bench", max_retries=0, timeout=60)
    return _model


async def agent(state: State) -> dict:
    """One model call, streamed: the reply bubble opens before the call (as Clarion's does), then
    text deltas go to the client as they arrive."""
    write = get_stream_writer()
    write({"type": "stream_started"})
    stream = await model().chat.completions.create(model="fake-model", messages=state["messages"], tools=[ASK_USER_TOOL], stream=True)
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    async for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            text.append(delta.content)
            write({"type": "delta", "text": delta.content})
        for call in delta.tool_calls or ():
            slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] = call.id or slot["id"]
            if call.function is not None:
                slot["name"] += call.function.name or ""
                slot["arguments"] += call.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(calls.items())
        ]
    return {"messages": [message]}


def after_agent(state: State) -> str:
    return "ask" if state["messages"][-1].get("tool_calls") else END


async def ask(state: State) -> dict:
    call = state["messages"][-1]["tool_calls"][0]
    questions = json.loads(call["function"]["arguments"])["questions"]
    label = interrupt({"tool_call_id": call["id"], "questions": questions})
    # Reached only on resume, after the resume value was written through the checkpointer.
    get_stream_writer()({"type": "receipt", "answer": label})
    result = {"answers": [{"question": questions[0]["question"], "answers": [label]}]}
    return {"messages": [{"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}]}


def build_graph():
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("ask", ask)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", after_agent, ["ask", END])
    builder.add_edge("ask", "agent")
    return builder


_graph = None
_graph_lock = asyncio.Lock()


async def graph():
    """Compiled once per process, on first use (Daphne has no lifespan events)."""
    global _graph
    if _graph is None:
        async with _graph_lock:
            if _graph is None:
                pool = AsyncConnectionPool(
                    os.environ["ANCHOR_DATABASE_URL"],
                    min_size=2,
                    max_size=int(os.environ.get("ANCHOR_POOL_SIZE", "10")),
                    kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                    open=False,
                )
                await pool.open(wait=True, timeout=30)
                saver = AsyncPostgresSaver(pool)
                await saver.setup()
                _graph = build_graph().compile(checkpointer=saver)
    return _graph


# --- the websocket endpoint ---------------------------------------------------------------------


class Session:
    def __init__(self, thread_id: str, send) -> None:
        self.thread_id = thread_id
        self._send = send
        self.config = {"configurable": {"thread_id": thread_id}}
        self.busy = asyncio.Lock()  # one run at a time per thread in this process
        self.open = True
        self._answered = ""

    async def send(self, frame: dict) -> None:
        if self.open:
            try:
                await self._send({"type": "websocket.send", "text": json.dumps(frame)})
            except Exception:  # the client went away; the run itself still completes
                self.open = False

    async def run(self, run_input) -> None:
        compiled = await graph()
        text: list[str] = []
        pending = None
        async for mode, chunk in compiled.astream(run_input, self.config, stream_mode=["custom", "updates"]):
            if mode == "custom":
                if chunk["type"] == "delta":
                    text.append(chunk["text"])
                elif chunk["type"] == "receipt":
                    chunk = {**chunk, "question_id": self._answered}
                await self.send(chunk)
            elif "__interrupt__" in chunk:
                pending = chunk["__interrupt__"][0]
        # The run has ended, so its last checkpoint is written: the question (or the reply) is
        # durable before the client sees it, and an answer can be checked against it.
        if pending is not None:
            question = pending.value["questions"][0]
            await self.send({"type": "question", "id": pending.id, "question": question["question"],
                             "options": [o["label"] for o in question["options"]]})  # fmt: skip
        else:
            await self.send({"type": "saved", "text": "".join(text)})

    async def send_message(self, message: str) -> None:
        async with self.busy:
            await self.run({"messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": message}]})

    async def answer(self, question_id: str, option: int) -> None:
        async with self.busy:
            compiled = await graph()
            snapshot = await compiled.aget_state(self.config)
            pending = next((i for i in snapshot.interrupts if i.id == question_id), None)
            if pending is None:
                await self.send({"type": "error", "message": "This question was already answered."})
                return
            options = pending.value["questions"][0]["options"]
            if not 0 <= option < len(options):
                await self.send({"type": "error", "message": f"Option {option} is out of range."})
                return
            self._answered = question_id
            await self.run(Command(resume=options[option]["label"]))


async def websocket(scope, receive, send) -> None:
    parts = [p for p in scope["path"].split("/") if p]
    if len(parts) != 2 or parts[0] != "ws":
        await send({"type": "websocket.close", "code": 4404})
        return
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    session = Session(parts[1], send)
    tasks: set[asyncio.Task] = set()

    async def guarded(coro) -> None:
        try:
            await coro
        except Exception as exc:  # visible to the client, never a silent hang
            await session.send({"type": "error", "message": f"{type(exc).__name__}: {exc}"})

    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            session.open = False
            break
        try:
            frame = json.loads(message.get("text") or "")
            action = frame["action"]
            if action == "send_message":
                coro = session.send_message(str(frame["message"]))
            elif action == "answer":
                coro = session.answer(str(frame["question_id"]), int(frame["option"]))
            else:
                raise ValueError(f"unknown action {action!r}")
        except (ValueError, KeyError, TypeError) as exc:
            await session.send({"type": "error", "message": f"malformed frame: {exc}"})
            continue
        task = asyncio.ensure_future(guarded(coro))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:  # let running turns finish (they are durable either way)
        await asyncio.wait(tasks, timeout=60)


async def application(scope, receive, send) -> None:
    if scope["type"] == "websocket":
        await websocket(scope, receive, send)
    elif scope["type"] == "http":
        body = b"langgraph anchor: websocket at /ws/<thread id>/\n"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})
