"""One index rebuild at a time across processes: a Postgres session advisory lock.

The lock is held on a connection of its own for the length of the rebuild, so it is released
when the rebuild ends or its process dies (Postgres drops a dead session's locks).
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from typing import Iterator

import psycopg
from django.db import connection

from project.embedded_pg import conninfo

REBUILD_LOCK_KEY = int.from_bytes(hashlib.sha256(b"clarion.knowledge.rebuild_kb_index").digest()[:8], "big", signed=True)


def _connect() -> psycopg.Connection:
    return psycopg.connect(conninfo(connection.settings_dict), autocommit=True)


@contextmanager
def rebuild_lock() -> Iterator[bool]:
    """Yields True while this caller holds the rebuild lock, False when another process does."""
    with _connect() as conn:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", [REBUILD_LOCK_KEY]).fetchone()
        acquired = bool(row and row[0])
        try:
            yield acquired
        finally:
            if acquired and not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", [REBUILD_LOCK_KEY])


def rebuild_lock_is_held() -> bool:
    with rebuild_lock() as acquired:
        return not acquired
