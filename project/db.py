"""Database work from async code: one thread hop, with connection upkeep that does not cost a hop.

Channels' `database_sync_to_async` runs Django's `close_old_connections` before and after every
call, and its consumers hop to the database thread once more before every event they dispatch.
Each upkeep also makes the next query start with a health check (`CONN_HEALTH_CHECKS`: one
`SELECT 1` round trip). On the answer path that was several extra round trips and hops per
answer, each waiting its turn on the one database thread. Here the upkeep runs at the start of
a hop, at most once a second per thread — at once when the last statement failed or a
transaction was left open, which is when a connection is worth replacing — and a connection
past its CONN_MAX_AGE is still closed when the hop ends. The cost: when Postgres drops a
connection, the first statement on it fails (the turn ends with its retryable error) and the
next hop replaces it, where a health check on every hop would have replaced it first.
"""

from __future__ import annotations

import threading
import time

from asgiref.sync import SyncToAsync
from django.db import close_old_connections, connections

UPKEEP_EVERY_SECONDS = 1.0

_last_upkeep = threading.local()


def _connection_upkeep() -> None:
    now = time.monotonic()
    due = now - getattr(_last_upkeep, "at", float("-inf")) >= UPKEEP_EVERY_SECONDS
    if due or any(c.connection is not None and (c.errors_occurred or not c.autocommit) for c in connections.all(initialized_only=True)):
        _last_upkeep.at = now
        close_old_connections()


def _close_expired() -> None:
    """A connection past its CONN_MAX_AGE is closed when the hop ends (at once with 0)."""
    now = time.monotonic()
    for c in connections.all(initialized_only=True):
        if c.connection is not None and c.close_at is not None and now >= c.close_at and not c.in_atomic_block:
            c.close()


class DatabaseSyncToAsync(SyncToAsync):
    def thread_handler(self, loop, *args, **kwargs):
        _connection_upkeep()
        try:
            return super().thread_handler(loop, *args, **kwargs)
        finally:
            _close_expired()


def database_sync_to_async(func):
    """`channels.db.database_sync_to_async`, with the upkeep above."""
    return DatabaseSyncToAsync(func)
