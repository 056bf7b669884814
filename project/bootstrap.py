"""First-run conveniences for `manage.py up`, done before Django reads its settings."""
from __future__ import annotations

import os
import secrets
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


def _dotenv_defines(name: str) -> bool:
    dotenv = BASE_DIR / ".env"
    if not dotenv.exists():
        return False
    return any(line.split("=", 1)[0].strip() == name for line in dotenv.read_text().splitlines() if "=" in line)
