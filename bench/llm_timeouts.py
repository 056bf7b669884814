"""Model-call limits against the fake OpenAI-compatible server, through the real SDK: how long a
caller waits, how many requests it makes, and how it ends, for the shapes of slowness real
servers show (a long steady stream, a hang, a stall mid-stream, a hung model behind an auxiliary
call). No database; the figures are wall-clock seconds on this machine.

    .venv/bin/python bench/llm_timeouts.py
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llm.budget import CallBudget  # noqa: E402
from llm.errors import LLMError  # noqa: E402
from llm.openai_compatible import OpenAICompatibleClient  # noqa: E402
from llm.types import ChatMessage, StreamDone, StreamRestart  # noqa: E402
from tests.fake_openai import FakeOpenAI, Reply  # noqa: E402

MESSAGES = [ChatMessage(role="user", content="hello")]
# The reproduction: a 3 s per-call timeout and a 4.5 s steady answer.
MAIN = CallBudget(first_token_seconds=3, idle_seconds=3, total_seconds=60, max_retries=2, backoff_base=0.2, backoff_max=1)
AUX = CallBudget(first_token_seconds=3, idle_seconds=3, total_seconds=3, max_retries=1, backoff_base=0.2, backoff_max=1)
STEADY = Reply.text(" ".join(f"w{i}" for i in range(30)), chunk_delay=0.15)  # ~4.5 s of streaming


async def stream(client: OpenAICompatibleClient, budget: CallBudget) -> str:
    restarts = 0
    try:
        async for event in client.stream(MESSAGES, budget=budget):
            restarts += isinstance(event, StreamRestart)
            if isinstance(event, StreamDone):
                return f"finished, {restarts} restart(s)"
    except LLMError as err:
        return f"error: {err.user_message}"
    return "no end"


async def structured_call(client: OpenAICompatibleClient, budget: CallBudget) -> str:
    try:
        await client.complete(MESSAGES, budget=budget)
    except LLMError as err:
        return f"gave up: {err.user_message}"
    return "answered"


async def main() -> None:
    logging.getLogger("clarion.llm").setLevel(logging.ERROR)  # the table says it all
    scenarios = [
        ("steady 4.5 s stream, 3 s first-token limit", [STEADY], stream, MAIN),
        ("hung model, streamed main call", [Reply.hang()] * 3, stream, MAIN),
        ("stall 20 s after 5 chunks, then a good answer", [STEADY.with_(stall_after=5, stall_seconds=20), Reply.text("ok")], stream, MAIN),
        ("hung model, auxiliary call (3 s budget)", [Reply.hang()] * 2, structured_call, AUX),
    ]
    rows = []
    for name, replies, run, budget in scenarios:
        with FakeOpenAI(default=Reply.hang()) as fake:
            fake.script(*replies)
            client = OpenAICompatibleClient(base_url=fake.base_url, api_key="bench", model="m", budget=budget)
            started = time.monotonic()
            outcome = await run(client, budget)
            rows.append((name, time.monotonic() - started, len(fake.requests), outcome))
    print(f"{'scenario':48} {'seconds':>8} {'requests':>9}  outcome")
    for name, seconds, requests, outcome in rows:
        print(f"{name:48} {seconds:8.2f} {requests:9d}  {outcome}")


if __name__ == "__main__":
    asyncio.run(main())
