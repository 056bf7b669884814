"""`manage.py up` as a person runs it: real processes on a fresh data folder with the embedded
Postgres (no DATABASE_URL), over real HTTP.

Ctrl+C stops the Postgres that `up` started; a second `up` in the same folder starts cleanly; one
left by an `up` killed outright is adopted and stopped by the next. Served beyond loopback, the
demo superuser never keeps the well-known password. No `Server` header, no token in the log.
"""

from __future__ import annotations

import http.client
import http.cookiejar
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from project import embedded_pg, serving
from tests.e2e.conftest import free_port
from tests.processes import stop_process

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(900)


def _as_from_a_terminal() -> None:
    # Ctrl+C reaches a command typed in a terminal. Tests started where SIGINT is ignored (the
    # background of a non-interactive shell) pass that on to their children, and Twisted then
    # leaves it ignored: `up` would not stop on Ctrl+C. It is started as from a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def fresh_shell(data_dir: Path) -> dict[str, str]:
    """The environment of a person's shell on a fresh machine (no database, model or key set),
    with Clarion's data in `data_dir`."""
    drop = ("DATABASE_URL", "DATABASE_NAME", "DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR", "SECRET_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("LLM_", "OPENAI_"))}
    env.update(CLARION_DATA_DIR=str(data_dir), OFFLINE_STREAM_DELAY="0")
    return env


class Up:
    """One `manage.py up` in a subprocess, its output in a file."""

    def __init__(self, data_dir: Path, *, host: str = "127.0.0.1"):
        self.data_dir, self.host, self.port = data_dir, host, free_port()
        self.output_file = data_dir / f"up-{self.port}.log"
        with open(self.output_file, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "manage.py", "up", "--host", host, "--port", str(self.port)],
                cwd=ROOT, env=fresh_shell(data_dir), stdout=out, stderr=subprocess.STDOUT, preexec_fn=_as_from_a_terminal,
            )  # fmt: skip

    @property
    def output(self) -> str:
        return self.output_file.read_text(errors="replace")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_until_serving(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while "Clarion is running" not in self.output:
            assert self.proc.poll() is None, f"up exited early ({self.proc.returncode}):\n{self.output}"
            assert time.monotonic() < deadline, f"up did not start within {timeout:.0f} s:\n{self.output}"
            time.sleep(0.2)
        while time.monotonic() < deadline:  # the line is printed just before Daphne listens
            try:
                urllib.request.urlopen(f"{self.url}/login/", timeout=5).close()
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        pytest.fail(f"up printed its address but does not answer:\n{self.output}")

    def interrupt(self, timeout: float = 120) -> int:
        """What Ctrl+C in the terminal does."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        finally:
            stop_process(self.proc)


def websocket_handshake(port: int, *, origin: str) -> str:
    """The head of the server's answer to a websocket handshake from a page of `origin`."""
    request = (
        f"GET /ws/conversations/{uuid.uuid4()}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"Origin: {origin}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = connection.recv(4096)
            if not chunk:
                break
            head += chunk
    return head.decode("latin1")


def log_in(base: str, username: str, password: str) -> int:
    """The login form over HTTP, as a browser posts it: the final status without following the
    redirect (302 = logged in, 200 = the form again, 429 = locked out)."""
    jar = http.cookiejar.CookieJar()

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    opener.open(f"{base}/login/", timeout=30).close()
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": csrf}).encode()
    try:
        with opener.open(urllib.request.Request(f"{base}/login/", data=form), timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def data_dir():
    # Not pytest's tmp_path: the embedded server runs as its own system user when the tests run as
    # root, and must be able to reach the folder.
    path = Path(tempfile.mkdtemp(prefix="clarion-up-test-"))
    path.chmod(0o755)
    yield path
    embedded_pg.stop_server(path)
    shutil.rmtree(path, ignore_errors=True)


def postgres_stopped(data_dir: Path) -> bool:
    return embedded_pg.running_postmaster(data_dir) is None and not list((data_dir / "postgres").glob(".s.PGSQL.*"))


def test_ctrl_c_stops_the_postgres_up_started_and_the_next_up_starts_cleanly(data_dir):
    first = Up(data_dir)
    try:
        first.wait_until_serving()
        postmaster = embedded_pg.running_postmaster(data_dir)
        assert postmaster is not None
        assert log_in(first.url, "demo", "demo") == 302  # the README's login, on loopback
        response = urllib.request.urlopen(f"{first.url}/login/", timeout=30)
        assert response.headers.get("Server") is None  # Daphne's `Server: daphne` is gone
        # The chat's websocket: its own origin is accepted, another port of the same host is not.
        own = websocket_handshake(first.port, origin=first.url)
        other_port = websocket_handshake(first.port, origin="http://127.0.0.1:9999")
        assert own.startswith("HTTP/1.1 101") and other_port.startswith("HTTP/1.1 403"), (own, other_port)
        assert "server:" not in own.lower() and "server:" not in other_port.lower()
        # A path climbing out of the static folders is a plain 404, without a traceback in the log.
        climbing = http.client.HTTPConnection("127.0.0.1", first.port, timeout=30)
        climbing.request("GET", "/static/../manage.py")
        assert climbing.getresponse().status == 404
        climbing.close()
        # A token in a URL is refused and written nowhere.
        secret = "clk_never-in-a-log-" + os.urandom(8).hex()
        request = urllib.request.Request(f"{first.url}/api/v1/reply?token={secret}", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 400 and refused.value.headers["Content-Type"] == "application/json"
    finally:
        code = first.interrupt()
    assert code == 0, first.output
    assert "Stopped the embedded Postgres." in first.output
    assert postgres_stopped(data_dir) and not postmaster.is_running()
    assert secret not in first.output and "token=" not in first.output
    assert "Traceback" not in first.output and "ERROR" not in first.output

    second = Up(data_dir)
    try:
        second.wait_until_serving()
        assert log_in(second.url, "demo", "demo") == 302
    finally:
        assert second.interrupt() == 0, second.output
    assert "Demo workspace already exists for demo; no content was changed." in second.output  # an update's second `up`
    assert postgres_stopped(data_dir)


def test_a_killed_up_leaves_a_server_that_the_next_up_adopts_and_stops(data_dir):
    killed = Up(data_dir)
    killed.wait_until_serving()
    killed.proc.kill()
    killed.proc.wait(60)
    assert not postgres_stopped(data_dir)  # nothing could stop it

    again = Up(data_dir)
    try:
        again.wait_until_serving()
    finally:
        assert again.interrupt() == 0, again.output
    assert "Stopped the embedded Postgres." in again.output and postgres_stopped(data_dir)


def manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """Another `manage.py` command on the same folder, as a person types it beside a running `up`."""
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=fresh_shell(data_dir), capture_output=True, text=True, timeout=120
    )


def _log_in_status(base: str) -> int:
    try:
        return log_in(base, "demo", "demo")
    except urllib.error.HTTPError as exc:  # the login page itself answered 503
        return exc.code


PROJECTS = "from django.contrib.auth.models import User; from workspace.models import Project"


def test_the_embedded_postgres_killed_under_up_is_started_again_and_nothing_committed_is_lost(data_dir):
    up = Up(data_dir)
    try:
        up.wait_until_serving()
        assert log_in(up.url, "demo", "demo") == 302
        postmaster = embedded_pg.running_postmaster(data_dir)
        assert postmaster is not None
        written = manage(
            data_dir, "shell", "-c", f"{PROJECTS}; Project.objects.create(owner=User.objects.get(username='demo'), name='Kept')"
        )
        assert written.returncode == 0, written.stderr

        postmaster.process.kill()  # as an out-of-memory kill would
        postmaster.process.wait(30)

        # Clarion logs in again by itself, within seconds, on a new server over the same files.
        deadline = time.monotonic() + 90
        while (status := _log_in_status(up.url)) != 302:
            assert up.proc.poll() is None, up.output
            assert time.monotonic() < deadline, f"still {status} after the restart:\n{up.output}"
            time.sleep(0.5)
        again = embedded_pg.running_postmaster(data_dir)
        assert again is not None and again.pid != postmaster.pid
        kept = manage(data_dir, "shell", "-c", f"{PROJECTS}; print(Project.objects.filter(name='Kept').count())")
        assert kept.returncode == 0 and kept.stdout.split()[-1] == "1", (kept.stdout, kept.stderr)
        assert "The embedded Postgres is running again." in up.output
    finally:
        code = up.interrupt()
    assert code == 0, up.output
    assert "Stopped the embedded Postgres." in up.output and postgres_stopped(data_dir)


def test_stop_postgres_leaves_a_server_that_up_is_using_and_says_why(data_dir):
    up = Up(data_dir)
    try:
        up.wait_until_serving()
        assert log_in(up.url, "demo", "demo") == 302
        refused = manage(data_dir, "stop_postgres")
        assert refused.returncode != 0
        assert "is in use" in refused.stderr and "Ctrl+C stops `manage.py up`" in refused.stderr, refused.stderr
        assert embedded_pg.running_postmaster(data_dir) is not None
        assert log_in(up.url, "demo", "demo") == 302  # still serving
    finally:
        assert up.interrupt() == 0, up.output
    assert postgres_stopped(data_dir)
    stopped = manage(data_dir, "stop_postgres")  # nothing running: says so
    assert stopped.returncode == 0 and "No embedded Postgres is running here." in stopped.stdout


def test_up_on_a_port_already_taken_says_so_before_starting_anything(data_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = manage(data_dir, "up", "--port", str(port))
    assert done.returncode != 0
    assert f"Cannot serve on 127.0.0.1:{port}: Address already in use" in done.stderr and "--port" in done.stderr, done.stderr
    assert "Clarion is running" not in done.stdout and "Database ready" not in done.stdout
    assert embedded_pg.running_postmaster(data_dir) is None and not (data_dir / "postgres").exists()


def test_served_beyond_loopback_the_demo_superuser_gets_a_generated_password(data_dir):
    # A loopback run first: demo/demo, as the README says.
    local = Up(data_dir)
    try:
        local.wait_until_serving()
    finally:
        local.interrupt()
    assert "Log in as demo / demo" in local.output

    exposed = Up(data_dir, host="0.0.0.0")
    try:
        exposed.wait_until_serving()
        password = re.search(r"Log in as demo / (\S+)", exposed.output).group(1)
        assert password != "demo" and len(password) >= 12
        assert log_in(exposed.url, "demo", "demo") == 200  # the form again: wrong password
        assert log_in(exposed.url, "demo", password) == 302
    finally:
        exposed.interrupt()
    assert exposed.output.count(password) == 1  # printed once

    # The next exposed run leaves the (no longer well-known) password alone and does not print it.
    later = Up(data_dir, host="0.0.0.0")
    try:
        later.wait_until_serving()
        assert log_in(later.url, "demo", password) == 302
    finally:
        later.interrupt()
    assert "password unchanged" in later.output and password not in later.output


@pytest.mark.parametrize(
    "host, debug, allowed_hosts, exposed",
    [
        ("127.0.0.1", False, ["127.0.0.1", "localhost"], False),  # the README's run: demo/demo
        ("localhost", False, ["127.0.0.1", "localhost"], False),
        ("::1", False, ["127.0.0.1", "localhost", "[::1]"], False),
        ("0.0.0.0", True, ["127.0.0.1", "localhost"], True),
        ("192.168.1.20", False, ["127.0.0.1", "localhost"], True),
        ("127.0.0.1", False, ["clarion.example.org"], True),  # behind a proxy, with a real name
        ("127.0.0.1", True, ["clarion.example.org"], False),  # a developer's DEBUG run
    ],
)
def test_what_counts_as_served_beyond_this_machine(settings, host, debug, allowed_hosts, exposed):
    from project.management.commands.up import serves_beyond_this_machine

    settings.DEBUG, settings.ALLOWED_HOSTS = debug, allowed_hosts
    assert serves_beyond_this_machine(host) is exposed


@pytest.mark.django_db
def test_seed_demo_never_leaves_the_known_password_when_told_so(django_user_model):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("seed_demo", generated_password=True, stdout=out)
    demo = django_user_model.objects.get(username="demo")
    assert demo.is_superuser and not demo.check_password("demo")
    password = re.search(r"Log in as demo / (\S+)", out.getvalue()).group(1)
    assert demo.check_password(password)

    demo.set_password("demo")
    demo.save()
    call_command("seed_demo", generated_password=True, stdout=io.StringIO())
    demo.refresh_from_db()
    assert not demo.check_password("demo")


def test_a_database_url_nobody_answers_at_fails_at_once_with_postgres_reason(tmp_path):
    """A wrong DATABASE_URL is said at once, in Postgres' words — not after the pool's wait."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_NAME", "DJANGO_SETTINGS_MODULE", "SECRET_KEY")}
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{free_port()}/clarion",
        DATABASE_POOL_TIMEOUT_SECONDS="120",
        CLARION_DATA_DIR=str(tmp_path),
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "up", "--port", str(free_port())], cwd=ROOT, env=env, capture_output=True, text=True, timeout=90
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("clarion: cannot reach Postgres:") and "Connection refused" in last, done.stderr


def test_the_readmes_worker_command_serves_as_up_does():
    """README tells how to start several workers; its Daphne arguments are the ones `up` uses."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    arguments = serving.daphne_arguments(host="127.0.0.1", port=8001, application="project.asgi:application")
    assert f"-m daphne {' '.join(arguments)}" in readme
