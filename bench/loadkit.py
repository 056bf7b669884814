"""Shared parts of the load benchmarks (`answer_path.py`; the fake model also for `agent_loop.py`).

- process measures read from /proc: RSS, CPU seconds;
- the fake model in a process of its own: the scripted OpenAI-compatible server of
  `tests/fake_openai.py` at zero delay, which asks with `ask_user` first and answers with text once
  it sees the tool result; it counts the requests it served, per client;
- `ServerProcess`: a server subprocess that is waited for until it listens, and stopped;
- `ConnectionSampler`: the Postgres connections each server process holds, sampled throughout;
- one client driver for any system (`Session`): clients load their page, open their websocket,
  send a message, wait for their question, answer it (at once or paced) the way the system's own
  client does, and time the answer → receipt / first reply text / saved reply. How a system is
  driven and what its frames look like is a `Dialect`; the driver is the same for every system.

Loopback only; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from websockets.exceptions import InvalidHandshake

ROOT = Path(__file__).resolve().parent.parent


# --- measures ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def raise_open_files_limit(clients: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * clients + 256)), hard))


# --- the fake model: per conversation, ask first, answer after the tool result -----------------


def tag_of(body: dict) -> str:
    """Every bench conversation's first user message starts with "<tag>:"."""
    return next(m for m in body["messages"] if m["role"] == "user")["content"].split(":", 1)[0]


def model_reply(body: dict):
    from tests.fake_openai import Reply

    tag = tag_of(body)
    last = body["messages"][-1]
    if last["role"] == "tool":
        result = json.loads(last["content"])
        answers = result["answers"][0]["answers"] if "answers" in result else ["<tool error>"]
        return Reply.text(f"Done {tag}: {', '.join(answers)}.")
    question = {"question": "Which project should this go to?", "header": "Project",
                "options": [{"label": "Atlas"}, {"label": "Harbor"}, {"label": "Home"}]}  # fmt: skip
    return Reply.tool_call("ask_user", {"questions": [question]}, id=f"call-{tag}")


def final_text(tag: str) -> str:
    """What the fake model says once the question was answered with option 1 ("Harbor")."""
    return f"Done {tag}: Harbor."


class ModelProcess:
    """The fake model in a process of its own, so the load generator's event loop (hundreds of
    sockets) and the model's HTTP threads do not share one GIL — as a real model is remote;
    `calls(tag)` counts what it served each client. `reply(body)` picks each reply (default: `model_reply`).
    Forked: create it before any event loop or thread exists."""

    def __init__(self, reply=None) -> None:
        import multiprocessing

        self._reply = reply or model_reply

        ctx = multiprocessing.get_context("fork")
        self._tags = ctx.SimpleQueue()  # the tag of every request served, to count calls per client
        self._calls: dict[str, int] = {}
        self._stop = ctx.Event()
        urls = ctx.Queue()
        self.proc = ctx.Process(target=self._serve, args=(urls,), daemon=True)
        self.proc.start()
        self.base_url = urls.get(timeout=30)

    def _serve(self, urls) -> None:
        from http.server import ThreadingHTTPServer

        from tests.fake_openai import FakeOpenAI, _Handler

        # The stdlib default listen backlog (5) makes a burst of simultaneous model calls wait
        # for SYN retransmits (1 s, 3 s): a property of the test server, not of the system under
        # test. A real model endpoint accepts them; so does this one, in this process only.
        ThreadingHTTPServer.request_queue_size = 1024
        # The fake server closes the connection after every streamed reply without saying so in
        # a header; an SDK would put that connection back in its pool and its next request could
        # race the close ("Connection error"). Say it, as a server that closes must.
        original_end_headers = _Handler.end_headers

        def end_headers(handler) -> None:
            if not any(line.lower().startswith(b"connection:") for line in getattr(handler, "_headers_buffer", [])):
                handler.send_header("Connection", "close")
            original_end_headers(handler)

        _Handler.end_headers = end_headers

        def reply(body):
            self._tags.put(tag_of(body))
            return self._reply(body)

        with FakeOpenAI(default=reply) as fake:
            urls.put(fake.base_url)
            self._stop.wait()

    def calls(self, tag: str) -> int:
        """Model requests served so far for the client whose conversation is tagged `tag`."""
        while not self._tags.empty():
            served = self._tags.get()
            self._calls[served] = self._calls.get(served, 0) + 1
        return self._calls.get(tag, 0)

    def stop(self) -> None:
        self._stop.set()
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()


# --- server processes --------------------------------------------------------------------------


def clarion_env(*, database: str, model_url: str, **extra: str) -> dict[str, str]:
    """The environment of a Clarion Daphne under bench: its own database, the fake model, the
    extra model calls of the question features off, quiet logs."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-only"),
        "DATABASE_NAME": database,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "REDIS_URL": "",  # one process: the in-memory channel layer, as `manage.py up` runs
        "LLM_BASE_URL": model_url,
        "LLM_API_KEY": "sk-bench",
        "LLM_MODEL": "fake-model",
        "LLM_MAX_RETRIES": "0",
        "LLM_TIMEOUT_SECONDS": "60",
        "CLARIFICATION_ENABLED": "false",
        "QUESTION_DETECTOR_ENABLED": "false",
        "QUESTION_GUESSER_ENABLED": "false",
        "LOG_LEVEL": "WARNING",
        **extra,
    }


class ServerProcess:
    """A server subprocess listening on 127.0.0.1:`port`; output goes to `log_path`."""

    def __init__(self, *, command: list[str], env: dict[str, str], port: int, log_path: Path, name: str) -> None:
        self.port, self.log_path, self.name = port, log_path, name
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                self.log.close()
                raise SystemExit(f"{name} exited early ({self.proc.returncode}); see {log_path}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit(f"{name} did not listen within 90 s; see {log_path}") from None
                time.sleep(0.1)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # lets a profiled server write its stats
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


# --- Postgres connections, sampled ----------------------------------------------------------------


class ConnectionSampler:
    """Samples `pg_stat_activity` every `interval` seconds in a thread of its own: the largest
    number of connections each application name (Clarion names a process's `clarion-<pid>`) held
    on the watched databases since the last `reset`, and the largest total."""

    def __init__(self, conninfo: str, databases: list[str], interval: float = 0.02) -> None:
        import threading

        self.conninfo, self.databases, self.interval = conninfo, databases, interval
        self.by_name: dict[str, int] = {}
        self.total = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pg-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            while not self._stop.wait(self.interval):
                rows = conn.execute(
                    "SELECT coalesce(application_name, ''), count(*) FROM pg_stat_activity "
                    "WHERE datname = ANY(%s) AND pid <> pg_backend_pid() AND application_name <> %s GROUP BY 1",
                    [self.databases, f"clarion-{os.getpid()}"],  # not this process's own (its Django set-up)
                ).fetchall()
                for name, count in rows:
                    self.by_name[name] = max(self.by_name.get(name, 0), count)
                self.total = max(self.total, sum(count for _, count in rows))
                self.samples += 1

    def reset(self) -> None:
        self.by_name, self.total, self.samples = {}, 0, 0

    def largest(self, prefix: str) -> int:
        """The most connections one process whose application name starts with `prefix` held."""
        return max((count for name, count in self.by_name.items() if name.startswith(prefix)), default=0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


# --- the client driver -------------------------------------------------------------------------


@dataclass
class Client:
    tag: str
    url: str  # ws://127.0.0.1:<port>/...
    page_url: str = ""  # the page a browser loads before it opens the websocket, if any
    headers: dict[str, str] = field(default_factory=dict)
    csrf_token: str = ""
    question_id: str | None = None
    group_id: str | None = None
    question_ids: set[str] = field(default_factory=set)
    card_at: float | None = None
    answered_at: float | None = None
    receipt_at: float | None = None  # the receipt on the page: the answer's response or its frame, the first
    response_at: float | None = None  # the answer's HTTP response, when it is a request
    ws_receipt_at: float | None = None  # the receipt frame on the websocket
    text_at: float | None = None  # the first frame with reply text
    saved_at: float | None = None
    saved_frames: int = 0
    errors: list[str] = field(default_factory=list)
    http_errors: list[str] = field(default_factory=list)

    @property
    def final_text(self) -> str:
        return final_text(self.tag)


class Dialect(Protocol):
    """How one system is driven and how its frames look. `observe` reads one received frame and
    returns what it shows for this client: ("card", question id, group id), ("receipt",) (the
    receipt frame), ("text",), ("saved",), ("error", text). `load_page` does what a browser does before it opens
    the websocket (nothing, for a system without pages); `answer` sends the answer the way the
    system's own client does."""

    name: str

    def ask_frame(self, client: Client) -> str: ...

    def observe(self, client: Client, frame: str) -> list[tuple[str, ...]]: ...

    async def load_page(self, session: Session, client: Client) -> None: ...

    async def answer(self, session: Session, client: Client) -> None: ...


def record(client: Client, events: list[tuple[str, ...]], now: float) -> None:
    for event in events:
        kind = event[0]
        if kind == "card":
            client.question_ids.add(event[1])
            if client.question_id is None:
                client.question_id, client.group_id, client.card_at = event[1], event[2], now
        elif kind == "error":
            client.errors.append(event[1])
        elif client.answered_at is None:
            continue  # receipt/text/saved only count after this client's answer
        elif kind == "receipt":  # on the websocket: the page shows it when it comes
            client.ws_receipt_at = client.ws_receipt_at or now
            client.receipt_at = client.receipt_at or now
        elif kind == "text":
            client.text_at = client.text_at or now
        elif kind == "saved":
            client.saved_frames += 1
            client.saved_at = client.saved_at or now
            client.text_at = client.text_at or now  # a reply that arrived whole started then


@dataclass
class Measured:
    """One answer step on one system: everything the tables need."""

    clients: int
    rate: float  # answers per second, 0 = all at once
    pending: int = 0  # questions pending when the step started
    cards_missing: int = 0  # their question never came, so they could not answer
    saved_missing: int = 0
    doubled: int = 0
    answer_seconds: float = 0.0
    server_cpu_seconds: float = 0.0
    client_cpu_seconds: float = 0.0
    model_calls: int = 0  # of these clients, asking and answering: 2 each when nothing is lost or doubled
    stages: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    http_errors: list[str] = field(default_factory=list)
    memory: dict[str, float] = field(default_factory=dict)
    connect_retries: int = 0  # of the whole session, on its last step
    connections: int = 0  # the most Postgres connections one server process held during the step
    connections_total: int = 0  # the most held by all of the system's processes together

    @property
    def lost(self) -> int:
        return self.cards_missing + self.saved_missing

    @property
    def answered(self) -> int:
        return self.clients - self.lost

    @property
    def answers_per_second(self) -> float:
        return self.answered / self.answer_seconds if self.answer_seconds else 0.0

    @property
    def cpu_ms_per_answer(self) -> float:
        return 1000 * self.server_cpu_seconds / max(1, self.answered)


@dataclass
class Connection:
    client: Client
    ws: object
    reader: asyncio.Task | None = None
    carded: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)


class Session:
    """Clients against one system, driven step by step: `connect` them (each loads its page
    first, if the system has pages, then opens its websocket), let some `ask` (each sends its
    message and waits for its question), let some `answer` (all at once or paced, open loop) and
    measure that step. Questions asked and not yet answered stay pending across steps, which is
    how a paced step runs "with 500 pending". Every wait is bounded by `wait`."""

    def __init__(
        self,
        *,
        dialect: Dialect,
        servers: list[ServerProcess],
        model: ModelProcess,
        wait: float,
        label: str,
        sampler: ConnectionSampler | None = None,
        connection_prefix: str = "",
    ) -> None:
        import httpx

        self.dialect, self.servers, self.model, self.wait, self.label = dialect, servers, model, wait, label
        self.sampler, self.connection_prefix = sampler, connection_prefix
        self.connections: dict[str, Connection] = {}
        self.connect_retries = 0
        # One HTTP connection per client at most, as each client is a browser of its own.
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(wait), limits=httpx.Limits(max_connections=None, max_keepalive_connections=None)
        )

    def rss_kib(self) -> int:
        return sum(rss_kib(server.pid) for server in self.servers)

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(server.pid) for server in self.servers)

    @property
    def pending(self) -> int:
        return sum(1 for c in self.connections.values() if c.client.question_id and c.client.answered_at is None)

    async def connect(self, clients: list[Client], concurrency: int = 20) -> None:
        """Each client loads its page, then opens its websocket; `concurrency` at a time. A
        handshake the server drops (Daphne closes one its application has not accepted within
        5 s, which a saturated server can miss) is retried after a pause, as a browser
        reconnects; the retries are counted, and a client that never connects is lost."""
        from websockets.asyncio.client import connect

        slots = asyncio.Semaphore(concurrency)

        async def one(client: Client) -> None:
            origin = "http://" + client.url.split("://", 1)[1].split("/", 1)[0]
            async with slots:
                try:
                    await self.dialect.load_page(self, client)
                except Exception as exc:
                    client.http_errors.append(f"page: {type(exc).__name__}: {exc}")
                    return
            for attempt in range(5):
                try:
                    async with slots:
                        ws = await connect(client.url, origin=origin, additional_headers=client.headers, compression=None,
                                           open_timeout=60, close_timeout=5, ping_interval=None, max_queue=None)  # fmt: skip
                    break
                except (OSError, TimeoutError, InvalidHandshake) as exc:
                    self.connect_retries += 1
                    if attempt == 4:
                        client.errors.append(f"could not connect: {type(exc).__name__}: {exc}")
                        return
                    await asyncio.sleep(0.5 * 2**attempt)
            connection = Connection(client=client, ws=ws)
            connection.reader = asyncio.create_task(self._read(connection))
            self.connections[client.tag] = connection

        await asyncio.gather(*(one(c) for c in clients))

    async def send(self, client: Client, frame: str) -> None:
        await self.connections[client.tag].ws.send(frame)

    async def _read(self, connection: Connection) -> None:
        client = connection.client
        try:
            async for frame in connection.ws:
                text = frame if isinstance(frame, str) else frame.decode()
                record(client, self.dialect.observe(client, text), time.perf_counter())
                if client.question_id:
                    connection.carded.set()
                if client.saved_at:
                    connection.done.set()
        except Exception as exc:  # a dropped socket is a lost client, and says why
            client.errors.append(f"socket: {type(exc).__name__}: {exc}")

    async def _all(self, events: list[asyncio.Event], what: str) -> int:
        """Wait (bounded) for every event; returns how many never came."""
        try:
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), self.wait)
            return 0
        except TimeoutError:
            missing = sum(1 for e in events if not e.is_set())
            print(f"  {self.label}: {missing} of {len(events)} {what} missing after {self.wait:g} s", file=sys.stderr)
            return missing

    async def ask(self, clients: list[Client], *, concurrency: int = 25) -> float:
        """Each client sends its message (at most `concurrency` waiting for their question at
        once); returns the seconds until every question came (or the wait ran out)."""
        slots = asyncio.Semaphore(concurrency or len(clients))
        started = time.perf_counter()

        async def one(client: Client) -> None:
            connection = self.connections.get(client.tag)
            if connection is None:
                return  # never connected: lost
            async with slots:
                await connection.ws.send(self.dialect.ask_frame(client))
                try:
                    await asyncio.wait_for(connection.carded.wait(), self.wait)
                except TimeoutError:
                    pass  # counted as lost by the step that would have answered it

        await asyncio.gather(*(one(c) for c in clients))
        return time.perf_counter() - started

    async def answer(self, clients: list[Client], *, rate: float = 0.0) -> Measured:
        """The clients answer their question — all at once, or client i at i/rate s — and the
        step waits for every saved reply. Server CPU and Postgres connections are read over this
        step only."""
        ready = [c for c in clients if c.question_id and c.tag in self.connections]
        result = Measured(clients=len(clients), rate=rate, pending=self.pending, cards_missing=len(clients) - len(ready))
        if self.sampler:
            self.sampler.reset()
        cpu_before, client_cpu_before = self.cpu_seconds(), time.process_time()
        start = time.perf_counter() + 0.1

        async def one(i: int, client: Client) -> None:
            await asyncio.sleep(max(0.0, start + (i / rate if rate else 0.0) - time.perf_counter()))
            client.answered_at = time.perf_counter()
            try:
                await self.dialect.answer(self, client)
            except Exception as exc:  # no response at all is an HTTP error too
                client.http_errors.append(f"answer: {type(exc).__name__}: {exc}")

        await asyncio.gather(*(one(i, c) for i, c in enumerate(ready)))
        result.saved_missing = await self._all([self.connections[c.tag].done for c in ready], "saved replies")
        last_saved = max((c.saved_at for c in ready if c.saved_at), default=time.perf_counter())
        result.answer_seconds = last_saved - start
        result.server_cpu_seconds = self.cpu_seconds() - cpu_before
        result.client_cpu_seconds = time.process_time() - client_cpu_before
        await asyncio.sleep(1.0)  # a doubled continuation would arrive now
        result.model_calls = sum(self.model.calls(c.tag) for c in clients)
        if self.sampler:
            result.connections = self.sampler.largest(self.connection_prefix)
            result.connections_total = self.sampler.total

        def ms(attr: str) -> list[float]:
            return [(getattr(c, attr) - c.answered_at) * 1000 for c in ready if c.answered_at and getattr(c, attr)]

        result.stages = {name: ms(f"{name}_at") for name in ("receipt", "response", "ws_receipt", "text", "saved")}
        result.doubled = sum(1 for c in clients if c.saved_frames > 1 or len(c.question_ids) > 1)
        result.errors = [e for c in clients for e in c.errors]
        result.http_errors = [e for c in clients for e in c.http_errors]
        return result

    async def close(self) -> int:
        """Disconnect everyone; returns how many clients saw a doubled reply or question by now."""
        doubled = sum(1 for c in self.connections.values() if c.client.saved_frames > 1 or len(c.client.question_ids) > 1)

        async def one(connection: Connection) -> None:
            if connection.reader:
                connection.reader.cancel()
            await connection.ws.close()

        await asyncio.gather(*(one(c) for c in self.connections.values()), return_exceptions=True)
        self.connections = {}
        await self.http.aclose()
        return doubled
