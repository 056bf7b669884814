"""How Daphne serves Clarion: one argument list for `manage.py up`, the benches and the browser tests."""

from __future__ import annotations

from daphne.endpoints import build_endpoint_description_strings

# Twisted listens with a backlog of 50. When more browsers than that open connections at once
# (a burst of answers, a restart with every tab reconnecting), the kernel drops the handshakes
# that overflow it and some of those browsers see their request's connection reset. Gunicorn and
# Uvicorn listen with 2048; so does Clarion (the kernel caps it at net.core.somaxconn).
LISTEN_BACKLOG = 2048


def daphne_arguments(*, host: str, port: int, application: str) -> list[str]:
    """Daphne's command-line arguments to serve `application` on host:port. Verbosity 0: no
    access log, which would write every URL (query strings included); no Server header: which
    server runs Clarion is nobody's business."""
    (endpoint,) = build_endpoint_description_strings(host=host, port=port)
    return ["--endpoint", f"{endpoint}:backlog={LISTEN_BACKLOG}", "--verbosity", "0", "--no-server-name", application]
