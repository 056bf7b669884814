"""Subprocesses the tests start (Daphne servers, a private redis-server)."""

from __future__ import annotations

import subprocess
import sys

from project.serving import daphne_arguments


def daphne_command(port: int) -> list[str]:
    """Clarion's Daphne on 127.0.0.1:`port`, listening as `manage.py up` does."""
    return [sys.executable, "-m", "daphne", *daphne_arguments(host="127.0.0.1", port=port, application="project.asgi:application")]


def stop_process(proc: subprocess.Popen | None, *, grace_seconds: float = 10) -> None:
    """Terminate politely, kill if it doesn't go within the grace period."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
