from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Stop the embedded Postgres of this folder (CLARION_DATA_DIR), e.g. one left running by a killed `manage.py up`."

    def handle(self, *args: object, **options: object) -> None:
        from project import embedded_pg

        data_dir = settings.DATABASES["default"].get("EMBEDDED_DATA_DIR")
        if not data_dir:
            raise CommandError("DATABASE_URL is set: Clarion uses that server, not an embedded one; nothing to stop.")
        path = Path(data_dir)
        if embedded_pg.running_postmaster(path) is not None:
            # A running `manage.py up` would start it again at once: it is stopped with Ctrl+C there.
            host, port = embedded_pg.ensure_server(path, database=None)
            if sessions := embedded_pg.other_clients(host=host, port=port):
                raise CommandError(
                    f"The embedded Postgres in {path / 'postgres'} is in use ({sessions} open sessions) and keeps running. "
                    "Stop what uses it first: Ctrl+C stops `manage.py up`, and the server it started with it."
                )
        if embedded_pg.stop_server(path):
            self.stdout.write(f"Stopped the embedded Postgres in {path / 'postgres'}.")
        else:
            self.stdout.write("No embedded Postgres is running here.")
