"""The durable anchor for `bench/answer_path.py`: LangGraph asks with `interrupt()`, the answer
resumes the run with `Command(resume=...)` through `AsyncPostgresSaver`, and the model's reply
streams back over a websocket. Bench-only: it needs the bench lock (langgraph-checkpoint-postgres).

    ANCHOR_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/clarion_bench_anchor \\
    ANCHOR_MODEL_URL=http://127.0.0.1:PORT/v1 \\
        python bench/anchors/langgraph_server.py --port 8001

Built the way LangGraph's human-in-the-loop documentation shows it, served the plain way: a
`websockets` server (no ASGI server in front), one compiled graph per process whose checkpointer
takes its connections from a psycopg-pool pool (`ANCHOR_POOL_SIZE`). The graph: `agent` calls the
model (the same zero-delay fake OpenAI-compatible server as Clarion's, through the same `openai`
SDK, streamed); a tool call routes to `ask`, whose `interrupt()` ends the run with the question
stored in the checkpoint; an answer resumes the thread with `Command(resume=<option index>)` — no
state is read before it — and `ask` validates the index itself (an invalid one asks again, as the
documentation's validation loop does), appends the tool result, and `agent` streams the reply.

Protocol, JSON text frames on ws://HOST:PORT/ws/<thread id>/:
  client → {"action": "send_message", "message": "..."}          starts a run
  server → {"type": "question", "id": "<interrupt id>", "question": ..., "options": [...]}
  client → {"action": "answer", "question_id": "<interrupt id>", "option": <index>}
  server → {"type": "receipt", "answer": "<label>"}               the resume was taken (durably)
  server → {"type": "stream_started"} as a model call starts, {"type": "delta", "text": ...} per chunk
  server → {"type": "saved", "text": "<whole reply>"}             run finished, checkpoint written
  server → {"type": "error", "message": ...}                      bad frame; socket stays up
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import os
import signal
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from openai import AsyncOpenAI
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

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


model = AsyncOpenAI(base_url=os.environ["ANCHOR_MODEL_URL"], api_key="sk-bench", max_retries=0, timeout=60)


async def agent(state: State) -> dict:
    """One model call, streamed: text deltas go to the client as they arrive."""
    write = get_stream_writer()
    write({"type": "stream_started"})
    stream = await model.chat.completions.create(model="fake-model", messages=state["messages"], tools=[ASK_USER_TOOL], stream=True)
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


def ask(state: State) -> dict:
    call = state["messages"][-1]["tool_calls"][0]
    questions = json.loads(call["function"]["arguments"])["questions"]
    options = [o["label"] for o in questions[0]["options"]]
    prompt: dict[str, Any] = {"tool_call_id": call["id"], "questions": questions}
    while True:  # the documentation's validation loop: an invalid answer asks again
        choice = interrupt(prompt)
        if isinstance(choice, int) and 0 <= choice < len(options):
            break
        prompt = {**prompt, "error": f"Pick an option from 0 to {len(options) - 1}."}
    get_stream_writer()({"type": "receipt", "answer": options[choice]})
    result = {"answers": [{"question": questions[0]["question"], "answers": [options[choice]]}]}
    return {"messages": [{"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}]}


def build_graph() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("ask", ask)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", after_agent, ["ask", END])
    builder.add_edge("ask", "agent")
    return builder


async def run(graph, thread_id: str, run_input, send) -> None:
    """One run of the thread, its frames sent as they come; the question (or the whole reply) is
    sent once the run ended, i.e. once its checkpoint is written."""
    config = {"configurable": {"thread_id": thread_id}}
    text: list[str] = []
    pending = None
    async for mode, chunk in graph.astream(run_input, config, stream_mode=["custom", "updates"]):
        if mode == "custom":
            if chunk["type"] == "delta":
                text.append(chunk["text"])
            await send(chunk)
        elif "__interrupt__" in chunk:
            pending = chunk["__interrupt__"][0]
    if pending is not None:
        question = pending.value["questions"][0]
        await send({"type": "question", "id": pending.id, "question": question["question"],
                    "options": [o["label"] for o in question["options"]]})  # fmt: skip
    else:
        await send({"type": "saved", "text": "".join(text)})


def handler(graph):
    async def serve_thread(ws: ServerConnection) -> None:
        parts = [p for p in (ws.request.path if ws.request else "").split("/") if p]
        if len(parts) != 2 or parts[0] != "ws":
            await ws.close(4404)
            return
        thread_id = parts[1]
        busy = asyncio.Lock()  # one run at a time per thread
        tasks: set[asyncio.Task] = set()

        async def send(frame: dict) -> None:
            try:
                await ws.send(json.dumps(frame))
            except ConnectionClosed:
                pass  # the client went away; the run itself still completes

        async def guarded(run_input) -> None:
            try:
                async with busy:
                    await run(graph, thread_id, run_input, send)
            except Exception as exc:  # visible to the client, never a silent hang
                await send({"type": "error", "message": f"{type(exc).__name__}: {exc}"})

        async for raw in ws:
            try:
                frame = json.loads(raw)
                if frame["action"] == "send_message":
                    run_input: Any = {
                        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": str(frame["message"])}]
                    }
                elif frame["action"] == "answer":
                    run_input = Command(resume=frame["option"])
                else:
                    raise ValueError(f"unknown action {frame['action']!r}")
            except (ValueError, KeyError, TypeError) as exc:
                await send({"type": "error", "message": f"malformed frame: {exc}"})
                continue
            task = asyncio.create_task(guarded(run_input))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:  # let running turns finish (they are durable either way)
            await asyncio.wait(tasks, timeout=60)

    return serve_thread


async def main(port: int) -> None:
    async with AsyncConnectionPool(
        os.environ["ANCHOR_DATABASE_URL"],
        min_size=2,
        max_size=int(os.environ.get("ANCHOR_POOL_SIZE", "10")),
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
    ) as pool:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        graph = build_graph().compile(checkpointer=saver)
        stop = asyncio.get_running_loop().create_future()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
        async with serve(handler(graph), "127.0.0.1", port, compression=None, ping_interval=None, max_queue=None):
            await stop


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="LangGraph + AsyncPostgresSaver behind a plain websockets server")
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(main(parser.parse_args().port))
