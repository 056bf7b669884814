#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    if sys.argv[1:2] == ["up"]:
        from project.bootstrap import ensure_local_secret_key, use_per_run_metrics_dir

        ensure_local_secret_key()
        use_per_run_metrics_dir()  # /metrics then counts every process of this run (multiprocess mode)
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError as exc:
        # A wall of traceback helps nobody when the database is simply not there.
        sys.exit(f"clarion: cannot reach Postgres: {str(exc).strip().splitlines()[0]}")


if __name__ == "__main__":
    main()
