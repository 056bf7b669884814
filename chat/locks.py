"""One turn at a time per conversation, across every worker: a Postgres session advisory lock.

The lock lives on a connection of its own for the length of the turn, so it is released when the
turn ends — or when the process dies, since Postgres drops a dead session's locks. The
connections come from a `psycopg_pool.AsyncConnectionPool` (one per event loop and database):
opening one costs more than the rest of a turn's bookkeeping together, and the pool's size caps
how many turns of one process hold a lock connection at once — the rest wait their turn instead
of exhausting Postgres' max_connections under a burst of answers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from contextlib import asynccontextmanager
from typing import AsyncIterator, Sequence

import psycopg
from django.conf import settings
from django.db import connection
from django.db.backends.postgresql.psycopg_any import get_adapters_template
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from project.embedded_pg import connection_settings
from project.rawsql import Statement

log = logging.getLogger("clarion.agent")

# At most this many lock connections per process (and event loop).
MAX_LOCK_CONNECTIONS = 24
# Idle connections above none are closed after this long without a turn.
MAX_IDLE_SECONDS = 300.0
# A turn waits this long for a free lock connection before it fails visibly (retryable).
CHECKOUT_TIMEOUT_SECONDS = 120.0

_pools: dict[tuple[asyncio.AbstractEventLoop, str], AsyncConnectionPool] = {}


def _conninfo() -> str:
    s = connection_settings(connection.settings_dict)
    return _make_conninfo(s["NAME"], s["USER"], s["PASSWORD"], s["HOST"], s["PORT"])


@functools.lru_cache(maxsize=8)  # it is the key of the pool every turn looks up
def _make_conninfo(name: str, user: str, password: str, host: str, port: str | int) -> str:
    return psycopg.conninfo.make_conninfo(
        dbname=name, user=user or None, password=password or None, host=host or None, port=port or None, connect_timeout=5
    )


async def _pool() -> AsyncConnectionPool:
    loop = asyncio.get_running_loop()
    key = (loop, _conninfo())
    pool = _pools.get(key)
    if pool is None:
        _discard_pools_of_closed_loops()
        pool = AsyncConnectionPool(
            key[1],
            kwargs=_connect_kwargs(),
            min_size=0,
            max_size=MAX_LOCK_CONNECTIONS,
            max_idle=MAX_IDLE_SECONDS,
            timeout=CHECKOUT_TIMEOUT_SECONDS,
            name="clarion-turn-locks",
            open=False,
        )
        _pools[key] = pool
        await pool.open()
    return pool


def _connect_kwargs() -> dict:
    """As Django sets up its own connections: the same loaders (JSON as text, timestamps in its
    time zone), so rows read here load into the same model instances as through Django; and
    prepared statements where the settings allow them."""
    return {
        "autocommit": True,
        "context": get_adapters_template(settings.USE_TZ, connection.timezone),
        "prepare_threshold": connection.settings_dict["OPTIONS"].get("prepare_threshold"),
    }


def lock_key(conversation_id: uuid.UUID) -> int:
    # 64 bits of the UUID as a signed bigint: collisions between conversations are not a concern.
    return int.from_bytes(uuid.UUID(str(conversation_id)).bytes[:8], "big", signed=True)


class TurnLock:
    """What `conversation_turn_lock` yields: whether this caller holds the lock, the rows of the
    statements it was asked to read with it, its connection for the turn's own statements
    (`fetch`), and — once the block is left — the row of the statement it was asked to run after
    letting go."""

    def __init__(self, conn: psycopg.AsyncConnection | None, rows: list[list[tuple]] | None = None):
        self.acquired = conn is not None
        self.rows = rows
        self.after_release: tuple | None = None
        self._conn = conn

    async def fetch(self, statement: Statement) -> list[tuple]:
        """The rows of `statement`, run on the lock's connection while it is held (autocommit:
        a write is committed when this returns)."""
        assert self._conn is not None, "the lock is not held"
        return await (await self._conn.execute(*statement)).fetchall()


@asynccontextmanager
async def conversation_turn_lock(
    conversation_id: uuid.UUID, *, reads: Sequence[Statement] = (), after_release: Statement | None = None
) -> AsyncIterator[TurnLock]:
    """Holds the conversation's turn lock when `.acquired` (False: another caller holds it).

    `reads` are sent with the lock statement, in one round trip, and run once it is taken: they
    see everything committed before the lock was let go by its last holder. Their rows are in
    `.rows`, one list per statement — None when they failed (logged; the lock is held all the
    same, and the caller reads its own way).

    `after_release` runs on the same connection right after the lock is let go — in a
    transaction of its own, so it sees everything committed before the release — and its row is
    left in `.after_release`: the check "did a message arrive meanwhile?" costs no thread hop.
    Raises psycopg.OperationalError (PoolTimeout included) when no connection can be had."""
    key = lock_key(conversation_id)
    pool = await _pool()
    try:
        conn, rows = await _try_lock(pool, key, reads)
    except PoolTimeout:
        raise  # no connection was free in time: waiting again would only double the wait
    except psycopg.OperationalError:
        # The pool lends a connection without testing it (a round trip on every turn): one that
        # Postgres dropped while idle fails here, is discarded, and the next one is tried.
        conn, rows = await _try_lock(pool, key, reads)
    lock = TurnLock(conn, rows)
    if conn is None:
        yield lock
        return
    try:
        yield lock
    except BaseException:
        await _release(pool, conn, key)
        raise
    lock.after_release = await _release(pool, conn, key, then=after_release)


LOCK = "SELECT pg_try_advisory_lock(%s)"


async def _try_lock(
    pool: AsyncConnectionPool, key: int, reads: Sequence[Statement]
) -> tuple[psycopg.AsyncConnection | None, list[list[tuple]] | None]:
    """A pooled connection holding the lock (None when another session holds it), and the rows
    of `reads`, run after the lock statement in the same round trip (pipeline mode)."""
    conn = await pool.getconn()
    try:
        async with conn.pipeline():
            locking = await conn.execute(LOCK, [key])
            reading = [await conn.cursor().execute(sql, params) for sql, params in reads]
        locked = (await locking.fetchone())[0]
        rows = [await cursor.fetchall() for cursor in reading] if locked and reads else None
    except psycopg.OperationalError:
        await pool.putconn(conn)  # a broken connection is closed, not pooled again
        raise
    except BaseException as exc:
        await conn.close()  # may hold the lock: closing the session releases it
        await pool.putconn(conn)
        if not (reads and isinstance(exc, psycopg.Error)):
            raise
        log.warning("the statements read with the turn lock failed: %r", exc)
        conn, _ = await _try_lock(pool, key, ())
        return conn, None
    if locked:
        return conn, rows
    await pool.putconn(conn)
    return None, None


async def _release(pool: AsyncConnectionPool, conn: psycopg.AsyncConnection, key: int, *, then: Statement | None = None) -> tuple | None:
    """Lets go of the lock, then runs `then` on the same connection; its row, or None."""
    try:
        try:
            await conn.execute("SELECT pg_advisory_unlock(%s)", [key])
        except BaseException:
            # Never hand a connection that may still hold the lock back to the pool: closing
            # the session releases it.
            await conn.close()
            raise
        if then is not None:
            try:
                return await (await conn.execute(*then)).fetchone()
            except psycopg.Error as exc:  # the caller asks the question its own way instead
                log.warning("the statement after the turn lock failed: %r", exc)
        return None
    finally:
        await pool.putconn(conn)


def _finish_idle(pool: AsyncConnectionPool) -> None:
    # Without a running loop, the pool's own close() cannot run; the idle connections' sockets
    # are closed directly (what a dying process would do).
    for conn in list(getattr(pool, "_pool", ())):
        conn.pgconn.finish()


def _discard_pools_of_closed_loops() -> None:
    for key in [k for k in _pools if k[0].is_closed()]:
        _finish_idle(_pools.pop(key))


def discard_idle_connections() -> None:
    """Close pooled lock connections without an event loop (process shutdown, test teardown)."""
    while _pools:
        _, pool = _pools.popitem()
        _finish_idle(pool)
