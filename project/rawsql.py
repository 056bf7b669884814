"""Hot reads written in SQL, returning the same model instances the ORM would.

The statements that run on every turn and every answer are few and fixed, and on that path Django
spends more CPU compiling a queryset than Postgres spends running it (bench/README.md §7). They are
written here once, as SQL built from the models' own table and column names, and loaded through
`Model.from_db` with each field's own database converter (JSON fields), so callers get ordinary
model instances. Everything else stays ORM.

They run as **prepared statements**. Django's cursors bind parameters on the client, so Postgres
plans every statement anew each time it runs — and for these, planning cost more than running
(the turn's workspace snapshot: 2.0 ms to plan, 0.7 ms to run; "does this conversation need a
reply": 1.6 ms against 0.2 ms). Here the parameters are bound on the server and each statement
is prepared on first use per connection (`prepare_threshold` 0 in settings.py; psycopg keeps
the 100 most recent), after which Postgres reuses its plan. They go through Django's cursor
wrapper all the same, so they are logged and counted like any other query.
`DATABASE_PREPARED_STATEMENTS=false` turns it off for a connection pooler that cannot keep
prepared statements.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence, TypeVar

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Model

M = TypeVar("M", bound=Model)


@functools.cache
def columns(model: type[Model], alias: str) -> str:
    """Every concrete column of `model`, qualified by `alias`, in the order `load` expects."""
    return ", ".join(f'{alias}."{f.column}"' for f in model._meta.concrete_fields)


@functools.cache
def _loader(model: type[Model]):
    fields = model._meta.concrete_fields
    names = [f.attname for f in fields]
    converters = [(i, f.from_db_value) for i, f in enumerate(fields) if hasattr(f, "from_db_value")]
    return len(fields), names, converters


def load(model: type[M], row: Sequence[Any], start: int = 0) -> M:
    """The instance in `row[start:]`, whose columns were selected with `columns(model, …)`."""
    width, names, converters = _loader(model)
    values = list(row[start : start + width])
    for i, convert in converters:
        values[i] = convert(values[i], None, connection)
    return model.from_db(connection.alias, names, values)


def width(model: type[Model]) -> int:
    return _loader(model)[0]


def fetch(sql: str, params: dict | Sequence | None = None) -> list[tuple]:
    """The rows of one hot statement, run as a prepared statement (see the module's note)."""
    with _server_bound_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class _Cursor(ServerBindingCursor):
    def _send_query_prepared(self, name, pgq, *, binary=None):
        # psycopg keeps the last query (what Django's query log reads) only for statements it did
        # not prepare; without this, a prepared statement would be logged as None.
        self._query = pgq
        super()._send_query_prepared(name, pgq, binary=binary)


def _server_bound_cursor():
    """`connection.cursor()`, with a cursor that binds its parameters on the server (and so
    prepares its statements, where the connection's `prepare_threshold` allows: settings.py)."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        raw = _Cursor(connection.connection)
        connection.validate_thread_sharing()
        return connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)


def fetch_models(model: type[M], sql: str, params: dict | Sequence | None = None) -> list[M]:
    """Rows of `sql`, which selects `columns(model, …)` first, as instances of `model`."""
    return [load(model, row) for row in fetch(sql, params)]
