"""One turn at a time per conversation, across every worker: a Postgres session advisory lock.

The lock lives on a connection of its own for the length of the turn, so it is released when the
turn ends — or when the process dies, since Postgres drops a dead session's locks. The
connections come from a `psycopg_pool.AsyncConnectionPool` (one per event loop and database):
opening one costs more than the rest of a turn's bookkeeping together, and the pool's size caps
how many turns of one process hold a lock connection at once — the rest wait their turn instead
of exhausting Postgres' max_connections under a burst of answers. With Django's own pool
(DATABASE_POOL_MAX_SIZE) and the index rebuild's lock connection, a process never holds more
than DATABASE_POOL_MAX_SIZE + MAX_LOCK_CONNECTIONS + 1 Postgres connections.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from contextlib import asynccontextmanager
from typing import AsyncIterator

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from psycopg_pool import AsyncConnectionPool

from project.embedded_pg import conninfo

# At most this many lock connections per process (and event loop).
MAX_LOCK_CONNECTIONS = 24
# Idle connections above none are closed after this long without a turn.
MAX_IDLE_SECONDS = 300.0
# A turn waits this long for a free lock connection before it fails visibly (retryable).
CHECKOUT_TIMEOUT_SECONDS = 120.0

_pools: dict[tuple[asyncio.AbstractEventLoop, str], AsyncConnectionPool] = {}
# The connections each pool opened (see _finish).
_opened: dict[tuple[asyncio.AbstractEventLoop, str], weakref.WeakSet[psycopg.AsyncConnection]] = {}


async def _pool() -> AsyncConnectionPool:
    loop = asyncio.get_running_loop()
    # The settings Django's connections are made from (the same dict), not `connection`'s: on the
    # event loop each task would make a database wrapper of its own just to read them.
    key = (loop, conninfo(settings.DATABASES[DEFAULT_DB_ALIAS]))
    pool = _pools.get(key)
    if pool is None:
        _discard_pools_of_closed_loops()
        opened = _opened[key] = weakref.WeakSet()

        async def remember(conn: psycopg.AsyncConnection) -> None:
            opened.add(conn)

        pool = AsyncConnectionPool(
            key[1],
            kwargs={"autocommit": True},
            min_size=0,
            max_size=MAX_LOCK_CONNECTIONS,
            max_idle=MAX_IDLE_SECONDS,
            timeout=CHECKOUT_TIMEOUT_SECONDS,
            check=AsyncConnectionPool.check_connection,
            configure=remember,
            name="clarion-turn-locks",
            open=False,
        )
        _pools[key] = pool
        await pool.open()
    return pool


def lock_key(conversation_id: uuid.UUID) -> int:
    # 64 bits of the UUID as a signed bigint: collisions between conversations are not a concern.
    return int.from_bytes(uuid.UUID(str(conversation_id)).bytes[:8], "big", signed=True)


@asynccontextmanager
async def conversation_turn_lock(conversation_id: uuid.UUID) -> AsyncIterator[bool]:
    """Holds the conversation's turn lock while the block runs, when it yields True (False:
    another caller holds it). Raises psycopg.OperationalError (PoolTimeout included) when no
    connection can be had. The pool tests a connection before lending it, so one that Postgres
    dropped while idle (a restart, `pg_terminate_backend`) is replaced rather than failing the
    turn."""
    key = lock_key(conversation_id)
    pool = await _pool()
    conn = await pool.getconn()
    try:
        row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", [key])).fetchone()
        assert row is not None  # a SELECT of one value returns one row
        locked = row[0]
    except BaseException:
        await conn.close()  # may hold the lock: closing the session releases it
        await pool.putconn(conn)
        raise
    if not locked:
        await pool.putconn(conn)
        yield False
        return
    try:
        yield True
    finally:
        await _release(pool, conn, key)


async def _release(pool: AsyncConnectionPool, conn: psycopg.AsyncConnection, key: int) -> None:
    try:
        await conn.execute("SELECT pg_advisory_unlock(%s)", [key])
    except BaseException:
        # Never hand a connection that may still hold the lock back to the pool: closing the
        # session releases it.
        await conn.close()
        raise
    finally:
        await pool.putconn(conn)


def _finish(key: tuple[asyncio.AbstractEventLoop, str]) -> None:
    # A pool whose event loop has closed cannot close its connections (its close() needs that
    # loop): their sockets are closed directly, as a dying process's would be.
    _pools.pop(key, None)
    for conn in list(_opened.pop(key, ())):
        if not conn.closed:
            conn.pgconn.finish()


def _discard_pools_of_closed_loops() -> None:
    for key in [k for k in _pools if k[0].is_closed()]:
        _finish(key)


def discard_idle_connections() -> None:
    """Close pooled lock connections without an event loop (process shutdown, test teardown)."""
    for key in list(_pools):
        _finish(key)
