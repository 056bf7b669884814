"""Stop generating: the running turn notices a stored stop request while it streams.

The request is a timestamp on the conversation (chat.services.request_stop), so it reaches the
turn whichever worker runs it. The streaming loop asks at most every CHECK_SECONDS.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from typing import AsyncIterator

from channels.db import database_sync_to_async
from django.utils import timezone

from chat import sql

CHECK_SECONDS = 0.25


class TurnStopped(Exception):
    """The person stopped the reply; `partial` is the text streamed so far, kept as the reply."""

    def __init__(self, partial: str):
        super().__init__("stopped by the user")
        self.partial = partial


def _requested_since(conversation_id: uuid.UUID, since: dt.datetime) -> bool:
    return sql.stop_requested_since(conversation_id=conversation_id, since=since)


class StopWatch:
    """Created when a stream starts; only stop requests made after that count."""

    def __init__(self, conversation_id: uuid.UUID):
        self.conversation_id = conversation_id
        self.since = timezone.now()
        self.checked_at = time.monotonic()

    async def raise_if_requested(self, events: AsyncIterator[object], partial: str) -> None:
        if time.monotonic() - self.checked_at < CHECK_SECONDS:
            return
        self.checked_at = time.monotonic()
        if await database_sync_to_async(_requested_since)(self.conversation_id, self.since):
            if hasattr(events, "aclose"):
                await events.aclose()  # release the model's connection now, not at garbage collection
            raise TurnStopped(partial)
