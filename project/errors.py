"""One error base for everything a person can be told: a message for them and an HTTP status.

Services raise subclasses; each entry point turns any of them into its own shape in one place —
a card or partial for an HTMX request, an error frame on the websocket, a JSON error for the
API. Nothing here imports an app, so every app may raise these.
"""

from __future__ import annotations


class ClarionError(Exception):
    """A failure the acting person should see, worded for them. Nothing was written."""

    status: int = 400

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class NotFound(ClarionError):
    """The thing does not exist — or belongs to someone else, which looks the same from outside."""

    status = 404


class Rejected(ClarionError):
    """Input that does not fit (too long, out of range, not allowed here)."""

    status = 422


class Conflict(ClarionError):
    """The request raced something that already happened (answered elsewhere, nothing to retry)."""

    status = 409
