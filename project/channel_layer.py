"""The channel layers: Redis when several workers share the work, else in-memory.

Redis (`redis_layer_config`): channels_redis's publish/subscribe layer. Every frame here is HTML
for the tabs open right now; a tab that is not connected gets nothing either way (it loads the
conversation from the database when it comes back), so delivery to whoever is subscribed is
exactly what is needed. The list-based layer (`channels_redis.core`) was tried first and cost
far more: each message received took four Redis round trips in turn (a cleanup script, a
blocking pop, a backup write, its removal), one message at a time per process. In a burst of
100 answers over two workers, every receipt was sent within 300 ms, and the tabs saw them after
1.1 s. It also dropped frames beyond its capacity (100 per process unless raised), and its
blocking read needed a socket timeout longer than its own 5 s. With publish/subscribe, a worker
receives on one connection that reads whatever has arrived, and a group send is one PUBLISH.

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


def redis_layer_config(url: str, *, prefix: str) -> dict:
    """CHANNEL_LAYERS["default"] for channels_redis (its publish/subscribe layer)."""
    return {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [{"address": url}], "prefix": prefix},
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
