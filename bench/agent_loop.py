"""Agent-loop overhead per LLM round trip: time spent in Clarion, not in the model.

Runs real turns (advisory lock, history + snapshot queries, tool execution, message rows,
channel-layer publishing to a listening tab) against the fake OpenAI-compatible server with
zero delay, through the real SDK. The time spent awaiting the model's stream is measured
separately and subtracted; what remains, divided by the turn's LLM calls, is the overhead.

The fake model runs in a process of its own (`loadkit.ModelProcess`), as a real model is remote:
in this process its HTTP threads would take the GIL from the turn and count as Clarion's time.
`--in-process-model` runs it in this process instead, as this bench did before.

    DATABASE_NAME=clarion_bench_loop .venv/bin/python bench/agent_loop.py [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("DATABASE_NAME", "clarion_bench_loop")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from channels.db import database_sync_to_async  # noqa: E402
from channels.layers import get_channel_layer  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from loadkit import ModelProcess  # noqa: E402
from query_tools import ensure_database  # noqa: E402

from chat import agent, services  # noqa: E402
from llm import client_from_settings  # noqa: E402
from tests.fake_openai import FakeOpenAI, Reply  # noqa: E402
from workspace.demo_content import seed_demo_workspace  # noqa: E402


class TimedClient:
    """Wraps the real client and adds up only the time spent waiting on the model."""

    def __init__(self, inner):
        self.inner, self.name, self.is_offline = inner, inner.name, inner.is_offline
        self.model_seconds = 0.0
        self.calls = 0

    async def structured(self, messages, **kwargs):
        started = time.perf_counter()
        try:
            return await self.inner.structured(messages, **kwargs)
        finally:
            self.model_seconds += time.perf_counter() - started

    async def stream(self, messages, **kwargs):
        self.calls += 1
        events = self.inner.stream(messages, **kwargs).__aiter__()
        while True:
            started = time.perf_counter()
            try:
                event = await anext(events)
            except StopAsyncIteration:
                self.model_seconds += time.perf_counter() - started
                return
            self.model_seconds += time.perf_counter() - started
            yield event


class Counts:
    """SQL statements and sync→thread hops, counted process-wide (deterministic, unlike time)."""

    queries = 0
    hops = 0

    @classmethod
    def install(cls) -> None:
        from asgiref.sync import SyncToAsync
        from django.db.backends.utils import CursorWrapper

        for name in ("execute", "executemany"):
            original = getattr(CursorWrapper, name)

            def counted(self, *args, _original=original, **kwargs):
                cls.queries += 1
                return _original(self, *args, **kwargs)

            setattr(CursorWrapper, name, counted)
        original_call = SyncToAsync.__call__

        async def hop(self, *args, **kwargs):
            cls.hops += 1
            return await original_call(self, *args, **kwargs)

        SyncToAsync.__call__ = hop


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


WORDS = " ".join(["word"] * 60)
TOOL_CALL = Reply.tool_call("query_tasks", {"status": "all", "limit": 100})


def scripted_reply(body: dict) -> Reply:
    """What the model answers, from the request alone (the model may be another process): a
    request starting "tool:" gets a query_tasks call first; everything else, the 60-word text."""
    request = next(m for m in body["messages"] if m["role"] == "user")["content"]
    if request.startswith("tool:") and body["messages"][-1]["role"] != "tool":
        return TOOL_CALL
    return Reply.text(WORDS)


async def run_scenario(name: str, request: str, llm_calls: int, *, turns: int, user) -> dict:
    layer = get_channel_layer()
    overheads, cpu, queries, hops = [], [], [], []
    for _ in range(turns):
        conversation = await database_sync_to_async(services.start_conversation)(user=user)
        tab = await layer.new_channel()  # one open tab listening, as in real use
        await layer.group_add(conversation.group_name, tab)
        await database_sync_to_async(services.post_user_message)(user=user, conversation_id=conversation.pk, content=request)
        client = TimedClient(client_from_settings())
        started, cpu_started = time.perf_counter(), time.process_time()
        queries_before, hops_before = Counts.queries, Counts.hops
        await agent.run_pending_turns(conversation.pk, client=client)
        total = time.perf_counter() - started
        cpu.append((time.process_time() - cpu_started) / max(1, client.calls) * 1000)
        queries.append(Counts.queries - queries_before)
        hops.append(Counts.hops - hops_before)
        if client.calls == 0:
            raise SystemExit(f"{name}: a turn made no model call (see the conversation's error message)")
        overheads.append((total - client.model_seconds) / client.calls)
        await layer.group_discard(conversation.group_name, tab)
    ms = [o * 1000 for o in overheads]
    return {
        "scenario": name,
        "turns": turns,
        "llm_calls": llm_calls,
        "p50": statistics.median(ms),
        "p99": percentile(ms, 0.99),
        "mean": statistics.fmean(ms),
        # All of this process's CPU per model call (with --in-process-model, the fake model's too).
        "cpu": statistics.median(cpu),
        "queries": statistics.median(queries),
        "hops": statistics.median(hops),
    }


async def main(turns: int, model: ModelProcess | None) -> None:
    user, created = await database_sync_to_async(get_user_model().objects.get_or_create)(username="bench-loop")
    if created:
        await database_sync_to_async(seed_demo_workspace)(user=user)
    Counts.install()
    with contextlib.ExitStack() as stack:
        served = model if model is not None else stack.enter_context(FakeOpenAI(default=scripted_reply))
        settings.LLM_BASE_URL = served.base_url
        settings.LLM_API_KEY, settings.LLM_MODEL, settings.LLM_MAX_RETRIES = "sk-bench", "fake", 0
        # The loop itself: clarification, the detector and the guesser each add a model call of
        # their own with a real model, and are measured by what they cost the model, not here.
        settings.CLARIFICATION_ENABLED = settings.QUESTION_DETECTOR_ENABLED = settings.QUESTION_GUESSER_ENABLED = False
        await run_scenario("warm-up", "what's in progress?", 1, turns=10, user=user)
        rows = [
            await run_scenario("text reply (60 words streamed)", "what's in progress?", 1, turns=turns, user=user),
            await run_scenario("query_tasks tool call, then text", "tool: what's in progress?", 2, turns=turns, user=user),
        ]
    where = "in this process" if model is None else "in a process of its own"
    print(f"\nAgent-loop overhead per LLM round trip ({turns} turns each, fake model at zero delay, {where})\n")
    print(f"1-minute load average: {os.getloadavg()[0]:.1f}")
    print(
        "| scenario | LLM calls/turn | p50 ms | p99 ms | mean ms | process CPU ms/call (p50) | SQL statements/turn | thread hops/turn | target p50 < 10 ms |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        verdict = "met" if r["p50"] < 10 else "MISSED"
        print(
            f"| {r['scenario']} | {r['llm_calls']} | {r['p50']:.2f} | {r['p99']:.2f} | {r['mean']:.2f} | {r['cpu']:.2f} | {r['queries']:.0f} | {r['hops']:.0f} | {verdict} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--in-process-model", action="store_true", help="serve the fake model from this process's threads")
    args = parser.parse_args()
    # Forked before any database connection, event loop or thread exists.
    model = None if args.in_process_model else ModelProcess(reply=scripted_reply)
    try:
        ensure_database()
        call_command("migrate", verbosity=0)
        asyncio.run(main(args.turns, model))
    finally:
        if model is not None:
            model.stop()
