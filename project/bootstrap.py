"""First-run conveniences for `manage.py up`, done before Django reads its settings."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def ensure_local_secret_key() -> None:
    """Give a fresh install a persistent SECRET_KEY in .data/ unless one is configured.

    Keeps DEBUG off by default without asking a newcomer to invent a key; an operator who sets
    SECRET_KEY (environment or .env) is never overridden.
    """
    if os.environ.get("SECRET_KEY") or _dotenv_defines("SECRET_KEY"):
        return
    data_dir = Path(os.environ.get("CLARION_DATA_DIR", BASE_DIR / ".data"))
    key_file = data_dir / "secret_key"
    if not key_file.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)


def use_per_run_metrics_dir() -> Path | None:
    """Put prometheus-client in multiprocess mode with a fresh directory for this run of `up`.

    Must run before prometheus_client is imported (it picks its value store at import). Skipped
    when PROMETHEUS_MULTIPROC_DIR is configured: whoever starts several workers on one directory
    empties it before starting them (see README). Directories left by runs whose process is gone
    (a crash, a kill -9) are removed here.
    """
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR") or _dotenv_defines("PROMETHEUS_MULTIPROC_DIR"):
        return None
    root = Path(os.environ.get("CLARION_DATA_DIR", BASE_DIR / ".data")) / "metrics"
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob("run-*"):
        pid = stale.name.removeprefix("run-")
        if not pid.isdigit() or not _process_alive(int(pid)) or int(pid) == os.getpid():
            shutil.rmtree(stale, ignore_errors=True)
    run_dir = root / f"run-{os.getpid()}"
    run_dir.mkdir()
    atexit.register(shutil.rmtree, run_dir, True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(run_dir)
    return run_dir


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _dotenv_defines(name: str) -> bool:
    dotenv = BASE_DIR / ".env"
    if not dotenv.exists():
        return False
    return any(line.split("=", 1)[0].strip() == name for line in dotenv.read_text().splitlines() if "=" in line)
