"""Hot reads written in SQL, returning the same model instances the ORM would.

The statements that run on every turn and every answer are few and fixed, and on that path Django
spends more CPU compiling a queryset than Postgres spends running it (bench/README.md §7). They are
written here once, as SQL built from the models' own table and column names, and loaded through
`Model.from_db` with each field's own database converter (JSON fields), so callers get ordinary
model instances. Everything else stays ORM.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence, TypeVar

from django.db import connection
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
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def fetch_models(model: type[M], sql: str, params: dict | Sequence | None = None) -> list[M]:
    """Rows of `sql`, which selects `columns(model, …)` first, as instances of `model`."""
    return [load(model, row) for row in fetch(sql, params)]
