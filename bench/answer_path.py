"""Answer path vs anchor: Clarion, driven exactly as its page drives it, and LangGraph + Postgres
under the same load, in the same run.

N clients each load their conversation's page, open its websocket, send a message, get a
question, answer it and time answer → receipt / first reply text / saved reply. Systems,
interleaved over --rounds rounds (the order rotates each round; each system's servers are
started fresh for its turn and warmed up with 20 clients):

- **Clarion, 1 Daphne**: `project.asgi` as `manage.py up` serves it (one process, in-memory
  channel layer), driven only with the requests its page sends: `GET /chat/<id>/` with the
  login session cookie (the page, its CSRF token and cookie), the conversation websocket with
  that cookie and the page's origin, the composer's `send_message` frame (as htmx's ws extension
  sends a form), and the card's answer as `static/js/clarion.js` sends it while the socket is open:
  the `answer` frame it builds from the card's form (`{"action":"answer","question_id":…,"option":1}`),
  posted with the card's `hx-post` if no receipt came within 15 s. With --card-post, the card's
  `hx-post` to `/chat/questions/<id>/answer/` instead (`option=1`, the session and CSRF cookies,
  `X-CSRFToken` and the headers htmx adds): what the page sends when its socket is not open. The
  receipt is its websocket frame (or the POST's response, the card the page swaps in, when that
  comes first); the reply is read from the websocket. Conversations and logins are made
  beforehand, directly (not measured).
- **Clarion, 2 Daphne + Redis**: two workers on two ports sharing groups through `REDIS_URL`
  (a channel prefix of this run's own); clients alternate between the workers.
- **LangGraph + Postgres** (the anchor, `bench/anchors/langgraph_server.py`): `interrupt()` to
  ask, `Command(resume=<index>)` through `AsyncPostgresSaver` (psycopg-pool) on its own database
  on the same Postgres, served by a plain `websockets` server; the answer is its websocket frame.

The model, for every system: the scripted fake OpenAI-compatible server of `tests/fake_openai.py`
at zero delay in a process of its own, reached through the real `openai` SDK over loopback HTTP,
streamed. It asks with `ask_user`, then answers "Done <tag>: Harbor." once it sees the tool
result; it counts the requests of each client (2 each: the question, the reply).

Steps per system and round (see `run_system`): a warm-up; a burst of --burst (every answer at
once); then --pending questions pending, of which --paced-answers answer paced at each of --rates
answers/s (open loop; topped up after each paced step, so each starts with --pending pending);
then all --pending answer at once (the large burst). Server CPU is the server processes' CPU time
over the step; memory is read once the --pending questions are pending; every server process's
Postgres connections are sampled from `pg_stat_activity` every 20 ms throughout.

    .venv/bin/pip install -q --require-hashes --no-deps -r requirements-bench.lock   # after the README's test install
    .venv/bin/python bench/answer_path.py          # 3 rounds: burst of 100; 500 pending: 100 at 10/s, 100 at 50/s, burst of 500
    .venv/bin/python bench/answer_path.py --quick  # smoke run: 1 round, burst of 10, 30 pending, 10 paced answers

Databases: DATABASE_NAME (default clarion_bench_answer) for Clarion and <that>_anchor for the
anchor, on the embedded Postgres (or DATABASE_URL's server); both are created fresh (dropped
first), and dropped at the end unless --keep-databases. Exit status 1 when any answer failed
(an HTTP error, an error frame), was lost or doubled, a model call was missing or extra, or a
Clarion process held more Postgres connections than its bound.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import time
import traceback
import uuid
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from loadkit import (  # noqa: E402
    Client,
    ConnectionSampler,
    Measured,
    ModelProcess,
    ServerProcess,
    Session,
    clarion_env,
    free_port,
    percentile,
    raise_open_files_limit,
)

from tests.processes import daphne_command  # noqa: E402  (Daphne as `manage.py up` runs it)

LOGS = ROOT / ".data" / "bench-answer-path" / os.environ.get("DATABASE_NAME", "clarion_bench_answer")


# --- the two dialects: what each system's frames look like --------------------------------------


# The page posts an answer its socket took when no receipt came in this long (static/js/clarion.js).
ANSWER_WAIT_SECONDS = 15.0


class ClarionDialect:
    name = "Clarion"

    CARD = re.compile(
        r'<section [^>]*\bid="qgroup-([0-9a-f-]{36})"[^>]*>.*?<div class="question-pending" id="question-([0-9a-f-]{36})"', re.S
    )
    TAG_WITH_QUESTION_ID = re.compile(r'<[^>]*\bid="question-([0-9a-f-]{36})"[^>]*>')
    CSRF = re.compile(r'"X-CSRFToken": "([^"]+)"')
    # A stream piece (the reply so far, rendered) with text in it: the bubble that opens empty,
    # with its typing dots, is not the reply starting.
    STREAM_PIECE = re.compile(r'<div id="stream-[^"]+-body" hx-swap-oob="innerHTML">')
    TAG = re.compile(r"<[^>]*>")
    COMPOSER_ERROR = re.compile(r'<div id="composer-error"[^>]*>([^<]*)</div>')

    def __init__(self, *, card_post: bool) -> None:
        self.card_post = card_post
        self.posted_after_wait = 0
        self._fallbacks: set[asyncio.Task] = set()

    def ask_frame(self, client: Client) -> str:
        # What htmx's ws extension sends for the composer's form.
        headers = {"HX-Request": "true", "HX-Trigger": "composer", "HX-Trigger-Name": None, "HX-Target": "composer",
                   "HX-Current-URL": client.page_url}  # fmt: skip
        return json.dumps({"action": "send_message", "message": f"{client.tag}: file my new task", "HEADERS": headers})

    async def load_page(self, session: Session, client: Client) -> None:
        response = await session.http.get(client.page_url, headers={"Cookie": client.headers["Cookie"]})
        if response.status_code != 200:
            raise RuntimeError(f"the page answered {response.status_code}")
        from django.conf import settings

        client.csrf_token = self.CSRF.search(response.text)[1]
        csrf_cookie = response.cookies.get(settings.CSRF_COOKIE_NAME)
        if csrf_cookie:  # the websocket and the POST carry it, as the browser's cookie jar would
            client.headers["Cookie"] += f"; {settings.CSRF_COOKIE_NAME}={csrf_cookie}"

    async def answer(self, session: Session, client: Client) -> None:
        """The card's option button, as the page sends it: while its socket is open, the `answer`
        frame `static/js/clarion.js` builds from the card's form, posted after ANSWER_WAIT_SECONDS
        if no receipt came (in the background: the step's time and CPU do not wait for it); with
        --card-post, the form's `hx-post`, as the page sends it when its socket is not open."""
        if not self.card_post:
            await session.send(
                client, json.dumps({"action": "answer", "question_id": client.question_id, "option": 1}, separators=(",", ":"))
            )
            self._fallbacks.add(task := asyncio.create_task(self._post_unless_received(session, client)))
            task.add_done_callback(self._fallbacks.discard)
            return
        await self._post(session, client)

    async def _post_unless_received(self, session: Session, client: Client) -> None:
        await asyncio.sleep(ANSWER_WAIT_SECONDS)
        if client.receipt_at is None:
            self.posted_after_wait += 1
            await self._post(session, client)

    async def _post(self, session: Session, client: Client) -> None:
        origin = client.page_url.split("/chat/", 1)[0]
        response = await session.http.post(
            f"{origin}/chat/questions/{client.question_id}/answer/",
            content=b"option=1",
            headers={
                "Cookie": client.headers["Cookie"],
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": origin,
                "Referer": client.page_url,
                "X-CSRFToken": client.csrf_token,
                "HX-Request": "true",
                "HX-Current-URL": client.page_url,
                "HX-Target": f"qgroup-{client.group_id}",
                "HX-Trigger": f"answer-{client.question_id}",
            },
        )
        if response.status_code != 200:
            client.http_errors.append(f"{response.status_code}: {response.text[:120]!r}")
        elif f'id="question-{client.question_id}"' in response.text and "answered" in response.text:
            client.response_at = time.perf_counter()
            client.receipt_at = client.receipt_at or client.response_at
        else:
            client.http_errors.append(f"200 without the receipt: {response.text[:120]!r}")

    def observe(self, client: Client, frame: str) -> list[tuple[str, ...]]:
        events: list[tuple[str, ...]] = []
        for match in self.CARD.finditer(frame):
            events.append(("card", match[2], match[1]))
        for match in self.TAG_WITH_QUESTION_ID.finditer(frame):
            if match[1] == client.question_id and "answered" in match[0]:
                events.append(("receipt",))
        if self.STREAM_PIECE.search(frame) and self.TAG.sub("", frame).strip():
            events.append(("text",))
        if client.final_text in frame and 'id="message-' in frame:
            events.append(("saved",))
        events += [("error", e) for e in self.COMPOSER_ERROR.findall(frame) if e.strip()]
        if 'data-role="error"' in frame:
            events.append(("error", frame[:200]))
        return events


class AnchorDialect:
    name = "LangGraph + Postgres"

    def ask_frame(self, client: Client) -> str:
        return json.dumps({"action": "send_message", "message": f"{client.tag}: file my new task"})

    async def load_page(self, session: Session, client: Client) -> None:
        pass  # no page: its client is the websocket alone

    async def answer(self, session: Session, client: Client) -> None:
        await session.send(client, json.dumps({"action": "answer", "question_id": client.question_id, "option": 1}))

    def observe(self, client: Client, frame: str) -> list[tuple[str, ...]]:
        data = json.loads(frame)
        kind = data.get("type")
        if kind == "question":
            return [("card", data["id"], "")]
        if kind == "receipt":
            return [("receipt",)]
        if kind == "delta":
            return [("text",)]
        if kind == "saved":
            return [("saved",)] if data["text"] == client.final_text else [("error", f"wrong reply {data['text']!r}")]
        if kind == "error":
            return [("error", data["message"])]
        return []


# --- databases -----------------------------------------------------------------------------------


def server_conninfo(dbname: str) -> str:
    from django.conf import settings
    from psycopg.conninfo import make_conninfo

    from project.embedded_pg import resolve_address

    db = settings.DATABASES["default"]
    resolve_address(db)  # the embedded server starts on first use: its address is known after
    parts = {"host": db["HOST"], "port": db.get("PORT") or None, "user": db["USER"], "password": db.get("PASSWORD") or None}
    return make_conninfo(dbname=dbname, **{k: v for k, v in parts.items() if v})


def create_database(name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(server_conninfo("postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(server_conninfo("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def tables_bytes(dbname: str) -> int:
    """Every table of the database with its indexes and TOAST: what the rows written cost."""
    import psycopg

    with psycopg.connect(server_conninfo(dbname), autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0])


# --- the systems -------------------------------------------------------------------------------


class _ServedSystem:
    """A system under test: its server processes and its own database."""

    database: str
    servers: list[ServerProcess]

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
        self.servers = []

    def database_bytes(self) -> int:
        return tables_bytes(self.database)


class Clarion(_ServedSystem):
    def __init__(self, *, workers: int, database: str, model_url: str, redis_url: str, users, card_post: bool) -> None:
        self.workers, self.database, self.users = workers, database, users
        self.name = "Clarion, 1 Daphne" if workers == 1 else f"Clarion, {workers} Daphne + Redis"
        self.connection_prefix = "clarion-"  # each process names its connections clarion-<pid>
        self.key = f"clarion{workers}"
        self.dialect = ClarionDialect(card_post=card_post)
        self.env = clarion_env(
            database=database,
            model_url=model_url,
            REDIS_URL=redis_url if workers > 1 else "",
            CHANNELS_PREFIX=f"clarion_bench_{os.getpid()}",
        )
        self.servers: list[ServerProcess] = []

    def start(self) -> None:
        for i in range(self.workers):
            port = free_port()
            self.servers.append(ServerProcess(command=daphne_command(port), env=self.env,
                                              port=port, log_path=LOGS / f"{self.key}-{i}.log", name=f"{self.name} #{i}"))  # fmt: skip

    def clients(self, count: int, tag: str) -> list[Client]:
        """Fresh conversations, spread over the users (≤ 10 pending each). Created directly: the
        app's "New conversation" reuses a user's empty one, and these all start empty."""
        from django.conf import settings

        from chat import services

        cookie_name = settings.SESSION_COOKIE_NAME
        result = []
        for n in range(count):
            user, cookie = self.users[n % len(self.users)]
            conversation = services.start_conversation(user=user)
            server = self.servers[n % len(self.servers)]
            result.append(Client(tag=f"{tag}x{n}", url=f"ws://127.0.0.1:{server.port}/ws/conversations/{conversation.pk}/",
                                 page_url=f"http://127.0.0.1:{server.port}/chat/{conversation.pk}/",
                                 headers={"Cookie": f"{cookie_name}={cookie}"}))  # fmt: skip
        return result


class Anchor(_ServedSystem):
    name = "LangGraph + Postgres"
    key = "anchor"
    connection_prefix = "anchor"

    def __init__(self, *, database: str, model_url: str, pool_size: int) -> None:
        self.database = database
        self.dialect = AnchorDialect()
        self.env = {**os.environ, "ANCHOR_DATABASE_URL": server_conninfo(database), "ANCHOR_MODEL_URL": model_url,
                    "ANCHOR_POOL_SIZE": str(pool_size), "PGAPPNAME": "anchor"}  # fmt: skip
        self.servers: list[ServerProcess] = []

    def start(self) -> None:
        port = free_port()
        command = [sys.executable, str(ROOT / "bench" / "anchors" / "langgraph_server.py"), "--port", str(port)]
        self.servers.append(ServerProcess(command=command, env=self.env, port=port, log_path=LOGS / "anchor.log", name=self.name))

    def clients(self, count: int, tag: str) -> list[Client]:
        port = self.servers[0].port
        return [Client(tag=f"{tag}x{n}", url=f"ws://127.0.0.1:{port}/ws/{uuid.uuid4()}/") for n in range(count)]


def prepare_users(count: int):
    """Bench users and their logged-in sessions (Django's auth; a test client per user)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client as DjangoClient

    User = get_user_model()
    users = []
    for i in range(count):
        user, _ = User.objects.get_or_create(username=f"abench_{i:03d}")
        browser = DjangoClient(HTTP_HOST="127.0.0.1")
        browser.force_login(user)
        users.append((user, browser.cookies[settings.SESSION_COOKIE_NAME].value))
    return users


# --- the run -------------------------------------------------------------------------------------


async def run_system(system, args, model: ModelProcess, sampler: ConnectionSampler, round_no: int) -> dict[str, Measured]:
    """One system's turn in one round, on freshly started servers:

    1. warm-up: 20 clients ask and answer (first-use costs are not per answer; not reported);
    2. a burst of --burst: that many ask, then all answer at once;
    3. --pending clients ask and stay pending (memory is read now); then for each --rates rate,
       --paced-answers of them answer at that rate and as many new clients ask, so every paced
       step starts with --pending pending; finally all --pending answer at once (the large burst).
    """
    from asgiref.sync import sync_to_async

    tag = f"ab{round_no}{system.key}"
    results: dict[str, Measured] = {}
    system.start()
    session = Session(dialect=system.dialect, servers=system.servers, model=model, wait=args.wait, label=system.name,
                      sampler=sampler, connection_prefix=system.connection_prefix)  # fmt: skip
    try:
        warm = await sync_to_async(system.clients)(min(20, args.burst), f"{tag}w")
        await session.connect(warm)
        await session.ask(warm, concurrency=args.ask_concurrency)
        await session.answer(warm)

        small = await sync_to_async(system.clients)(args.burst, f"{tag}s")
        await session.connect(small)
        await session.ask(small, concurrency=args.ask_concurrency)
        results["burst_small"] = await session.answer(small)
        report_step(system, f"burst of {args.burst}", results["burst_small"])

        k = args.paced_answers
        big = await sync_to_async(system.clients)(args.pending + k * len(args.rates), f"{tag}b")
        idle = session.rss_kib()
        await session.connect(big)
        connected, db_before = session.rss_kib(), await asyncio.to_thread(system.database_bytes)
        pending, extra = big[: args.pending], big[args.pending :]
        await session.ask(pending, concurrency=args.ask_concurrency)
        await asyncio.sleep(0.5)
        memory = {"rss_per_socket_kib": (connected - idle) / len(big),
                  "rss_per_pending_kib": (session.rss_kib() - connected) / args.pending,
                  "db_bytes_per_pending": (await asyncio.to_thread(system.database_bytes) - db_before) / args.pending}  # fmt: skip
        for rate in args.rates:
            group, pending = pending[:k], pending[k:]
            results[f"paced{rate:g}"] = step = await session.answer(group, rate=rate)
            report_step(system, f"{rate:g} answers/s", step)
            topping, extra = extra[:k], extra[k:]
            await session.ask(topping, concurrency=args.ask_concurrency)
            pending += topping
        results["burst_large"] = await session.answer(pending)
        results["burst_large"].memory = memory
        report_step(system, f"burst of {len(pending)}", results["burst_large"])
        late_doubles = await session.close()
        results["burst_large"].doubled = max(results["burst_large"].doubled, late_doubles)
        results["burst_large"].connect_retries = session.connect_retries
    finally:
        await session.close()
        system.stop()
    return results


def report_step(system, label: str, m: Measured) -> None:
    print(f"  {system.name}, {label} ({m.pending} pending): {m.answers_per_second:.0f} answers/s, "
          f"{m.cpu_ms_per_answer:.1f} ms CPU/answer, receipt p50 {stage(m, 'receipt', 0.5):.0f} ms, "
          f"first text p99 {stage(m, 'text', 0.99):.0f} ms, HTTP errors {len(m.http_errors)}, lost {m.lost}, "
          f"doubled {m.doubled}, model calls {m.model_calls}/{2 * m.clients}, connections ≤ {m.connections}",
          file=sys.stderr, flush=True)  # fmt: skip


async def run(args, model: ModelProcess, sampler: ConnectionSampler, systems, results: dict, finished: list[int]) -> None:
    """Fills results[system key][step key] = [Measured per round] and `finished` with the rounds
    done; the system order rotates per round."""
    for round_no in range(1, args.rounds + 1):
        shift = (round_no - 1) % len(systems)
        for system in systems[shift:] + systems[:shift]:
            print(f"round {round_no}: {system.name}", file=sys.stderr, flush=True)
            try:
                measured_steps = await run_system(system, args, model, sampler, round_no)
            except Exception:  # one failed turn must not throw away the rounds measured so far
                traceback.print_exc()
                print(f"round {round_no}: {system.name} failed; its figures for this round are missing", file=sys.stderr)
                continue
            for key, measured in measured_steps.items():
                results[system.key].setdefault(key, []).append(measured)
        # Each finished round's tables, in case a long run is stopped before the last.
        with open(LOGS / f"report-after-round-{round_no}.md", "w") as out, contextlib.redirect_stdout(out):
            report(results, systems, args, rounds=round_no, bound=connection_bound())
        finished.append(round_no)


# --- the report ----------------------------------------------------------------------------------


def cell(values: list[float], fmt: str = "{:.0f}") -> str:
    values = [v for v in values if v == v]  # drop NaN
    if not values:
        return "–"
    mid = fmt.format(statistics.median(values))
    if len(values) == 1:
        return mid
    return f"{mid} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def stage(m: Measured, name: str, q: float) -> float:
    values = m.stages.get(name) or []
    if not values:
        return float("nan")
    return statistics.median(values) if q == 0.5 else percentile(values, q)


def report(results: dict, systems, args, *, rounds: int | None = None, bound: int = 0) -> bool:
    rounds = rounds or args.rounds
    small, large = f"burst of {args.burst}", f"burst of {args.pending}"
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, key: str, fn, fmt: str = "{:.0f}") -> None:
        rows.append((label, [cell([fn(m) for m in results[s.key].get(key, [])], fmt) for s in systems]))

    row(f"server CPU per answer, ms ({small})", "burst_small", lambda m: m.cpu_ms_per_answer, "{:.1f}")
    row(f"server CPU per answer, ms ({large})", "burst_large", lambda m: m.cpu_ms_per_answer, "{:.1f}")
    row(f"answers/s, {small}", "burst_small", lambda m: m.answers_per_second)
    row(f"answers/s, {large}", "burst_large", lambda m: m.answers_per_second)
    row(f"receipt shown p50, ms ({small})", "burst_small", lambda m: stage(m, "receipt", 0.5))
    row(f"  the card POST's response p50, ms ({small})", "burst_small", lambda m: stage(m, "response", 0.5))
    row(f"  the receipt's websocket frame p50, ms ({small})", "burst_small", lambda m: stage(m, "ws_receipt", 0.5))
    row(f"receipt shown p50, ms ({large})", "burst_large", lambda m: stage(m, "receipt", 0.5))
    for rate in args.rates:
        label = f"at {rate:g} answers/s, {args.pending} pending"
        row(f"{label}: first reply text p50, ms", f"paced{rate:g}", lambda m: stage(m, "text", 0.5))
        row(f"{label}: first reply text p99, ms", f"paced{rate:g}", lambda m: stage(m, "text", 0.99))
    row(f"saved reply p50, ms ({large})", "burst_large", lambda m: stage(m, "saved", 0.5))
    row(f"server RSS per pending ask, KiB ({args.pending} pending)", "burst_large", lambda m: m.memory["rss_per_pending_kib"], "{:.1f}")
    row("server RSS per open websocket, KiB", "burst_large", lambda m: m.memory["rss_per_socket_kib"], "{:.1f}")
    row(f"Postgres bytes per pending ask ({args.pending} pending)", "burst_large", lambda m: m.memory["db_bytes_per_pending"])
    rows.append(("Postgres connections, most held by one server process (by all of them), over every step",
                 [cell([m.connections for ms in results[s.key].values() for m in ms]) +
                  f" ({cell([m.connections_total for ms in results[s.key].values() for m in ms])})" for s in systems]))  # fmt: skip
    row("websocket handshakes retried (dropped by a busy server)", "burst_large", lambda m: m.connect_retries)

    ok = True
    totals = []
    for system in systems:
        steps = [m for ms in results[system.key].values() for m in ms]
        failed = sum(len(m.http_errors) + len(m.errors) for m in steps)
        lost = sum(m.lost for m in steps)
        doubled = sum(m.doubled for m in steps)
        calls, expected = sum(m.model_calls for m in steps), sum(2 * m.clients for m in steps)
        over = system.key.startswith("clarion") and any(m.connections > bound for m in steps)
        ok &= failed == lost == doubled == 0 and calls == expected and not over
        totals.append(f"{failed} / {lost} / {doubled} / {calls} of {expected}")
    rows.append(("failed (HTTP errors, error frames) / lost / doubled / model calls of 2N (every answer of every round)", totals))

    how = "with the card's POST (as the page does without its socket)" if args.card_post else "on the page's open socket"
    print(f"\nAnswer path vs anchor: {rounds} round(s), interleaved; each cell is the median over the "
          f"rounds (min–max). Fake model at zero delay through the openai SDK; loopback; 2 cores. Clarion "
          f"answers {how}; "
          f"a process's connection bound is {bound} (DATABASE_POOL_MAX_SIZE + 25).\n")  # fmt: skip
    print("| measure | " + " | ".join(s.name for s in systems) + " |")
    print("| --- |" + " ---: |" * len(systems))
    for label, cells in rows:
        print(f"| {label} | " + " | ".join(cells) + " |")

    print("\nPer round: answers/s · server CPU ms per answer · receipt p50 ms · first reply text p50 / p99 ms · "
          "failed / lost / doubled · model calls of 2N · most connections of one process\n")  # fmt: skip
    print("| system | step | " + " | ".join(f"round {i}" for i in range(1, rounds + 1)) + " |")
    print("| --- | --- |" + " --- |" * rounds)
    steps = [("burst_small", small)] + [(f"paced{r:g}", f"{r:g} answers/s") for r in args.rates] + [("burst_large", large)]
    for system in systems:
        for key, label in steps:
            cells = [f"{m.answers_per_second:.0f} · {m.cpu_ms_per_answer:.1f} · {stage(m, 'receipt', 0.5):.0f} · "
                     f"{stage(m, 'text', 0.5):.0f} / {stage(m, 'text', 0.99):.0f} · "
                     f"{len(m.http_errors) + len(m.errors)} / {m.lost} / {m.doubled} · {m.model_calls} of {2 * m.clients} · {m.connections}"
                     for m in results[system.key].get(key, [])]  # fmt: skip
            print(f"| {system.name} | {label} | " + " | ".join(cells) + " |")
    for system in systems:
        errors = [e for ms in results[system.key].values() for m in ms for e in m.http_errors + m.errors]
        if errors:
            print(f"\n{system.name}: first failures: {errors[:3]}")
        if isinstance(system.dialect, ClarionDialect) and not args.card_post:
            print(f"\n{system.name}: answers posted after {ANSWER_WAIT_SECONDS:g} s without a receipt: {system.dialect.posted_after_wait}")
    print(f"\n1-minute load average at the end: {os.getloadavg()[0]:.2f} (2 cores, shared with other work)")
    print(f"server logs: {LOGS}")
    return ok


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 round, a burst of 10, 30 pending, 10 paced answers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burst", type=int, default=100, help="the small burst's size")
    parser.add_argument("--pending", type=int, default=500, help="questions pending in the paced steps; the large burst's size")
    parser.add_argument("--rates", default="10,50", help="comma-separated paced answer rates, per second")
    parser.add_argument("--paced-answers", type=int, default=100, help="answers per paced step")
    parser.add_argument("--systems", default="clarion1,clarion2,anchor", help="any of clarion1, clarion2, anchor")
    parser.add_argument("--ask-concurrency", type=int, default=25, help="messages in flight during the ask phase")
    parser.add_argument("--wait", type=float, default=300, help="how long a phase waits for its last client, seconds")
    parser.add_argument("--timeout", type=float, default=5400, help="cap on the whole run, seconds")
    parser.add_argument(
        "--card-post", action="store_true", help="Clarion's answers as the card's POST (what the page sends when its socket is not open)"
    )
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    parser.add_argument("--anchor-pool-size", type=int, default=10, help="the anchor's Postgres pool (max connections)")
    parser.add_argument("--keep-databases", action="store_true", help="do not drop the two bench databases at the end")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.burst, args.pending, args.paced_answers, args.wait = 1, 10, 30, 10, 60
    args.rates = [float(r) for r in str(args.rates).split(",") if r.strip()]
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    return args


def connection_bound() -> int:
    """The most Postgres connections one Clarion process may hold: its pool and the stated 25."""
    from django.conf import settings

    return settings.DATABASE_POOL_MAX_SIZE + 25


def redis_reachable(url: str) -> bool:
    import socket

    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=2):
            return True
    except OSError:
        return False


def main() -> int:
    args = parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("DATABASE_NAME", "clarion_bench_answer")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost"
    database = os.environ["DATABASE_NAME"]
    if "bench" not in database:
        sys.exit("refusing to run on a database whose name lacks 'bench' (it is dropped at the end)")
    anchor_database = f"{database}_anchor"
    largest = args.pending + args.paced_answers * len(args.rates)  # clients connected at once
    raise_open_files_limit(largest + args.burst + 20)
    LOGS.mkdir(parents=True, exist_ok=True)
    if "clarion2" in args.systems and not redis_reachable(args.redis_url):
        print(f"Redis at {args.redis_url} is not reachable: skipping Clarion on 2 workers", file=sys.stderr)
        args.systems.remove("clarion2")

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    started = time.perf_counter()
    # Fresh databases: rows an interrupted earlier run left pending would be resolved by
    # Clarion's deadline sweep during this run, and their continuations counted here.
    for name in (database, anchor_database):
        drop_database(name)
        create_database(name)
    call_command("migrate", verbosity=0)
    # An ask_user question expires after 5 min by default (timed out, default applied). A
    # saturated server can take longer than that to reach the last of 500 answers; the anchor has
    # no deadlines, so here the deadline is armed as usual but a day away (an admin setting).
    from knowledge.models import AIConfig

    AIConfig.objects.update_or_create(singleton=True, defaults={"ask_timeout_seconds": 86400})
    users = prepare_users(max(1, -(-max(largest, args.burst) // 10)))  # ≤ 10 pending questions per user
    connections.close_all()
    model = ModelProcess()  # forked before any event loop or thread exists
    sampler = ConnectionSampler(server_conninfo("postgres"), [database, anchor_database])
    print(f"set-up: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    try:
        systems = []
        for key in args.systems:
            if key.startswith("clarion"):
                systems.append(Clarion(workers=int(key[-1]), database=database, model_url=model.base_url,
                                       redis_url=args.redis_url, users=users, card_post=args.card_post))  # fmt: skip
            elif key == "anchor":
                systems.append(Anchor(database=anchor_database, model_url=model.base_url, pool_size=args.anchor_pool_size))
            else:
                sys.exit(f"unknown system {key!r}")
        results: dict[str, dict[str, list[Measured]]] = {s.key: {} for s in systems}
        finished: list[int] = []
        try:
            asyncio.run(asyncio.wait_for(run(args, model, sampler, systems, results, finished), args.timeout))
        except TimeoutError:
            if not finished:
                raise SystemExit(f"--timeout {args.timeout:g} s reached before the first round finished") from None
            print(f"--timeout {args.timeout:g} s reached: the tables of the {len(finished)} finished round(s) follow "
                  f"(a later, unfinished round may add steps of some systems)", file=sys.stderr)  # fmt: skip
        ok = report(results, systems, args, rounds=finished[-1] if finished else args.rounds, bound=connection_bound())
    finally:
        sampler.stop()
        model.stop()
        connections.close_all()
        if not args.keep_databases:
            drop_database(anchor_database)
            drop_database(database)
    print(f"whole run: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
