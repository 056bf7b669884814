from __future__ import annotations

import ipaddress
import socket
import threading
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import OperationalError, connections

from project import embedded_pg, serving

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}


class Command(BaseCommand):
    help = "Prepare the database (migrate, seed the demo workspace) and serve Clarion with Daphne."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-seed", action="store_true", help="Skip creating the demo workspace.")

    def handle(self, *args: object, host: str, port: int, no_seed: bool, **options: object) -> None:
        ensure_address_free(host, port)
        data_dir = self._embedded_data_dir()
        owned = data_dir if data_dir is not None and self._start_embedded_database(data_dir) else None
        # While Clarion serves, the database this command started is started again should it stop.
        stopping = threading.Event()
        watch = embedded_pg.keep_running(owned, until=stopping) if owned is not None else None
        try:
            self._prepare_and_serve(host=host, port=port, no_seed=no_seed)
        finally:
            stopping.set()
            if watch is not None:
                watch.join()  # so that it cannot start again the server stopped below
            if owned is not None:
                # Ctrl+C ends Daphne; the database this command started goes with it.
                connections.close_all()
                embedded_pg.stop_server(owned)
                self.stdout.write("Stopped the embedded Postgres.")
            elif data_dir is not None and embedded_pg.running_postmaster(data_dir) is not None:
                self.stdout.write("The embedded Postgres was in use before this run and keeps running (manage.py stop_postgres stops it).")

    def _prepare_and_serve(self, *, host: str, port: int, no_seed: bool) -> None:
        self._check_database()
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database ready.")
        if not no_seed:
            exposed = serves_beyond_this_machine(host)
            if exposed:
                self.stdout.write("Clarion is reachable beyond this machine: the demo user gets a generated password, not demo/demo.")
            call_command("seed_demo", stdout=self.stdout, generated_password=exposed)
        self._index_knowledge_base()
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"Clarion is running at {url}  (Ctrl+C to stop)"))
        self.stdout.flush()
        from daphne.cli import CommandLineInterface

        application = settings.ASGI_APPLICATION.replace(".application", ":application")
        CommandLineInterface().run(serving.daphne_arguments(host=host, port=port, application=application))

    def _check_database(self) -> None:
        """Postgres' own reason, at once, when the database cannot be reached (a wrong
        DATABASE_URL): the pool would retry for DATABASE_POOL_TIMEOUT_SECONDS and then say only
        that it timed out."""
        import psycopg

        try:
            psycopg.connect(embedded_pg.conninfo(settings.DATABASES["default"])).close()
        except psycopg.OperationalError as exc:
            raise OperationalError(str(exc)) from exc

    def _embedded_data_dir(self) -> Path | None:
        data_dir = settings.DATABASES["default"].get("EMBEDDED_DATA_DIR")
        return Path(data_dir) if data_dir else None

    def _start_embedded_database(self, data_dir: Path) -> bool:
        """Start (or reuse) the embedded server; True when this run owns it: it started it, or
        found one nobody is connected to (left behind by a run that was killed)."""
        host, port = embedded_pg.ensure_server(data_dir, database=settings.DATABASES["default"]["NAME"])
        return embedded_pg.launched_here(data_dir) or embedded_pg.other_clients(host=host, port=port) == 0

    def _index_knowledge_base(self) -> None:
        # Only new and changed sources are summarised, so this is quick after the first run. A
        # failure is reported but never keeps Clarion from starting: the previous index serves.
        try:
            call_command("rebuild_kb_index", stdout=self.stdout, stderr=self.stderr)
        except Exception as exc:
            self.stderr.write(f"Knowledge base: rebuild failed ({exc}); serving with the previous index.")


def ensure_address_free(host: str, port: int) -> None:
    """Raises CommandError, before anything starts, when nothing can listen on host:port — most
    often a Clarion already running there. Daphne would only find out after the migrations and
    the seeding, with a line under "Clarion is running". Bound the way Daphne's listener binds
    (address reuse on), so a port left in TIME_WAIT by a stopped run does not count as taken."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        raise CommandError(
            f"Cannot serve on {host}:{port}: {exc.strerror or exc}. Is Clarion already running there? "
            "Stop it with Ctrl+C, or choose another port with --port."
        ) from exc


def serves_beyond_this_machine(host: str) -> bool:
    """Bound to an address other machines reach, or — DEBUG off — named by a real host name in
    ALLOWED_HOSTS (behind a proxy): then no superuser may keep a well-known password."""
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    real_names = [name for name in settings.ALLOWED_HOSTS if name not in LOOPBACK_NAMES]
    return not loopback or (not settings.DEBUG and bool(real_names))
