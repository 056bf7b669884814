"""`manage.py rebuild_kb_index [--force]`: re-read the knowledge sources, summarise the new and
changed ones, publish the new index when complete. Exits non-zero when any source failed.

It runs as a rebuild job (knowledge.models.RebuildJob), like the admin's button: the admin shows
its progress and outcome, and a rebuild that an earlier run left unfinished is reported and its
finished summaries reused. `--status` only reports the latest job."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper

from knowledge import services
from knowledge.models import RebuildJob
from knowledge.services import RebuildProgress
from knowledge.sources import SourceFolderMissing


class ProgressBar:
    """A plain-text bar: redrawn in place on a terminal, a line per ~10% otherwise (logs, CI)."""

    WIDTH = 30

    def __init__(self, out: OutputWrapper) -> None:
        self.out = out
        self.tty = out.isatty()
        self.last_step = -1
        self.started = time.monotonic()

    def __call__(self, progress: RebuildProgress) -> None:
        if progress.error:
            self._line_break()
            self.out.write(f"  failed: {progress.source_id}: {progress.error}")
        if progress.total == 0:
            return
        step = progress.done * (100 if self.tty else 10) // progress.total
        if step == self.last_step and progress.done != progress.total:
            return
        self.last_step = step
        filled = self.WIDTH * progress.done // progress.total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        failed = f", {progress.failed} failed" if progress.failed else ""
        text = f"Summarising [{bar}] {progress.done}/{progress.total}{failed} ({time.monotonic() - self.started:.1f} s)"
        if self.tty:
            self.out.write("\r" + text, ending="\n" if progress.done == progress.total else "")
        else:
            self.out.write(text)
        self.out.flush()

    def _line_break(self) -> None:
        if self.tty and 0 <= self.last_step < 100:
            self.out.write("")


class Command(BaseCommand):
    help = "Rebuild the knowledge-base index: summarise new and changed sources, then swap the index in atomically."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="Summarise every source again, changed or not.")
        parser.add_argument("--status", action="store_true", help="Report the latest rebuild (any process's) and exit.")

    def handle(self, *args: object, force: bool, status: bool, **options: object) -> None:
        if status:
            self._report_status()
            return
        bar = ProgressBar(self.stderr)
        try:
            job = services.request_rebuild(force=force, via="command")
            report = services.run_rebuild_job(job_id=job.pk, progress=bar)
        except services.RebuildAlreadyRunning as exc:
            raise CommandError(f"{exc} Nothing was changed.") from exc
        except SourceFolderMissing as exc:
            raise CommandError(f"{exc} The current index stays in service.") from exc
        self.stdout.write(f"Knowledge base: {services.describe_report(report)}")
        if report.failures:
            for failure in report.failures:
                self.stderr.write(f"  {failure.source_id}: {failure.error}")
            raise CommandError(
                f"{len(report.failures)} source(s) failed; they are retried on the next run "
                "(sources that failed keep their previous summary, if any)."
            )

    def _report_status(self) -> None:
        services.fail_stale_rebuild_jobs()
        job = RebuildJob.objects.first()
        if job is None:
            self.stdout.write("No rebuild has been run yet.")
            return
        line = f"Rebuild #{job.pk}: {job.get_status_display()}"
        if job.is_active:
            line += f", {job.done}/{job.total} summarised" + (f", {job.failed} failed" if job.failed else "")
            line += f" (on {job.worker or 'no process yet'})"
        elif job.status == RebuildJob.Status.SUCCEEDED:
            line += f" at {job.finished_at:%Y-%m-%d %H:%M:%S}: {job.outcome}"
        else:
            line += f" at {job.finished_at:%Y-%m-%d %H:%M:%S}: {job.error}"
        self.stdout.write(line)
