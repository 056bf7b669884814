"""One error base for everything a person can be told: a message for them and an HTTP status.

Services raise subclasses; each entry point turns any of them into its own shape in one place —
a card or partial for an HTMX request, an error frame on the websocket, a JSON error for the
API. Nothing here imports an app, so every app may raise these. The database or Redis being out
of reach is not a bug but a moment: `unavailable_error` names it, and it is shown as a 503 (a
frame on the websocket) instead of a server error.
"""

from __future__ import annotations

import psycopg
import redis
from django.db import DatabaseError
from psycopg_pool import PoolTimeout
from pydantic import ValidationError


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


class Unavailable(ClarionError):
    """The database could not be had in time: every pooled connection was busy (a burst waits
    for one only so long), or Postgres is unreachable (restarting, dropped connections); or, with
    several workers, Redis (sessions, live updates) is unreachable. The same request succeeds
    once it is back."""

    status = 503
    retry_after_seconds = 5


def first_error(exc: ValidationError) -> str:
    """What a person is told of input that failed its schema: its first error, as worded."""
    return exc.errors()[0]["msg"].removeprefix("Value error, ")


# Redis out of reach (down, restarting, too slow to answer).
_REDIS_OUTAGES = (redis.ConnectionError, redis.TimeoutError)
# What an entry point catches to ask `unavailable_error` whether it is an outage.
OUTAGE_ERRORS = (DatabaseError, *_REDIS_OUTAGES)


def unavailable_error(exc: BaseException) -> Unavailable | None:
    """What to tell the person when `exc` (or what caused it) means the database or Redis could
    not be reached in time; None for any other failure, which stays a bug to report."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _REDIS_OUTAGES):
            # Not "nothing was saved": Redis can fail after a write (a message saved, then
            # its publishing to the tabs).
            return Unavailable("Clarion cannot reach Redis right now. Try again in a moment.")
        if isinstance(seen, PoolTimeout):
            return Unavailable("Clarion is busy right now. Nothing was saved — try again in a moment.")
        # A connection that failed or was cut has no SQLSTATE, or one of class 08 (connection
        # exception) or 57P (the server shutting down, restarting or ending the session).
        if isinstance(seen, psycopg.OperationalError):
            state = seen.sqlstate or ""
            if not state or state.startswith(("08", "57P")):
                return Unavailable("Clarion cannot reach its database right now. Nothing was saved — try again in a moment.")
            return None
        seen = seen.__cause__ or seen.__context__
    return None
