"""Questions under load: 500 websocket clients each get a question and answer it.

A real Daphne server (a subprocess, as `manage.py up` runs it: `--verbosity 0`, in-memory channel
layer) on its own database, wired to a fake OpenAI-compatible model at zero delay that asks with
`ask_user` first and answers with text once it sees the tool result. Clients (asyncio +
`websockets`, loopback only) connect with their user's session cookie, send a message, wait for
the card, answer it with a websocket frame and time answer → continuation.

    DATABASE_NAME=clarion_bench_questions .venv/bin/python bench/questions_ws.py \\
        [--clients 500] [--users 50] [--rounds burst,50,20,10] [--ask-concurrency 25] \\
        [--profile FILE] [--app module:application]

Users: 50 users × 10 conversations, which keeps the default QUESTIONS_MAX_PENDING_PER_USER (10).
All clients stay connected for the whole round; the messages go out at most --ask-concurrency at a
time, then the memory is read with every question pending. Rounds: `burst` sends every answer at
once; a number N paces them at N per second (open loop: client i answers at i/N s). Each round
uses fresh conversations (a new card each). Bounded: every wait has a timeout (--wait) and the
whole run is capped by --timeout. Exit status 1 when anything was lost or doubled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from loadkit import ModelProcess, ServerProcess, clarion_env, cpu_seconds, free_port, percentile, rss_kib, thread_cpu

ROOT = Path(__file__).resolve().parent.parent
QUESTION_ID = re.compile(r'class="question-pending" id="question-([0-9a-f-]{36})"')
COMPOSER_ERROR = re.compile(r'<div id="composer-error"[^>]*>([^<]*)</div>')
PREFIX = "qb"  # every bench conversation's first message starts with "qb<round>x<n>:"


# --- the server under test ---------------------------------------------------------------------


class Server(ServerProcess):
    def __init__(self, *, database: str, model_url: str, profile: str | None, app: str) -> None:
        port = free_port()
        daphne = ["--verbosity", "0", "-b", "127.0.0.1", "-p", str(port), app]
        if profile:
            command = [sys.executable, __file__, "--serve-profiled", profile, *daphne]
        else:
            command = [sys.executable, "-m", "daphne", *daphne]
        super().__init__(
            command=command,
            env=clarion_env(database=database, model_url=model_url),
            port=port,
            log_path=ROOT / ".data" / "bench-questions-daphne.log",
            name="Daphne",
        )


def serve_profiled(out: str, daphne_args: list[str]) -> None:
    """Daphne under cProfile, every thread (the event loop's and the ORM's sync thread each get a
    profiler); `out` gets the merged stats, `out`.<n> each thread's, when the reactor stops."""
    import cProfile
    import pstats
    import threading

    from daphne.cli import CommandLineInterface

    profilers = [cProfile.Profile()]

    def start_in_new_thread(frame, event, arg):
        sys.setprofile(None)
        profiler = cProfile.Profile()
        profilers.append(profiler)
        profiler.enable()

    threading.setprofile(start_in_new_thread)
    profilers[0].enable()
    try:
        CommandLineInterface().run(daphne_args)
    finally:
        profilers[0].disable()
        for i, profiler in enumerate(profilers):
            profiler.create_stats()
            profiler.dump_stats(f"{out}.{i}")
        merged = pstats.Stats(f"{out}.0")
        for i in range(1, len(profilers)):
            merged.add(f"{out}.{i}")
        merged.dump_stats(out)


# --- the clients -------------------------------------------------------------------------------


@dataclass
class Client:
    tag: str
    conversation_id: str
    cookie: str
    question_id: str | None = None
    card_at: float | None = None
    answered_at: float | None = None
    receipt_at: float | None = None
    stream_at: float | None = None
    text_at: float | None = None
    saved_at: float | None = None
    saved_frames: int = 0
    errors: list[str] = field(default_factory=list)
    frames: int = 0

    @property
    def final_text(self) -> str:
        return f"Done {self.tag}: Harbor."

    def on_frame(self, frame: str, now: float) -> None:
        self.frames += 1
        if self.question_id is None and (m := QUESTION_ID.search(frame)):
            self.question_id, self.card_at = m[1], now
        self.errors += [e for e in COMPOSER_ERROR.findall(frame) if e.strip()]
        if 'data-role="error"' in frame:
            self.errors.append(frame[:200])
        if self.answered_at is None:
            return
        if self.receipt_at is None and 'class="question-receipt answered"' in frame:
            self.receipt_at = now
        if self.stream_at is None and "message-assistant streaming" in frame:
            self.stream_at = now
        if self.final_text in frame:
            if 'id="message-' in frame:
                self.saved_frames += 1
                self.saved_at = self.saved_at or now
            self.text_at = self.text_at or now


async def run_client(client: Client, port: int, phase: dict, cookie_name: str) -> None:
    from websockets.asyncio.client import connect

    ws = await connect(
        f"ws://127.0.0.1:{port}/ws/conversations/{client.conversation_id}/",
        origin=f"http://127.0.0.1:{port}",
        additional_headers={"Cookie": f"{cookie_name}={client.cookie}"},
        compression=None,
        open_timeout=60,
        close_timeout=5,
        ping_interval=None,
        max_queue=None,
    )
    phase["connected"].release()

    async def read():
        async for frame in ws:
            client.on_frame(frame, time.perf_counter())
            if client.question_id and not phase["card_events"][client.tag].is_set():
                phase["card_events"][client.tag].set()
            if client.saved_at and not phase["done_events"][client.tag].is_set():
                phase["done_events"][client.tag].set()

    reader = asyncio.create_task(read())
    try:
        await phase["ask_go"].wait()
        async with phase["ask_slots"]:
            await ws.send(json.dumps({"action": "send_message", "message": f"{client.tag}: file my new task"}))
            await asyncio.wait_for(phase["card_events"][client.tag].wait(), 120)
        await phase["answer_go"].wait()
        if phase["rate"]:
            await asyncio.sleep(max(0.0, phase["answer_start"] + phase["slot"][client.tag] / phase["rate"] - time.perf_counter()))
        client.answered_at = time.perf_counter()
        if client.question_id is None:
            return  # its card never came (counted as lost)
        await ws.send(json.dumps({"action": "answer", "question_id": client.question_id, "option": 1}))
        await asyncio.wait_for(phase["done_events"][client.tag].wait(), 120)
        await phase["close_go"].wait()  # stay connected until everyone is done: doubles would show
    finally:
        reader.cancel()
        await ws.close()


# --- setup through the ORM (in this process, on the bench database) ----------------------------


def prepare_users(n_users: int) -> list[tuple[object, str]]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client as DjangoClient

    User = get_user_model()
    users = []
    for i in range(n_users):
        user, _ = User.objects.get_or_create(username=f"qbench_{i:03d}")
        browser = DjangoClient()
        browser.force_login(user)
        users.append((user, browser.cookies[settings.SESSION_COOKIE_NAME].value))
    return users


def reset_bench_data() -> None:
    """Conversations of earlier runs go (and with them their questions and messages); tables are
    compacted so the sizes measured below are of this run's rows only."""
    from django.db import connection

    from chat.models import Conversation

    Conversation.objects.filter(owner__username__startswith="qbench_").delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM FULL questions_pendingquestion, questions_questiongroup, chat_message, chat_conversation")


def make_conversations(users, count: int, round_no: int) -> list[Client]:
    from chat import services

    clients = []
    for n in range(count):
        user, cookie = users[n % len(users)]
        conversation = services.start_conversation(user=user)
        clients.append(Client(tag=f"{PREFIX}{round_no}x{n}", conversation_id=str(conversation.pk), cookie=cookie))
    return clients


def database_sizes() -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(avg(pg_column_size(q.*)), 0), pg_total_relation_size('questions_pendingquestion'), "
            "pg_total_relation_size('questions_questiongroup'), (SELECT count(*) FROM questions_questiongroup), "
            "(SELECT coalesce(avg(pg_column_size(g.*)), 0) FROM questions_questiongroup g) "
            "FROM questions_pendingquestion q WHERE q.status = 'pending'"
        )
        pending, avg_row, q_total, g_total, groups, avg_group = cursor.fetchone()
    return {
        "pending": pending,
        "avg_row": float(avg_row),
        "q_total": q_total,
        "g_total": g_total,
        "groups": groups,
        "avg_group": float(avg_group),
    }


def verify(clients: list[Client]) -> dict:
    from chat.models import Message
    from questions.models import PendingQuestion

    ids = [c.conversation_id for c in clients]
    questions = PendingQuestion.objects.filter(conversation_id__in=ids)
    messages = Message.objects.filter(conversation_id__in=ids)
    finals = list(messages.filter(role="assistant", tool_calls=[]).values_list("conversation_id", "content"))
    expected = {c.conversation_id: c.final_text for c in clients}
    return {
        "questions": questions.count(),
        "answered": questions.filter(status="answered", answer="Harbor").count(),
        "tool_results": messages.filter(role="tool", tool_call_id__startswith=f"call-{PREFIX}").count(),
        "tool_results_distinct": messages.filter(role="tool").values("tool_call_id").distinct().count(),
        "finals": len(finals),
        "finals_matching": sum(1 for cid, content in finals if expected.get(str(cid)) == content),
        "errors": messages.filter(role="error").count(),
    }


# --- one round ---------------------------------------------------------------------------------


async def run_round(*, server: Server, fake, users, count: int, rate: float, round_no: int, args, measure_memory: bool) -> dict:
    from channels.db import database_sync_to_async
    from django.conf import settings

    clients = await database_sync_to_async(make_conversations)(users, count, round_no)
    requests_before = fake.requests
    bench_cpu_before = time.process_time()
    phase = {
        "connected": asyncio.Semaphore(0),
        "ask_go": asyncio.Event(),
        "answer_go": asyncio.Event(),
        "close_go": asyncio.Event(),
        "ask_slots": asyncio.Semaphore(args.ask_concurrency or count),
        "card_events": {c.tag: asyncio.Event() for c in clients},
        "done_events": {c.tag: asyncio.Event() for c in clients},
        "slot": {c.tag: i for i, c in enumerate(clients)},
        "rate": rate,
    }
    row: dict = {"round": "burst (all at once)" if not rate else f"paced, {rate:g} answers/s", "clients": count}
    rss = {"idle": rss_kib(server.proc.pid)}
    tasks = [asyncio.create_task(run_client(c, server.port, phase, settings.SESSION_COOKIE_NAME)) for c in clients]

    async def all_of(events, what) -> int:
        """Wait (bounded) for every client; returns how many never got there."""
        waiting = asyncio.gather(*(e.wait() for e in events))
        try:
            await asyncio.wait_for(waiting, args.wait)
        except TimeoutError:
            missing = sum(1 for e in events if not e.is_set())
            print(f"  {row['round']}: {missing} of {len(events)} {what} missing after {args.wait:g} s", file=sys.stderr)
            return missing
        return 0

    for _ in clients:
        await asyncio.wait_for(phase["connected"].acquire(), 120)
    await asyncio.sleep(1.0)
    rss["connected"] = rss_kib(server.proc.pid)

    started = time.perf_counter()
    phase["ask_go"].set()
    row["cards_missing"] = await all_of(list(phase["card_events"].values()), "cards")
    for client in clients:  # a client whose card never came does not answer
        if not phase["card_events"][client.tag].is_set():
            phase["card_events"][client.tag].set()
    row["ask_seconds"] = time.perf_counter() - started
    await asyncio.sleep(1.0)
    rss["pending"] = rss_kib(server.proc.pid)
    if measure_memory:
        row["db"] = await database_sync_to_async(database_sizes)()

    cpu_before, threads_before = cpu_seconds(server.proc.pid), thread_cpu(server.proc.pid)
    phase["answer_start"] = time.perf_counter() + 0.2
    phase["answer_go"].set()
    row["continuations_missing"] = await all_of(list(phase["done_events"].values()), "continuations")
    row["answer_seconds"] = time.perf_counter() - phase["answer_start"]
    row["server_cpu_seconds"] = cpu_seconds(server.proc.pid) - cpu_before
    row["clients_cpu_seconds"] = time.process_time() - bench_cpu_before
    threads_after = thread_cpu(server.proc.pid)
    by_thread = {tid: threads_after[tid] - threads_before.get(tid, 0.0) for tid in threads_after}
    row["main_thread_cpu"] = by_thread.pop(server.proc.pid, 0.0)
    row["busiest_other_thread_cpu"] = max(by_thread.values(), default=0.0)
    row["other_threads"] = sum(1 for v in by_thread.values() if v > 0.05)
    await asyncio.sleep(1.0)  # a doubled continuation would arrive now
    phase["close_go"].set()
    for client in clients:
        if not phase["done_events"][client.tag].is_set():
            phase["done_events"][client.tag].set()  # lost: stop waiting for it
    await asyncio.gather(*tasks, return_exceptions=True)
    rss["answered"] = rss_kib(server.proc.pid)

    def ms(attr):
        return [(getattr(c, attr) - c.answered_at) * 1000 for c in clients if c.answered_at and getattr(c, attr)]

    row["latency"] = ms("text_at")
    row["stages"] = {
        "receipt": ms("receipt_at"),
        "stream started": ms("stream_at"),
        "final text": ms("text_at"),
        "saved reply": ms("saved_at"),
    }
    row["rss"] = rss
    row["model_requests"] = fake.requests - requests_before
    row["continuations_per_client"] = sorted({c.saved_frames for c in clients})
    row["client_errors"] = [e for c in clients for e in c.errors]
    row["counts"] = await database_sync_to_async(verify)(clients)
    return row


async def main(args, fake: ModelProcess) -> list[dict]:
    from channels.db import database_sync_to_async

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 4 * args.clients + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    await database_sync_to_async(reset_bench_data)()
    users = await database_sync_to_async(prepare_users)(args.users)
    server = Server(database=os.environ["DATABASE_NAME"], model_url=fake.base_url, profile=args.profile, app=args.app)
    try:
        # Warm-up: first-use costs (templates, the SDK client, connections) are not per question.
        await run_round(server=server, fake=fake, users=users, count=min(20, args.clients), rate=0, round_no=0,
                        args=args, measure_memory=False)  # fmt: skip
        rows = []
        for i, spec in enumerate(args.rounds.split(","), start=1):
            rate = 0.0 if spec.strip() == "burst" else float(spec)
            rows.append(
                await run_round(
                    server=server, fake=fake, users=users, count=args.clients, rate=rate, round_no=i, args=args, measure_memory=(i == 1)
                )  # fmt: skip
            )
    finally:
        server.stop()
    return rows


def report(rows: list[dict], args) -> bool:
    ok = True
    print(f"\nQuestions under load: {args.clients} websocket clients ({args.users} users × {args.clients // args.users} "
          f"conversations), fake model at zero delay, one Daphne process, 2 cores, loopback\n")  # fmt: skip
    print(
        "| round | answer → continuation p50 ms | p99 ms | max ms | p99 < 100 ms | answers/s | CPU s in the answer phase: server event loop / server ORM thread / clients |"
    )
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
    for r in rows:
        lat = r["latency"] or [float("nan")]
        met = percentile(lat, 0.99) < 100 and not r["continuations_missing"]
        print(f"| {r['round']} | {statistics.median(lat):.1f} | {percentile(lat, 0.99):.1f} | {max(lat):.1f} | "
              f"{'met' if met else 'MISSED'} | {r['clients'] / r['answer_seconds']:.0f} | "
              f"{r['main_thread_cpu']:.1f} / {r['busiest_other_thread_cpu']:.1f} / {r['clients_cpu_seconds']:.1f} |")  # fmt: skip
    print("\nWhere the time goes (ms after the answer frame was sent; p50 / p99):\n")
    print("| round | receipt card | stream started | final text | saved reply |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        cells = " | ".join(f"{statistics.median(v):.1f} / {percentile(v, 0.99):.1f}" if v else "–" for v in r["stages"].values())
        print(f"| {r['round']} | {cells} |")
    first = rows[0]
    rss, db, n = first["rss"], first["db"], first["clients"]
    print("\nMemory per pending question (first round):\n")
    print("| measure | value |")
    print("| --- | ---: |")
    print(f"| server RSS: idle → {n} connected → {n} pending → answered | {rss['idle'] / 1024:.1f} → "
          f"{rss['connected'] / 1024:.1f} → {rss['pending'] / 1024:.1f} → {rss['answered'] / 1024:.1f} MiB |")  # fmt: skip
    print(f"| server RSS per pending question ((pending − connected) ÷ {n}) | {(rss['pending'] - rss['connected']) / n:.1f} KiB |")
    print(f"| server RSS per connected client ((connected − idle) ÷ {n}) | {(rss['connected'] - rss['idle']) / n:.1f} KiB |")
    print(
        f"| Postgres: avg `pg_column_size` of a pending `questions_pendingquestion` row ({db['pending']} pending) | {db['avg_row']:.0f} B |"
    )
    print(f"| Postgres: `pg_total_relation_size('questions_pendingquestion')` ÷ rows (heap + TOAST + 4 indexes) | "
          f"{db['q_total'] / 1024:.0f} KiB ÷ {db['pending']} = {db['q_total'] / max(1, db['pending']):.0f} B |")  # fmt: skip
    print(f"| Postgres: `questions_questiongroup` ÷ rows ({db['groups']} rows, avg row {db['avg_group']:.0f} B) | "
          f"{db['g_total'] / 1024:.0f} KiB = {db['g_total'] / max(1, db['groups']):.0f} B |")  # fmt: skip
    print("\nNone lost, none doubled:\n")
    print(
        "| round | answered questions | tool-result messages | final replies (right text) | model requests (2 per client) | continuation frames per client | lost: cards / continuations | error rows / client errors |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for r in rows:
        c, n = r["counts"], r["clients"]
        exact = (c["questions"] == c["answered"] == c["tool_results"] == c["finals"] == c["finals_matching"] == n
                 and r["model_requests"] == 2 * n and r["continuations_per_client"] == [1] and not c["errors"]
                 and not r["client_errors"] and not r["cards_missing"] and not r["continuations_missing"])  # fmt: skip
        ok &= exact
        print(f"| {r['round']} | {c['answered']}/{n} | {c['tool_results']} | {c['finals']} ({c['finals_matching']}) | "
              f"{r['model_requests']} | {r['continuations_per_client']} | {r['cards_missing']} / {r['continuations_missing']} | "
              f"{c['errors']} / {len(r['client_errors'])} |")  # fmt: skip
        if r["client_errors"]:
            print(f"  first client errors: {r['client_errors'][:3]}")
    print(f"\n1-minute load average at the end: {os.getloadavg()[0]:.2f} (machine and Postgres are shared; compare quiet runs)")
    print("ask phase (message → card for every client): " + ", ".join(f"{r['round']}: {r['ask_seconds']:.1f} s" for r in rows))
    print(f"server log: {ROOT / '.data' / 'bench-questions-daphne.log'}")
    return ok


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=500)
    parser.add_argument("--users", type=int, default=50, help="clients are spread over these (≤ 10 pending questions each)")
    parser.add_argument("--rounds", default="burst,50,20,10", help="comma-separated: 'burst' or answers per second")
    parser.add_argument("--ask-concurrency", type=int, default=25, help="messages in flight during the ask phase; 0 = all at once")
    parser.add_argument("--timeout", type=float, default=900, help="cap on the whole run, seconds")
    parser.add_argument("--wait", type=float, default=90, help="how long a phase waits for its last client, seconds")
    parser.add_argument("--profile", help="run the server under cProfile (every thread) and write its stats here")
    parser.add_argument(
        "--app",
        default="project.asgi:application",
        help="ASGI application the server runs (try a change without editing the app: a wrapper module on PYTHONPATH)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-profiled":
        serve_profiled(sys.argv[2], sys.argv[3:])
        sys.exit(0)
    args = parse_args()
    if args.clients > 10 * args.users:
        sys.exit(f"{args.clients} clients need at least {-(-args.clients // 10)} users: at most 10 questions may be pending per user")
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("DATABASE_NAME", "clarion_bench_questions")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if "bench" not in os.environ["DATABASE_NAME"]:
        sys.exit("refusing to run on a database whose name lacks 'bench' (it deletes this benchmark's rows)")
    (ROOT / ".data").mkdir(exist_ok=True)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    fake = ModelProcess()  # forked before any event loop or thread exists
    try:
        rows = asyncio.run(asyncio.wait_for(main(args, fake), args.timeout))
    finally:
        fake.stop()
    sys.exit(0 if report(rows, args) else 1)
