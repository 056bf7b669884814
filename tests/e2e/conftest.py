"""A real Daphne server in a subprocess on the test database, and a real headless Chromium."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import ClassVar

import psycopg
import pytest
from django.db import connection

from tests.processes import daphne_command, stop_process

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
# Flags for a sandboxed CI machine with no network but loopback (see docs/testing.md).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, *, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Daphne exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"Daphne did not listen on {port} within {timeout}s")


def metrics_dir_of_this_run() -> Path:
    """The prometheus-client multiprocess directory every test server of this pytest run shares
    (as the workers of one deployment do): fresh at the first server, removed at exit."""
    global _metrics_dir
    if _metrics_dir is None:
        _metrics_dir = ROOT / ".data" / "metrics" / f"test-run-{os.getpid()}"
        shutil.rmtree(_metrics_dir, ignore_errors=True)
        _metrics_dir.mkdir(parents=True)
        atexit.register(shutil.rmtree, _metrics_dir, True)
    return _metrics_dir


_metrics_dir: Path | None = None


class DaphneServer:
    running: ClassVar[set["DaphneServer"]] = set()

    def __init__(self, *, database_name: str, extra_env: dict[str, str] | None = None, port: int | None = None):
        self.port = port or free_port()
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "project.settings_test",
            "DATABASE_NAME": database_name,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir_of_this_run()),
            **(extra_env or {}),
        }
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "DaphneServer":
        self.log = open(ROOT / ".data" / f"daphne-test-{self.port}.log", "wb")
        self.proc = subprocess.Popen(
            daphne_command(self.port),
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, self.proc)
        DaphneServer.running.add(self)
        return self

    def stop(self) -> None:
        DaphneServer.running.discard(self)
        stop_process(self.proc)
        self.log.close()

    def wait_until_idle(self, *, timeout: float = 60.0) -> None:
        """Until no request is in flight and no background task (turn, guess, expiry) is left:
        the test settings' `/__test__/idle/` (project/testing.py)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        url = f"{self.url}/__test__/idle/?timeout={timeout}"
        try:
            with urllib.request.urlopen(url, timeout=timeout + 30) as response:
                assert response.status == 204, response.status
        except urllib.error.HTTPError as exc:
            busy = exc.read().decode(errors="replace")
            pytest.fail(f"test server {self.url} still busy {timeout:.0f} s after the test: {busy}")


def wait_until_servers_are_idle() -> None:
    for server in list(DaphneServer.running):
        server.wait_until_idle()


@pytest.fixture(autouse=True)
def _servers_idle_before_the_database_is_emptied(transactional_db):
    """Set up after `transactional_db`, so torn down before its flush (TRUNCATE): the servers
    finish what the test started first, instead of deadlocking with it."""
    yield
    wait_until_servers_are_idle()


def _is_lock_conflict(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, (psycopg.errors.DeadlockDetected, psycopg.errors.LockNotAvailable)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@pytest.fixture(scope="session", autouse=True)
def _flush_outlasts_a_late_lock():
    """Belt and braces: a server process can still touch the database after it said it was idle
    (a deadline timer firing, a server being stopped). Postgres then aborts the flush's
    transaction as a deadlock; wait for the servers and flush again."""
    from django.test import TransactionTestCase

    original = TransactionTestCase._fixture_teardown

    def fixture_teardown(self, attempts: int = 5):
        for attempt in range(1, attempts + 1):
            try:
                return original(self)
            except Exception as exc:
                if attempt == attempts or not _is_lock_conflict(exc):
                    raise
                wait_until_servers_are_idle()

    TransactionTestCase._fixture_teardown = fixture_teardown
    yield
    TransactionTestCase._fixture_teardown = original


@pytest.fixture(scope="session")
def daphne_server(django_db_setup, django_db_blocker):
    (ROOT / ".data").mkdir(exist_ok=True)
    with django_db_blocker.unblock():
        database_name = connection.settings_dict["NAME"]
    # A visible per-word pause, so the tests see the reply stream rather than land whole.
    server = DaphneServer(database_name=database_name, extra_env={"OFFLINE_STREAM_DELAY": "0.02", **ONE_SERVER_PER_DEADLINE}).start()
    yield server
    server.stop()


# Several test servers share one database. Each enforces the deadlines of the questions it showed
# with its own timer; a slow sweep keeps one server from expiring (and continuing, with its own
# model and settings) a question that another server's test is watching.
ONE_SERVER_PER_DEADLINE = {"QUESTION_SWEEP_SECONDS": "3600"}


@pytest.fixture(scope="session")
def _extra_servers(daphne_server):
    servers: dict[tuple, DaphneServer] = {}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
def _session_fake_model():
    from tests.fake_openai import FakeOpenAI

    # Unscripted calls answer 500, so a test that forgot a reply fails loudly.
    with FakeOpenAI(default=None) as fake:
        yield fake


@pytest.fixture
def fake_model(_session_fake_model):
    """The scripted OpenAI-compatible model behind `start_server(model=...)`, reset for each test."""
    _session_fake_model.reset()
    _session_fake_model.default = None
    yield _session_fake_model
    _session_fake_model.reset()
    _session_fake_model.default = None


@pytest.fixture
def start_server(daphne_server, _extra_servers, transactional_db):
    """Another Daphne on the test database with its own settings (env vars), started once per
    distinct configuration and shared by the tests that ask for the same one.

        server = start_server(model=fake_model, QUESTION_GUESSER_ENABLED="false")
    """

    def start(*, model=None, **env: str) -> DaphneServer:
        extra = {**ONE_SERVER_PER_DEADLINE, **{k: str(v) for k, v in env.items()}}
        if model is not None:
            extra.update(LLM_BASE_URL=model.base_url, LLM_API_KEY="sk-e2e", LLM_MODEL="fake-model", LLM_MAX_RETRIES="0")
        key = tuple(sorted(extra.items()))
        if key not in _extra_servers:
            _extra_servers[key] = DaphneServer(database_name=daphne_server.env["DATABASE_NAME"], extra_env=extra).start()
        return _extra_servers[key]

    return start


@pytest.fixture(autouse=True)
def _sync_orm_beside_playwright(monkeypatch):
    # Playwright's sync API runs an asyncio loop on this thread; the test's own ORM calls are
    # still plain synchronous code, so Django's async-safety guard does not apply to them.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; install it with `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def live_url(daphne_server, transactional_db) -> str:
    """The server's URL; data created in the test is committed, so the server process sees it."""
    return daphne_server.url


@pytest.fixture
def browser_context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(10_000)
    yield context
    context.close()


def start_conversation(page, base_url: str) -> None:
    page.goto(f"{base_url}/chat/")
    page.get_by_role("button", name="New conversation").click()
    page.wait_for_url(f"{base_url}/chat/*/")
    wait_for_socket(page)


def watch_console(page) -> list[str]:
    """The list the page's console errors (a resource that failed to load among them) and
    uncaught exceptions are collected in."""
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def log_in(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/chat/**")


def wait_for_socket(page) -> None:
    page.wait_for_selector("body[data-ws='open']")


def open_chat(browser, base_url: str, viewport: dict, username: str, password: str, *, timezone_id: str | None = None):
    """A new user, logged in on a fresh conversation, and the list the page's console errors
    (and uncaught exceptions) are collected in: (context, user, page, errors)."""
    from django.contrib.auth import get_user_model

    from chat.models import Conversation

    context = browser.new_context(viewport=viewport, timezone_id=timezone_id)
    context.set_default_timeout(15_000)
    user = get_user_model().objects.create_user(username=username, password=password)
    page = context.new_page()
    errors = watch_console(page)
    log_in(page, base_url, username, password)
    page.goto(f"{base_url}/chat/{Conversation.objects.create(owner=user, title='New conversation').pk}/")
    wait_for_socket(page)
    return context, user, page, errors
