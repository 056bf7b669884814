"""Importing settings starts nothing: `manage.py help` must not boot (or even create) Postgres."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_NAME", "DJANGO_SETTINGS_MODULE")}
    env.update(CLARION_DATA_DIR=str(data_dir), SECRET_KEY="lazy-db-test-key")
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_manage_help_and_check_do_not_start_the_embedded_database(tmp_path):
    for args in (("help",), ("check",), ("help", "migrate")):
        done = _manage(*args, data_dir=tmp_path)
        assert done.returncode == 0, done.stderr
    # The embedded server would have initialised its cluster here on start.
    assert not (tmp_path / "postgres").exists()
    assert "migrate" in _manage("help", data_dir=tmp_path).stdout


def test_settings_describe_the_embedded_server_without_an_address():
    from project.embedded_pg import embedded_database_settings

    described = embedded_database_settings(Path("/nonexistent/clarion-data"), database="clarion_x")
    assert described["ENGINE"] == "project.embedded_backend"
    assert described["HOST"] == "" and described["NAME"] == "clarion_x"


def test_the_first_connection_fills_in_the_started_servers_address(db):
    from django.db import connection

    connection.ensure_connection()
    assert connection.settings_dict["HOST"]  # the socket directory (or host) of the running server
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_first_connections_from_several_threads_at_once_share_one_start(db, monkeypatch, settings):
    """A fresh process's first request and its deadline sweep connect at the same moment."""
    import threading

    from project import embedded_pg

    monkeypatch.setattr(embedded_pg, "_started", {})
    monkeypatch.setattr(embedded_pg, "_ensured", set())
    starts = []
    real_start = embedded_pg._start

    def counted_start(data_dir):
        starts.append(data_dir)
        return real_start(data_dir)

    monkeypatch.setattr(embedded_pg, "_start", counted_start)
    barrier, results, errors = threading.Barrier(4), [], []

    def connect():
        barrier.wait()
        try:
            results.append(embedded_pg.ensure_server(Path(settings.DATA_DIR), database="clarion"))
        except Exception as exc:  # pragma: no cover - the failure this test is about
            errors.append(exc)

    threads = [threading.Thread(target=connect) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and len(set(results)) == 1 and len(starts) == 1
