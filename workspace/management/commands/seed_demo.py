"""`manage.py seed_demo`: a demo user with a realistic workspace, for exploring a local install."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from workspace.demo_content import seed_demo_workspace, workspace_counts

DEFAULT_USERNAME = "demo"
DEFAULT_PASSWORD = "demo"


class Command(BaseCommand):
    help = "Create a demo user (staff + superuser when new) and, if that user has no projects yet, a demo workspace."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=DEFAULT_USERNAME, help=f"Demo username (default: {DEFAULT_USERNAME}).")
        parser.add_argument(
            "--password",
            default=None,
            help=f"Password; default {DEFAULT_PASSWORD!r} for a new user. Given explicitly, it is also set on an existing user.",
        )
        parser.add_argument(
            "--generated-password",
            action="store_true",
            help=f"Never leave {DEFAULT_PASSWORD!r} on the demo superuser: a new user, or one still using it, gets a generated password, printed once.",
        )

    def handle(self, *args: object, username: str, password: str | None, generated_password: bool = False, **options: object) -> None:
        User = get_user_model()
        with transaction.atomic():
            user, created = User._default_manager.get_or_create(
                **{User.USERNAME_FIELD: username}, defaults={"is_staff": True, "is_superuser": True}
            )
            if generated_password and password is None and (created or user.check_password(DEFAULT_PASSWORD)):
                password = secrets.token_urlsafe(12)
            if created or password is not None:
                user.set_password(password if password is not None else DEFAULT_PASSWORD)
                user.save(update_fields=["password"])
            self.stdout.write(f"{'Created' if created else 'Using existing'} user {username}.")

            if user.projects.exists():
                self.stdout.write(f"Demo workspace already exists for {username}; no content was changed.")
                counts = workspace_counts(user=user)
            else:
                counts = seed_demo_workspace(user=user)

        self.stdout.write(f"Demo workspace: {counts['projects']} projects, {counts['tasks']} tasks, {counts['notes']} notes")
        if created or password is not None:
            login = f"Log in as {username} / {password if password is not None else DEFAULT_PASSWORD}"
        else:
            login = f"Log in as {username} (password unchanged)"
        self.stdout.write(self.style.SUCCESS(login))
