"""Hot reads and writes in SQL, returning the same model instances the ORM would.

The statements that run on every turn and every answer are few and fixed, and on that path Django
spends more CPU compiling a queryset than Postgres spends running it (bench/README.md §7). They are
written here once, as SQL built from the models' own table and column names, and loaded as
`Model.from_db` would load them, with each field's own database converter (JSON fields), so
callers get ordinary model instances. Rows to write go as one JSON parameter (`as_json`,
`insert_many`). Everything else stays ORM.

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

import datetime as dt
import functools
import json
import uuid
from typing import Any, Sequence, TypeVar

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Model, signals
from django.db.models.base import ModelState

M = TypeVar("M", bound=Model)

# A statement and its parameters: what `fetch` runs, or any connection of the same database.
Statement = tuple[str, dict | Sequence]


@functools.cache
def columns(model: type[Model], alias: str) -> str:
    """Every concrete column of `model`, qualified by `alias`, in the order `load` expects."""
    return ", ".join(f'{alias}."{f.column}"' for f in model._meta.concrete_fields)


@functools.cache
def _loader(model: type[Model]):
    fields = model._meta.concrete_fields
    names = [f.attname for f in fields]
    converters = [(i, f.from_db_value) for i, f in enumerate(fields) if hasattr(f, "from_db_value")]
    # What `Model.__init__` does with every column given by position, minus its per-field
    # bookkeeping: it was a quarter of a hop that resolves a hundred answers. Only for models that
    # keep Django's own construction (no init signal receivers, no __init__ or from_db of their own).
    plain = (
        model.__init__ is Model.__init__
        and model.from_db.__func__ is Model.from_db.__func__  # type: ignore[attr-defined]
        and not (signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model))
    )
    return len(fields), names, converters, plain


def load(model: type[M], row: Sequence[Any], start: int = 0) -> M:
    """The instance in `row[start:]`, whose columns were selected with `columns(model, …)`: what
    `Model.from_db` returns."""
    width, names, converters, plain = _loader(model)
    values = list(row[start : start + width])
    for i, convert in converters:
        values[i] = convert(values[i], None, connection)
    if not plain:
        return model.from_db(connection.alias, names, values)
    instance = model.__new__(model)
    instance.__dict__.update(zip(names, values, strict=True))
    state = instance._state = ModelState()
    state.adding, state.db = False, connection.alias
    return instance


def width(model: type[Model]) -> int:
    return _loader(model)[0]


def fetch(sql: str, params: dict | Sequence | None = None) -> list[tuple]:
    """The rows of one hot statement, run as a prepared statement (see the module's note)."""
    with _server_bound_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def fetch_each(statements: Sequence[Statement]) -> list[list[tuple]]:
    """The rows of each statement, in order."""
    return [fetch(sql, params) for sql, params in statements]


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


def insert(instance: Model) -> Statement:
    """`insert_many` for one new instance."""
    return insert_many([instance])


def insert_many(instances: Sequence[Model]) -> Statement:
    """The INSERT of new instances of one model — their defaults and `auto_now_add` times filled
    in as `save()` would — returning every column of each, in their order and in the order `load`
    reads them; for any connection of the database (the turn lock's saves a turn's reply with
    it). The rows go as one JSON parameter (`as_json`)."""
    model = type(instances[0])
    fields = _inserted_fields(model)
    return _insert_sql(model), [as_json([{f.column: f.pre_save(instance, True) for f in fields} for instance in instances])]


def as_json(value: Any) -> str:
    """A parameter for a set-based statement: rows or ids as one JSON text, read on the server with
    `json_to_recordset` or `json_array_elements_text`. psycopg adapts a string in one step, where
    a list costs it a Python call per element: a hop resolving a hundred answers spent about a
    sixth of its time adapting its lists."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _inserted_fields(model: type[Model]) -> list:
    return [f for f in model._meta.concrete_fields if not f.db_returning]


def uuids_in(param: str) -> str:
    """SQL for the set of ids in `param`, a parameter given as `as_json` of a list of UUIDs."""
    return f"(SELECT id::uuid FROM json_array_elements_text({param}::json) AS ids(id))"


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a JSON parameter")


@functools.cache
def _insert_sql(model: type[Model]) -> str:
    table = model._meta.db_table
    fields = _inserted_fields(model)
    names = ", ".join(f'"{f.column}"' for f in fields)
    types = ", ".join(f'"{f.column}" {f.db_type(connection)}' for f in fields)
    return f"INSERT INTO {table} ({names}) SELECT {names} FROM json_to_recordset(%s::json) AS v({types}) RETURNING {columns(model, table)}"


def fetch_models(model: type[M], sql: str, params: dict | Sequence | None = None) -> list[M]:
    """Rows of `sql`, which selects `columns(model, …)` first, as instances of `model`."""
    return [load(model, row) for row in fetch(sql, params)]
