"""One turn at a time per conversation, across every worker: a Postgres session advisory lock.

The lock lives on its own connection for the length of the turn, so it is released when the turn
ends — or when the process dies, since Postgres drops a dead session's locks.
"""
from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from typing import AsyncIterator

import psycopg
from django.db import connection


def _conninfo() -> str:
    s = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        dbname=s["NAME"], user=s["USER"] or None, password=s["PASSWORD"] or None, host=s["HOST"] or None, port=s["PORT"] or None
    )


def lock_key(conversation_id: uuid.UUID) -> int:
    # 64 bits of the UUID as a signed bigint: collisions between conversations are not a concern.
    return int.from_bytes(uuid.UUID(str(conversation_id)).bytes[:8], "big", signed=True)


@asynccontextmanager
async def conversation_turn_lock(conversation_id: uuid.UUID) -> AsyncIterator[bool]:
    """Yields True when this caller holds the conversation's turn lock, False when another does."""
    conn = await psycopg.AsyncConnection.connect(_conninfo(), autocommit=True)
    try:
        row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", [lock_key(conversation_id)])).fetchone()
        yield bool(row[0])
    finally:
        await conn.close()
