from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Prepare the database (migrate, seed the demo workspace) and serve Clarion with Daphne."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-seed", action="store_true", help="Skip creating the demo workspace.")

    def handle(self, *args, host: str, port: int, no_seed: bool, **options):
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database ready.")
        if not no_seed:
            call_command("seed_demo", stdout=self.stdout)
        self._index_knowledge_base()
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"Clarion is running at {url}  (Ctrl+C to stop)"))
        self.stdout.flush()
        from daphne.cli import CommandLineInterface

        CommandLineInterface().run(
            ["--bind", host, "--port", str(port), "--verbosity", "0", settings.ASGI_APPLICATION.replace(".application", ":application")]
        )

    def _index_knowledge_base(self) -> None:
        # Only new and changed sources are summarised, so this is quick after the first run. A
        # failure is reported but never keeps Clarion from starting: the previous index serves.
        try:
            call_command("rebuild_kb_index", stdout=self.stdout, stderr=self.stderr)
        except Exception as exc:
            self.stderr.write(f"Knowledge base: rebuild failed ({exc}); serving with the previous index.")
