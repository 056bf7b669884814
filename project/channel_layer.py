"""The channel layers: Redis when several workers share the work, else in-memory.

Redis (`redis_layer_config`): channels_redis keeps every websocket of one process in ONE Redis
list, and its default capacity of 100 drops whatever is sent beyond that, silently (a log line at
INFO). A burst of answers on a worker with 250 open tabs lost replies that way. The capacity here
is per process, so it is set for a worker's whole share of tabs; messages still expire after 60 s.

In-memory: Channels' layer, without its per-message full scan.

The stock `InMemoryChannelLayer` runs `_clean_expired` — a walk over every channel's queue and
every group's members — on each `receive` and `group_send`. With one process serving hundreds of
open tabs that walk was ~6 % of the server's CPU per answer. Expiry is coarse anyway (messages
expire after 60 s, group memberships after a day), so here it runs at most once per
`CLEAN_INTERVAL_SECONDS`; and a group send puts the message on each member's queue directly
instead of creating one task per member.
"""

from __future__ import annotations

import asyncio
import time
from copy import deepcopy

from channels.layers import InMemoryChannelLayer as StockInMemoryChannelLayer

CLEAN_INTERVAL_SECONDS = 1.0
# Frames waiting for one process's websockets at once (see above): 10 000 × a frame of a few KB
# is tens of MB of Redis at worst, and only for the 60 s a message lives.
REDIS_PROCESS_CAPACITY = 10_000


def redis_layer_config(url: str, *, prefix: str) -> dict:
    """CHANNEL_LAYERS["default"] for channels_redis."""
    return {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # channels_redis blocks 5 s reading an idle channel; redis-py's socket timeout must be
            # longer, or an idle tab's read times out and Daphne closes its websocket (1011).
            "hosts": [{"address": url, "socket_timeout": 30}],
            "prefix": prefix,
            "capacity": REDIS_PROCESS_CAPACITY,
        },
    }


class InMemoryChannelLayer(StockInMemoryChannelLayer):
    _cleaned_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at < CLEAN_INTERVAL_SECONDS:
            return
        self._cleaned_at = now
        super()._clean_expired()

    async def group_send(self, group, message):
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        members = self.groups.get(group)
        if not members:
            return
        expires = time.time() + self.expiry
        for channel in list(members):
            queue = self.channels.get(channel)
            if queue is None:
                queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
            try:
                queue.put_nowait((expires, deepcopy(message)))
            except asyncio.QueueFull:
                pass  # a tab that stopped reading misses frames, as with the stock layer
