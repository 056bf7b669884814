"""One turn at a time per conversation, across every worker: a Postgres session advisory lock.

The lock lives on a connection of its own for the length of the turn, so it is released when the
turn ends — or when the process dies, since Postgres drops a dead session's locks. Idle lock
connections are kept for the next turn: opening one costs more than the rest of a turn's
bookkeeping together.
"""
from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager
from typing import AsyncIterator

import psycopg
from django.db import connection

MAX_IDLE_CONNECTIONS = 8
_idle: list[psycopg.AsyncConnection] = []
# At most this many turns of one process hold a lock connection at once; the rest wait their turn
# instead of exhausting Postgres' max_connections under a burst of answers.
MAX_LOCK_CONNECTIONS = 24
_limits: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}


def _limit() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    if loop not in _limits:
        _limits[loop] = asyncio.Semaphore(MAX_LOCK_CONNECTIONS)
    return _limits[loop]


def _conninfo() -> str:
    s = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        dbname=s["NAME"], user=s["USER"] or None, password=s["PASSWORD"] or None, host=s["HOST"] or None, port=s["PORT"] or None
    )


def lock_key(conversation_id: uuid.UUID) -> int:
    # 64 bits of the UUID as a signed bigint: collisions between conversations are not a concern.
    return int.from_bytes(uuid.UUID(str(conversation_id)).bytes[:8], "big", signed=True)


async def _checkout() -> psycopg.AsyncConnection:
    conninfo = _conninfo()
    while _idle:
        conn = _idle.pop()
        # Connections made for another database (tests switch to the test database) are dropped.
        if not conn.closed and conn.info.dbname == connection.settings_dict["NAME"]:
            return conn
        await conn.close()
    return await psycopg.AsyncConnection.connect(conninfo, autocommit=True)


@asynccontextmanager
async def conversation_turn_lock(conversation_id: uuid.UUID) -> AsyncIterator[bool]:
    """Yields True when this caller holds the conversation's turn lock, False when another does.
    Raises psycopg.OperationalError when no connection can be had."""
    async with _limit():
        async with _locked(conversation_id) as acquired:
            yield acquired


@asynccontextmanager
async def _locked(conversation_id: uuid.UUID) -> AsyncIterator[bool]:
    key = lock_key(conversation_id)
    conn = await _checkout()
    reusable = False
    try:
        row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", [key])).fetchone()
        acquired = bool(row[0])
        try:
            yield acquired
        finally:
            if acquired:
                await conn.execute("SELECT pg_advisory_unlock(%s)", [key])
        reusable = True
    finally:
        if reusable and len(_idle) < MAX_IDLE_CONNECTIONS:
            _idle.append(conn)
        else:
            await conn.close()  # closing the session releases any lock it still holds


def discard_idle_connections() -> None:
    """Close pooled lock connections without an event loop (process shutdown, test teardown)."""
    while _idle:
        _idle.pop().pgconn.finish()
