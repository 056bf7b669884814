"""`manage.py create_adapter_token NAME`: a bearer token for POST /api/v1/reply, printed once."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge import services
from knowledge.models import AdapterToken


class Command(BaseCommand):
    help = "Create a token for the adapter API (POST /api/v1/reply). The token is printed once and stored hashed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Who will use the token, e.g. discord-bot.")

    def handle(self, *args: object, name: str, **options: object) -> None:
        name = name.strip()
        if not name or len(name) > 100:
            raise CommandError("NAME must be 1 to 100 characters.")
        if AdapterToken.objects.filter(name=name).exists():
            raise CommandError(f"A token named {name!r} exists already; revoke it in the admin or pick another name.")
        _, raw = services.create_adapter_token(name=name)
        self.stderr.write(f"Token for {name!r} (shown once; send it as 'Authorization: Bearer <token>'):")
        self.stdout.write(raw)
