"""`manage.py sweep_questions`: expire overdue questions from a process of its own.

Every web process already sweeps (started by project/asgi.py on its first request); this command
is for deployments that want the sweep owned by one worker process, or a cron-style single pass
(`--once`). Running it beside the web processes is safe: each expiry is one conditional UPDATE,
so a question is expired exactly once whoever gets there first. With several processes, set
REDIS_URL so the expiry reaches the tabs connected to the web processes.
"""

from __future__ import annotations

import asyncio
from argparse import ArgumentParser

from django.conf import settings
from django.core.management.base import BaseCommand

from chat import agent, deadlines


class Command(BaseCommand):
    help = "Expire questions whose deadline has passed (and continue their conversations); --once for a single pass."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--once", action="store_true", help="Sweep once, wait for the continuations, and exit.")

    def handle(self, *args: str, once: bool, **options: object) -> None:
        asyncio.run(self._sweep(once=once))

    async def _sweep(self, *, once: bool) -> None:
        while True:
            expired = await deadlines.sweep_once()
            if expired:
                self.stdout.write(f"expired {expired} question(s)")
            if once:
                await agent.wait_for_running_turns()  # the continuations the expiries started
                return
            await asyncio.sleep(settings.QUESTION_SWEEP_SECONDS)
