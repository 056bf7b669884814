"""Questions are durable and resolved exactly once — across restarts, workers, tabs and deadlines.

Everything here runs real Daphne processes (`python -m daphne`, as `manage.py up` serves Clarion)
on the test database, real websocket clients (`websockets`) and real HTTP (`http.client`), with a
fake OpenAI-compatible model in this process that every server talks to:

- a question survives a SIGKILL of its server: the card comes back with its stored deadline, and
  the answer, sent to the new process, continues the conversation (also when the process died in
  the middle of that continuation);
- two workers share Postgres and Redis (`REDIS_URL`): asked through A, answered through B, the
  continuation streams to the tab on A;
- exactly once: a double click, two tabs, an answer racing the deadline — one resolution, one
  tool result, one continuation; the loser gets the resolved card (409) or a no-op.

The model is one callable for every request, keyed by a tag in the conversation's first message:
it asks with `ask_user` first and answers with text once the last message is the tool result.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import http.client
import http.cookies
import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from urllib.parse import urlencode

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection
from django.utils import timezone
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from chat import services
from chat.models import Message
from questions.models import PendingQuestion
from tests.e2e.conftest import ROOT, DaphneServer, free_port, wait_for_port
from tests.fake_openai import FakeOpenAI, Reply
from tests.processes import daphne_command, stop_process
from tests.websocket import session_cookie_for

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION_ID = re.compile(r'class="question-pending" id="question-([0-9a-f-]{36})"')
OPTIONS = ["Atlas", "Harbor", "Home"]


# --- Redis: the one in the environment, the usual local one, or a private one ---------------


def redis_reachable(url: str) -> bool:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError, ValueError):
        return False
    finally:
        client.close()


class PrivateRedis:
    """`redis-server` (Debian's redis-server package) on a free loopback port, nothing persisted."""

    def __init__(self, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "No Redis is reachable (REDIS_URL unset or down, nothing on 127.0.0.1:6379) and there is no "
                "`redis-server` binary to start one: install it with `apt-get install -y redis-server` "
                "(.ci/run does), or point REDIS_URL at a running server."
            )
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        (ROOT / ".data").mkdir(exist_ok=True)
        self.log_path = ROOT / ".data" / f"redis-test-{self.port}.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while not redis_reachable(self.url):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"redis-server did not start on port {self.port}: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


@pytest.fixture(scope="session")
def redis_url():
    """REDIS_URL if set and reachable, else 127.0.0.1:6379 if reachable, else a private redis-server.
    Never skips: with no Redis at all it fails, saying how to get one."""
    for url in (os.environ.get("REDIS_URL", ""), "redis://127.0.0.1:6379/0"):
        if url and redis_reachable(url):
            yield url
            return
    private = PrivateRedis()
    yield private.url
    private.stop()


@pytest.fixture(scope="session")
def channels_prefix(redis_url):
    """Groups of this run only: parallel runs on one Redis must not hear each other's turns."""
    prefix = f"clarion-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield prefix
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def test_a_private_redis_server_starts_when_none_is_reachable():
    """The fallback path of `redis_url`, exercised even on machines where a Redis is running."""
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server binary here; the redis_url fixture uses a reachable Redis instead")
    private = PrivateRedis()
    try:
        assert redis_reachable(private.url)
    finally:
        private.stop()
    assert not redis_reachable(private.url)


# --- the model: one callable for every request, every server ---------------------------------


@dataclasses.dataclass
class Plan:
    timeout: float | None = 300  # the ask_user timeout; None → the admin's ask timeout (AIConfig, set by the test)
    continuation_delays: list = dataclasses.field(default_factory=list)  # per continuation request


class Model:
    """Asks first (ask_user, tool call id `call-<tag>`); after the tool result, answers
    "Final answer for <tag>: <status> <answer>." The tag comes from the first user message."""

    def __init__(self) -> None:
        self.plans: dict[str, Plan] = {}
        self.fake = FakeOpenAI(default=self.reply).start()

    def new_tag(self, **plan) -> str:
        tag = f"tag{uuid.uuid4().hex[:10]}"
        self.plans[tag] = Plan(**plan)
        return tag

    @staticmethod
    def tag_of(body: dict) -> str:
        first = next(m for m in body["messages"] if m["role"] == "user")
        return first["content"].split(":", 1)[0]

    def reply(self, body: dict) -> Reply:
        tag = self.tag_of(body)
        plan = self.plans[tag]
        last = body["messages"][-1]
        if last["role"] == "tool":
            result = json.loads(last["content"])
            if "answers" not in result:  # a tool error (e.g. a limit): say so, the test will show it
                return Reply.text(f"Tool error for {tag}: {result}")
            (row,) = result["answers"]
            delay = plan.continuation_delays.pop(0) if plan.continuation_delays else 0.0
            return Reply.text(f"Final answer for {tag}: {row['status']} {', '.join(row['answers']) or 'nothing'}.", delay=delay)
        question = {"question": f"Which project for {tag}?", "header": "Project", "options": [{"label": o} for o in OPTIONS]}
        if plan.timeout is not None:
            question["timeout_seconds"] = plan.timeout
        return Reply.tool_call("ask_user", {"questions": [question]}, id=f"call-{tag}")

    def requests_for(self, tag: str) -> list[dict]:
        return [r for r in self.fake.requests if self.tag_of(r) == tag]

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "LLM_BASE_URL": self.fake.base_url,
            "LLM_API_KEY": "sk-test-not-a-real-key",
            "LLM_MODEL": "fake-model",
            "LLM_TIMEOUT_SECONDS": "60",
            "LLM_MAX_RETRIES": "0",
            "CLARIFICATION_ENABLED": "false",
            "QUESTION_DETECTOR_ENABLED": "false",
            "QUESTION_GUESSER_ENABLED": "false",
            "QUESTIONS_MIN_INTERVAL_SECONDS": "0",
            "REDIS_URL": "",  # one process unless a test says otherwise
            "LOG_LEVEL": "WARNING",
            **extra,
        }


def final_text(tag: str, status: str, answer: str) -> str:
    return f"Final answer for {tag}: {status} {answer}."


@pytest.fixture(scope="module")
def model():
    m = Model()
    yield m
    m.fake.stop()


@pytest.fixture(scope="module")
def test_database(django_db_setup, django_db_blocker) -> str:
    with django_db_blocker.unblock():
        return connection.settings_dict["NAME"]


class Server(DaphneServer):
    """tests/e2e's DaphneServer, logging to .data/daphne-durability-<port>.log (other runs share .data)."""

    def start(self) -> "Server":
        self.log_path = ROOT / ".data" / f"daphne-durability-{self.port}.log"
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            daphne_command(self.port),
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for_port(self.port, self.proc)
        return self


def start_server(database: str, env: dict[str, str], *, port: int | None = None) -> Server:
    (ROOT / ".data").mkdir(exist_ok=True)
    return Server(database_name=database, extra_env=env, port=port).start()


def kill(server: DaphneServer) -> None:
    """SIGKILL: no shutdown code runs, nothing is flushed — a crash, an OOM kill, a pulled plug."""
    server.proc.kill()
    server.proc.wait(10)
    server.stop()  # closes the log


# --- clients: a browser tab's websocket, and its HTTP requests --------------------------------


class Tab:
    """One open tab of a conversation: a real websocket with the user's session cookie."""

    def __init__(self, server: DaphneServer, conversation_id, cookie: str) -> None:
        self.url = f"ws://127.0.0.1:{server.port}/ws/conversations/{conversation_id}/"
        self.origin = server.url
        self.cookie = cookie
        self.frames: list[str] = []
        self.closed = False

    async def __aenter__(self) -> "Tab":
        self._arrived = asyncio.Event()
        self.ws = await ws_connect(
            self.url,
            origin=self.origin,
            additional_headers={"Cookie": f"{settings.SESSION_COOKIE_NAME}={self.cookie}"},
            compression=None,
            open_timeout=15,
            close_timeout=2,
        )
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()
        await self._reader

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                self.frames.append(frame)
                self._arrived.set()
        except ConnectionClosed:
            pass
        finally:
            self.closed = True
            self._arrived.set()

    async def send(self, **fields) -> None:
        await self.ws.send(json.dumps({**fields, "HEADERS": {"HX-Request": "true"}}))

    async def send_message(self, text: str) -> None:
        await self.send(action="send_message", message=text)

    def matching(self, needle: str) -> list[str]:
        return [f for f in self.frames if needle in f]

    def replies(self, text: str) -> list[str]:
        """Saved messages (the frame that replaces a stream) containing `text`."""
        return [f for f in self.matching(text) if 'id="message-' in f]

    async def wait_for_reply(self, text: str, *, timeout: float = 20) -> str:
        """The continuation as a tab sees it: streamed text, then the saved message replacing it."""
        await self.wait_for(text, timeout=timeout)
        return await self.wait_for(text, timeout=timeout, saved=True)

    async def wait_for(self, needle: str, *, timeout: float = 20, saved: bool = False) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if found := (self.replies(needle) if saved else self.matching(needle)):
                return found[0]
            if self.closed:
                raise AssertionError(
                    f"{self.url}: socket closed ({self.ws.close_code} {self.ws.close_reason!r}) before {needle!r} arrived; "
                    f"last frames: {self.frames[-3:]}"
                )
            if loop.time() > deadline:
                raise AssertionError(f"{needle!r} did not arrive within {timeout} s; last frames: {self.frames[-3:]}")
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), deadline - loop.time())
            except TimeoutError:
                pass

    async def question_id(self) -> uuid.UUID:
        return uuid.UUID(QUESTION_ID.search(await self.wait_for('class="question-pending"'))[1])


class Browser:
    """The HTTP side of a logged-in browser: its cookies, CSRF token and htmx headers."""

    def __init__(self, cookie: str) -> None:
        self.cookies = {settings.SESSION_COOKIE_NAME: cookie}

    def request(self, server: DaphneServer, method: str, path: str, data: dict | None = None) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), "HX-Request": "true"}
        body = None
        if data is not None:
            body = urlencode(data)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["X-CSRFToken"] = self.cookies.get(settings.CSRF_COOKIE_NAME, "")
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode()
        finally:
            conn.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in http.cookies.SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response.status, text

    def page(self, server: DaphneServer, conversation_id) -> str:
        status, html = self.request(server, "GET", f"/chat/{conversation_id}/")
        assert status == 200, html[:500]
        assert settings.CSRF_COOKIE_NAME in self.cookies  # the page hands out the token htmx sends
        return html

    def answer(self, server: DaphneServer, question_id, option: int) -> tuple[int, str]:
        return self.request(server, "POST", f"/chat/questions/{question_id}/answer/", {"option": str(option)})


# --- the database, as the servers left it ------------------------------------------------------


@database_sync_to_async
def new_conversation(user):
    return services.start_conversation(user=user)


@database_sync_to_async
def question(question_id) -> PendingQuestion:
    return PendingQuestion.objects.get(pk=question_id)


@database_sync_to_async
def outcome(conversation_id, tag: str) -> dict:
    messages = Message.objects.filter(conversation_id=conversation_id)
    return {
        "questions": list(PendingQuestion.objects.filter(conversation_id=conversation_id).values_list("status", "resolved_via", "answer")),
        "tool_results": list(messages.filter(role="tool", tool_call_id=f"call-{tag}").values_list("content", flat=True)),
        "finals": list(messages.filter(role="assistant", tool_calls=[]).values_list("content", flat=True)),
        "errors": list(messages.filter(role="error").values_list("content", flat=True)),
    }


async def eventually(check, *, timeout: float = 20, interval: float = 0.05):
    """Poll an async check until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        if result := await check():
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {check}")
        await asyncio.sleep(interval)


async def finished(conversation_id, tag: str, *, timeout: float = 20) -> dict:
    """The conversation's state once its continuation wrote a final reply (or an error)."""

    async def done():
        state = await outcome(conversation_id, tag)
        return state if (state["finals"] or state["errors"]) else None

    return await eventually(done, timeout=timeout)


COMPOSER_ERROR = re.compile(r'<div id="composer-error"[^>]*>([^<]*)</div>')


def composer_errors(tab: Tab) -> list[str]:
    """Errors the tab was shown under the chat box (an empty one clears it)."""
    return [e for f in tab.frames for e in COMPOSER_ERROR.findall(f) if e.strip()]


async def requested(model: Model, tag: str, count: int) -> bool:
    return len(model.requests_for(tag)) >= count


def assert_exactly_once(state: dict, model: Model, tag: str, *, status: str, answer: str) -> None:
    ((question_status, via, stored_answer),) = state["questions"]
    assert question_status == status and stored_answer == answer
    assert len(state["tool_results"]) == 1, state["tool_results"]
    (result,) = json.loads(state["tool_results"][0])["answers"]
    assert result["status"] == status and result["answers"] == ([answer] if answer else [])
    assert state["finals"] == [final_text(tag, status, answer or "nothing")] and state["errors"] == []
    # One ask, one continuation: the model was called exactly twice for this conversation.
    assert len(model.requests_for(tag)) == 2


# --- 1. a restart keeps the question ----------------------------------------------------------


async def test_a_killed_server_comes_back_with_the_card_its_deadline_and_a_working_answer(alice, model, test_database):
    tag = model.new_tag(timeout=60)
    conversation = await new_conversation(alice)
    cookie = await session_cookie_for(alice)
    server = start_server(test_database, model.env())
    try:
        async with Tab(server, conversation.pk, cookie) as tab:
            await tab.send_message(f"{tag}: file my new task")
            question_id = await tab.question_id()
            asked = await question(question_id)
            assert asked.status == "pending" and asked.timeout_seconds == 60

            kill(server)
            await asyncio.sleep(1.5)  # down for a while: the stored deadline keeps running
            server = start_server(test_database, model.env(), port=server.port)

        browser = Browser(cookie)
        before = timezone.now()
        html = await asyncio.to_thread(browser.page, server, conversation.pk)
        after = timezone.now()
        card = re.search(rf'data-question="{question_id}"\s+data-remaining="([0-9.]+)" data-total="([0-9.]+)"', html)
        assert card, "the pending card is not on the reloaded page"
        remaining, total = float(card[1]), float(card[2])
        assert total == 60
        assert remaining < 60 - 1.5, "a restart must not restart the countdown"
        # The page was rendered some time during the request (a fresh process's first one is slow).
        latest, earliest = ((asked.deadline - t).total_seconds() for t in (before, after))
        assert earliest - 1.0 < remaining < latest + 1.0, (remaining, earliest, latest)

        # Answer through the new process; its continuation reaches a tab open on it.
        async with Tab(server, conversation.pk, cookie) as tab:
            status, body = await asyncio.to_thread(browser.answer, server, question_id, 1)
            assert status == 200 and 'class="receipt-answer">Harbor<' in body
            await tab.wait_for(final_text(tag, "answered", "Harbor"))
        assert_exactly_once(await finished(conversation.pk, tag), model, tag, status="answered", answer="Harbor")
        assert model.requests_for(tag)[1]["messages"][-1]["tool_call_id"] == f"call-{tag}"
    finally:
        server.stop()


async def test_a_server_killed_during_the_continuation_finishes_it_after_the_restart(alice, model, test_database):
    """The answer was committed (with its tool result) but the process died while the model was
    answering: the next process picks the turn up, and the reply is written once."""
    tag = model.new_tag(timeout=60, continuation_delays=[30.0, 0.0])
    conversation = await new_conversation(alice)
    cookie = await session_cookie_for(alice)
    server = start_server(test_database, model.env())
    try:
        async with Tab(server, conversation.pk, cookie) as tab:
            await tab.send_message(f"{tag}: file my new task")
            question_id = await tab.question_id()
            await tab.send(action="answer", question_id=str(question_id), option=2)
            await tab.wait_for('class="receipt-answer">Home<')
            await eventually(lambda: requested(model, tag, 2))  # the continuation is in flight
            kill(server)
        state = await outcome(conversation.pk, tag)
        assert [s for s, *_ in state["questions"]] == ["answered"] and len(state["tool_results"]) == 1 and state["finals"] == []

        server = start_server(test_database, model.env(), port=server.port)
        async with Tab(server, conversation.pk, cookie) as tab:  # a tab coming back resumes the turn
            await tab.wait_for(final_text(tag, "answered", "Home"))
        state = await finished(conversation.pk, tag)
        assert len(state["tool_results"]) == 1 and state["finals"] == [final_text(tag, "answered", "Home")]
        assert len(model.requests_for(tag)) == 3  # ask, the continuation that died with its process, the one that finished
    finally:
        server.stop()


# Regression (fixed): a process's deadline sweep starts only with its first websocket (or a card
# it shows); after a restart, a question whose timer died with the old process stays pending past
# its deadline — and its conversation waits — until some tab opens a websocket on a live process.
# HTTP alone never starts it.


@pytest.mark.parametrize("after_restart", ["a tab reconnects", "only HTTP requests"])
async def test_after_a_restart_the_sweep_expires_a_question_whose_timer_died(alice, model, test_database, after_restart):
    await set_ask_timeout(8)  # long enough to outlast the restart
    tag = model.new_tag(timeout=None)
    conversation = await new_conversation(alice)
    cookie = await session_cookie_for(alice)
    env = model.env(QUESTION_SWEEP_SECONDS="0.2")
    server = start_server(test_database, env)
    try:
        async with Tab(server, conversation.pk, cookie) as tab:
            await tab.send_message(f"{tag}: file my new task")
            question_id = await tab.question_id()
        kill(server)  # the timer armed for this question dies with the process
        server = start_server(test_database, env, port=server.port)
        asked = await question(question_id)
        async with contextlib.AsyncExitStack() as stack:
            # The new process serves a page load; a websocket only if a tab comes back.
            if after_restart == "a tab reconnects":
                tab = await stack.enter_async_context(Tab(server, conversation.pk, cookie))
                assert timezone.now() < asked.deadline, "the restart outlasted the deadline; the tab came back too late"
            await asyncio.to_thread(Browser(cookie).page, server, conversation.pk)
            await asyncio.sleep(max(0.0, (asked.deadline - timezone.now()).total_seconds()) + 1.0)
            assert (await question(question_id)).status == "timed_out", "still pending a second after its deadline"
            state = await finished(conversation.pk, tag)
            if after_restart == "a tab reconnects":
                await tab.wait_for(final_text(tag, "timed_out", "nothing"))
        assert_exactly_once(state, model, tag, status="timed_out", answer="")
    finally:
        server.stop()


# Regression (fixed): every running turn holds its own Postgres connection for the advisory lock
# (chat/locks.py), unbounded; under load (bench/questions_ws.py, 100+ answers at once) connecting
# fails with 'FATAL: sorry, too many clients already', the exception escapes run_pending_turns
# ('Task exception was never retrieved') and the conversation silently never continues: no reply,
# no error message, no Retry.


async def test_a_turn_whose_lock_connection_is_refused_ends_with_a_visible_error(alice, monkeypatch):
    """In process: the connection the turn lock needs is refused, as Postgres does past max_connections."""
    import psycopg

    from chat import agent, locks

    async def refused():
        raise psycopg.OperationalError("connection failed: FATAL:  sorry, too many clients already")

    conversation = await new_conversation(alice)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="hello?")
    monkeypatch.setattr(locks, "_pool", refused)
    (outcome_,) = await asyncio.gather(agent.start_turn(conversation.pk), return_exceptions=True)
    roles = await database_sync_to_async(lambda: list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)))()
    assert roles == ["user", "error"], f"the turn ended with {outcome_!r} and left {roles}"


# --- 2. two workers ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workers(model, test_database, redis_url, channels_prefix):
    """Two Daphne processes sharing the test database and one Redis channel layer. Questions
    asked without a timeout expire after the admin's ask timeout, set per test (6 s for the
    deadline races: long enough for the pending card to reach its tab first on a loaded machine).
    The sweep runs every 0.3 s."""
    env = model.env(REDIS_URL=redis_url, CHANNELS_PREFIX=channels_prefix, QUESTION_SWEEP_SECONDS="0.3")
    a = start_server(test_database, env)
    try:
        b = start_server(test_database, env)
    except Exception:
        a.stop()
        raise
    yield a, b
    a.stop()
    b.stop()


@pytest.mark.parametrize("via", ["http", "websocket"])
async def test_asked_on_worker_a_answered_on_worker_b_streams_to_the_tab_on_a(alice, model, workers, via):
    a, b = workers
    tag = model.new_tag()
    conversation = await new_conversation(alice)
    cookie = await session_cookie_for(alice)
    async with Tab(a, conversation.pk, cookie) as tab_a:
        await tab_a.send_message(f"{tag}: file my new task")
        question_id = await tab_a.question_id()
        if via == "http":
            browser = Browser(cookie)
            await asyncio.to_thread(browser.page, b, conversation.pk)
            status, body = await asyncio.to_thread(browser.answer, b, question_id, 0)
            assert status == 200 and 'class="receipt-answer">Atlas<' in body
        else:
            async with Tab(b, conversation.pk, cookie) as tab_b:
                await tab_b.send(action="answer", question_id=str(question_id), option=0)
                await tab_b.wait_for(final_text(tag, "answered", "Atlas"))
        # B resolved and ran the continuation; A's tab hears all of it through Redis.
        await tab_a.wait_for('class="receipt-answer">Atlas<')
        await tab_a.wait_for_reply(final_text(tag, "answered", "Atlas"))
        state = await finished(conversation.pk, tag)
        await asyncio.sleep(0.3)
        assert len(tab_a.replies(final_text(tag, "answered", "Atlas"))) == 1  # one continuation, shown once
    assert_exactly_once(state, model, tag, status="answered", answer="Atlas")


async def test_a_logout_on_worker_a_ends_the_session_on_worker_b_at_once(alice, workers):
    """Sessions are read through a cache; with several workers it is the shared one in Redis, so
    a session B has read (and cached) ends on B too when the person logs out on A."""
    a, b = workers
    conversation = await new_conversation(alice)
    cookie = await session_cookie_for(alice)
    browser = Browser(cookie)
    await asyncio.to_thread(browser.page, b, conversation.pk)
    await asyncio.to_thread(browser.page, a, conversation.pk)
    status, _ = await asyncio.to_thread(browser.request, a, "POST", "/logout/", {})
    assert status == 302
    stale = Browser(cookie)  # the cookie as it was before the logout (another tab, a copy)
    status, _ = await asyncio.to_thread(stale.request, b, "GET", f"/chat/{conversation.pk}/")
    assert status == 302  # to the login page, not the conversation


# Regression (fixed): with channels_redis's list layer, redis-py 8's default 5 s socket read
# timeout equalled the layer's 5 s blocking read, so an idle tab's receive raised TimeoutError and
# Daphne closed its websocket with 1011; the continuation never reached that tab. The
# publish/subscribe layer used now has no blocking read; this still guards an idle tab.


async def test_a_tab_idle_longer_than_the_layers_blocking_read_still_gets_the_continuation(alice, model, workers):
    """A person takes their time: the tab on A sits idle for 7 s (longer than redis-py's 5 s
    default read timeout) before the answer arrives through B."""
    a, b = workers
    tag = model.new_tag()
    conversation = await new_conversation(alice)
    cookie = await session_cookie_for(alice)
    async with Tab(a, conversation.pk, cookie) as tab_a:
        await tab_a.send_message(f"{tag}: file my new task")
        question_id = await tab_a.question_id()
        await asyncio.sleep(7)
        assert not tab_a.closed, f"the idle tab was closed: {tab_a.ws.close_code} {tab_a.ws.close_reason!r}"
        browser = Browser(cookie)
        await asyncio.to_thread(browser.page, b, conversation.pk)
        status, _ = await asyncio.to_thread(browser.answer, b, question_id, 0)
        assert status == 200
        await tab_a.wait_for_reply(final_text(tag, "answered", "Atlas"))


# --- 3. exactly once ----------------------------------------------------------------------------


@dataclasses.dataclass
class Asked:
    tag: str
    conversation: object
    question_id: uuid.UUID
    cookie: str
    tab: Tab  # the tab that asked, still open: it watches the rest


async def users(make_user, count: int, per_user: int = 5) -> list[str]:
    """Session cookies of fresh users, one per `per_user` conversations: at most 10 questions may be
    pending per user (QUESTIONS_MAX_PENDING_PER_USER)."""
    cookies = []
    for _ in range(-(-count // per_user)):
        user = await database_sync_to_async(make_user)(f"user-{uuid.uuid4().hex[:8]}")
        cookies += [(user, await session_cookie_for(user))] * per_user
    return cookies[:count]


async def set_ask_timeout(seconds: float) -> None:
    """Questions asked without their own timeout wait this long (the admin's setting, read per turn)."""
    from knowledge.models import AIConfig

    await AIConfig.objects.aupdate_or_create(singleton=True, defaults={"ask_timeout_seconds": seconds})


async def ask(server, model, user, cookie, **plan) -> Asked:
    """A new conversation on `server` whose first message made the model ask."""
    tag = model.new_tag(**plan)
    conversation = await new_conversation(user)
    tab = await Tab(server, conversation.pk, cookie).__aenter__()
    await tab.send_message(f"{tag}: file my new task")
    return Asked(tag, conversation, await tab.question_id(), cookie, tab)


async def close_all(tabs) -> None:
    await asyncio.gather(*(tab.__aexit__(None, None, None) for tab in tabs))


def at_once(*calls):
    """Run blocking calls in threads released by one barrier: as close to simultaneous as it gets."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(i, call):
        barrier.wait()
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.parametrize("servers", ["same worker", "two workers"])
async def test_a_double_click_resolves_once_and_the_second_post_gets_the_resolved_card(make_user, model, workers, servers):
    a, b = workers
    first, second = (a, a) if servers == "same worker" else (a, b)
    asked = [await ask(a, model, user, cookie) for user, cookie in await users(make_user, 5)]
    try:
        for q in asked:
            browser = Browser(q.cookie)
            await asyncio.to_thread(browser.page, a, q.conversation.pk)
            responses = await asyncio.to_thread(
                at_once,
                functools.partial(browser.answer, first, q.question_id, 1),
                functools.partial(browser.answer, second, q.question_id, 1),
            )
            assert sorted(status for status, _ in responses) == [200, 409], [(s, body[:300]) for s, body in responses]
            for _, body in responses:  # both get the card, as a receipt; neither an error page
                assert 'class="question-receipt answered"' in body and 'class="receipt-answer">Harbor<' in body
                assert "question-pending" not in body
        for q in asked:
            await q.tab.wait_for_reply(final_text(q.tag, "answered", "Harbor"))
            assert_exactly_once(await finished(q.conversation.pk, q.tag), model, q.tag, status="answered", answer="Harbor")
        await asyncio.sleep(0.5)  # nothing late: no second continuation turns up
        for q in asked:
            assert_exactly_once(await outcome(q.conversation.pk, q.tag), model, q.tag, status="answered", answer="Harbor")
            assert len(q.tab.replies(final_text(q.tag, "answered", "Harbor"))) == 1
    finally:
        await close_all(q.tab for q in asked)


async def test_two_tabs_answering_at_once_resolve_once_and_both_show_the_winner(make_user, model, workers):
    a, b = workers
    asked = [await ask(a, model, user, cookie) for user, cookie in await users(make_user, 5)]
    others = [await Tab(b, q.conversation.pk, q.cookie).__aenter__() for q in asked]
    try:
        for q, other in zip(asked, others, strict=True):
            await asyncio.gather(
                q.tab.send(action="answer", question_id=str(q.question_id), option=0),
                other.send(action="answer", question_id=str(q.question_id), option=1),
            )
            state = await finished(q.conversation.pk, q.tag)
            ((status, _, winner),) = state["questions"]
            for tab in (q.tab, other):
                await tab.wait_for(f'class="receipt-answer">{winner}<')
                await tab.wait_for_reply(final_text(q.tag, "answered", winner))
        await asyncio.sleep(0.5)
        winners = []
        for q, other in zip(asked, others, strict=True):
            state = await outcome(q.conversation.pk, q.tag)
            ((status, _, winner),) = state["questions"]
            winners.append(winner)
            assert_exactly_once(state, model, q.tag, status="answered", answer=winner)
            for tab in (q.tab, other):
                # The loser's frame was a no-op: no error under the chat box, no second reply.
                assert composer_errors(tab) == []
                assert len(tab.replies(final_text(q.tag, "answered", winner))) == 1
    finally:
        await close_all([*(q.tab for q in asked), *others])


async def test_an_answer_racing_the_deadline_resolves_once_either_way(make_user, model, workers):
    """Questions with a 6 s deadline, answered from 0.8 s before to 0.8 s after the expiry timer
    fires, most of them within 0.1 s of it — by HTTP to the worker whose timer expires it, by HTTP
    to the other worker, or by a websocket frame to the other worker. Around the deadline the
    answer and the expiry (timer or either worker's sweep) really race; far from it, each side
    wins for sure, so both outcomes must show up."""
    a, b = workers
    await set_ask_timeout(6)
    offsets = [-0.8, -0.5, -0.3, *(-0.1 + 0.02 * i for i in range(16)), 0.3, 0.4, 0.5, 0.6, 0.8]
    ways = ["http A", "http B", "websocket B"]
    people = await users(make_user, len(offsets))
    tabs = []

    async def race(i):
        await asyncio.sleep(0.1 * i)  # a few at a time: each card must arrive well before its deadline
        way, offset = ways[i % 3], offsets[i]
        q = await ask(a, model, *people[i], timeout=None)
        tabs.append(q.tab)
        deadline = (await question(q.question_id)).deadline.timestamp() + 0.05  # + the timer's slack
        browser = Browser(q.cookie)
        if way == "websocket B":
            other = await Tab(b, q.conversation.pk, q.cookie).__aenter__()
            tabs.append(other)
        else:
            await asyncio.to_thread(browser.page, b, q.conversation.pk)  # the CSRF cookie
        late = time.time() - (deadline + offset)
        await asyncio.sleep(max(0.0, -late))
        if way == "websocket B":
            await other.send(action="answer", question_id=str(q.question_id), option=2)
            response = None
        else:
            response = await asyncio.to_thread(browser.answer, a if way == "http A" else b, q.question_id, 2)
        state = await finished(q.conversation.pk, q.tag)
        ((status, via, answer),) = state["questions"]
        await q.tab.wait_for_reply("Final answer for " + q.tag)
        if response is not None:
            code, body = response
            assert (code, status) in ((200, "answered"), (409, "timed_out")), (code, status, body[:300])
            assert ('class="question-receipt answered"' if status == "answered" else 'class="question-receipt timed-out"') in body
        else:
            await other.wait_for_reply("Final answer for " + q.tag)
            assert composer_errors(other) == []
        assert (status, via) in (("answered", "option"), ("timed_out", "timeout_none"))
        assert_exactly_once(state, model, q.tag, status=status, answer=answer)
        return q, offset, max(0.0, late), status

    try:
        results = await asyncio.gather(*(race(i) for i in range(len(offsets))))
        await asyncio.sleep(0.5)
        for q, *_ in results:  # still exactly once after the dust settles
            state = await outcome(q.conversation.pk, q.tag)
            ((status, _, answer),) = state["questions"]
            assert_exactly_once(state, model, q.tag, status=status, answer=answer)
            assert len(q.tab.replies("Final answer for " + q.tag)) == 1
        summary = sorted((round(offset, 3), round(late, 3), status) for _, offset, late, status in results)
        print("deadline race (offset from the expiry timer s, answer late by s, outcome):", summary)
        assert {status for *_, status in summary} == {"answered", "timed_out"}, f"the race was not exercised: {summary}"
    finally:
        await close_all(tabs)


# --- 4. Redis out of reach -----------------------------------------------------------------------


async def test_while_redis_is_down_pages_and_answers_get_a_503_and_after_it_returns_they_work(alice, model, test_database):
    """With several workers, sessions and live updates go through Redis. While it is out of reach
    a page load or a card's answer is a clear 503 (Retry-After, nothing written, the question
    still answerable), not a server error; once it is back the same requests work, no restart."""
    redis_server = PrivateRedis()
    server = start_server(test_database, model.env(REDIS_URL=redis_server.url, CHANNELS_PREFIX=f"outage-{uuid.uuid4().hex[:8]}"))
    try:
        cookie = await session_cookie_for(alice)
        asked = await ask(server, model, alice, cookie)
        try:  # the tab that asked stays open through the outage
            browser = Browser(cookie)
            await asyncio.to_thread(browser.page, server, asked.conversation.pk)
            redis_server.stop()

            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            conn.request("GET", f"/chat/{asked.conversation.pk}/", headers={"Cookie": f"{settings.SESSION_COOKIE_NAME}={cookie}"})
            page = conn.getresponse()
            html = page.read().decode()
            conn.close()
            assert (page.status, page.headers["Retry-After"]) == (503, "5"), html[:500]
            assert "Try again in a moment" in html and "cannot reach Redis" in html
            status, text = await asyncio.to_thread(browser.answer, server, asked.question_id, 0)
            assert status == 503 and "cannot reach Redis" in text  # the text htmx shows on the card
            assert (await question(asked.question_id)).status == PendingQuestion.Status.PENDING

            redis_server = PrivateRedis(port=redis_server.port)  # back, empty: nothing cached survived
            async with Tab(server, asked.conversation.pk, cookie) as tab:
                await asyncio.to_thread(browser.page, server, asked.conversation.pk)
                status, _ = await asyncio.to_thread(browser.answer, server, asked.question_id, 0)
                assert status == 200
                await tab.wait_for("state-resolved")  # the receipt reached the tab: the layer reconnected
                await tab.wait_for_reply(final_text(asked.tag, "answered", "Atlas"))
            # The tab open all along hears the conversation again: its subscriptions were restored.
            await asked.tab.wait_for_reply(final_text(asked.tag, "answered", "Atlas"))
        finally:
            await asked.tab.__aexit__(None, None, None)
    finally:
        server.stop()
        redis_server.stop()
