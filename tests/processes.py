"""Subprocesses the tests start (Daphne servers, a private redis-server)."""

from __future__ import annotations

import subprocess


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
