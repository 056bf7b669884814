"""The PostgreSQL backend, pointed at the embedded server — which starts on first connection.

Settings name this engine when no DATABASE_URL is configured. Importing settings, loading the
models (Django builds connection objects then) and commands that never query (`help`, `check`,
`makemigrations --check`) start nothing; the first real connection starts (or reuses) the server
in `DATA_DIR/postgres` and fills in its host and port. Code that opens its own connections from
`settings.DATABASES` calls `project.embedded_pg.resolve_address()` first.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base as postgresql

from project.embedded_pg import resolve_address


class DatabaseWrapper(postgresql.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        resolve_address(self.settings_dict)
        return super().get_connection_params()
