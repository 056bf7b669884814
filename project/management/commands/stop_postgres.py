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
        if embedded_pg.stop_server(Path(data_dir)):
            self.stdout.write(f"Stopped the embedded Postgres in {Path(data_dir) / 'postgres'}.")
        else:
            self.stdout.write("No embedded Postgres is running here.")
