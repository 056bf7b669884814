"""Database hops from async code: connection upkeep without a hop or a round trip per call."""

import psycopg
import pytest
from django.db import OperationalError, connection, connections

from project import db
from project.embedded_pg import connection_settings

pytestmark = pytest.mark.django_db(transaction=True)


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def close_connection() -> None:
    connection.close()  # the calling thread's connection


@pytest.fixture
async def persistent_connections(monkeypatch):
    """As in production: connections live across hops (CONN_MAX_AGE), and upkeep is due rarely."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    monkeypatch.setattr(db, "UPKEEP_EVERY_SECONDS", 3600.0)
    await db.database_sync_to_async(close_connection)()
    yield
    await db.database_sync_to_async(close_connection)()  # the test database can be dropped


async def test_hops_reuse_one_connection_without_a_health_check_each(persistent_connections, monkeypatch):
    first = await db.database_sync_to_async(backend_pid)()
    checks = []
    monkeypatch.setattr(type(connections["default"]), "is_usable", lambda self: checks.append(1) or True)
    pids = [await db.database_sync_to_async(backend_pid)() for _ in range(5)]
    assert pids == [first] * 5 and checks == []


async def test_a_connection_postgres_dropped_is_replaced_by_the_next_hop(persistent_connections):
    first = await db.database_sync_to_async(backend_pid)()
    s = connection_settings(connection.settings_dict)
    with psycopg.connect(
        dbname=s["NAME"], user=s["USER"] or None, host=s["HOST"] or None, port=s["PORT"] or None, autocommit=True
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [first])
    with pytest.raises(OperationalError):  # the statement that meets the dropped connection fails…
        await db.database_sync_to_async(backend_pid)()
    second = await db.database_sync_to_async(backend_pid)()  # …and the next hop has a new one
    assert second != first


async def test_without_conn_max_age_every_hop_closes_its_connection():
    assert connection.settings_dict["CONN_MAX_AGE"] == 0  # the test settings
    pids = [await db.database_sync_to_async(backend_pid)() for _ in range(2)]
    assert pids[0] != pids[1]
    assert await db.database_sync_to_async(lambda: connection.connection)() is None
