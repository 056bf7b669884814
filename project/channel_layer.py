"""The channel layer when several workers share the work: channels_redis's publish/subscribe layer.

Every frame here is HTML for the tabs open right now; a tab that is not connected gets nothing
either way (it loads the conversation from the database when it comes back), so delivery to
whoever is subscribed is exactly what is needed. The list-based layer (`channels_redis.core`)
makes several Redis round trips per message received, one message at a time per process, and
drops frames beyond its capacity; with publish/subscribe a worker receives on one connection
that reads whatever has arrived, and a group send is one PUBLISH.

One process alone (no `REDIS_URL`) uses `InProcessChannelLayer`: Channels' in-memory layer with
every operation's cost bounded by what it touches. Channels' own `InMemoryChannelLayer` sweeps
every channel and every group membership of the process on each `send`, `receive` and
`group_send`, so a process with many open sockets spends time proportional to all of them on
every frame of every reply. This one keeps the same contract (the channel layer specification's
`groups` and `flush` extensions, per-channel capacity, message expiry, group expiry, the same
name validation) with the expiry work done only where a message is: expired messages are dropped
when their channel is next read or found full, and a full channel with expired messages is not
being read (a dead consumer), so it leaves its groups, as in Channels' layer.
"""

from __future__ import annotations

import asyncio
import random
import string
import time
from collections import deque
from copy import deepcopy
from typing import Any

import redis
from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer

# For every Redis connection pool (the channel layer's and the session cache's). After Redis
# restarts, a pooled connection that sat idle still holds the old socket and its next command
# fails; redis-py retries nothing by default for pools built from a URL. One retry, on a fresh
# connection, makes a restart invisible; while Redis is down the retry fails at once too.
REDIS_POOL_OPTIONS = {"retry_on_error": [redis.ConnectionError]}


def redis_layer_config(url: str, *, prefix: str) -> dict:
    """CHANNEL_LAYERS["default"] for channels_redis (its publish/subscribe layer)."""
    return {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [{"address": url, **REDIS_POOL_OPTIONS}], "prefix": prefix},
    }


class _Channel:
    """A channel's messages, oldest first, each with the time it expires; and whether a receiver waits."""

    __slots__ = ("messages", "arrived", "receivers")

    def __init__(self) -> None:
        self.messages: deque[tuple[float, dict]] = deque()
        self.arrived = asyncio.Event()
        self.receivers = 0

    def drop_expired(self, now: float) -> bool:
        """Drops the messages that expired (all at the front: they expire in the order they came)."""
        dropped = False
        while self.messages and self.messages[0][0] < now:
            self.messages.popleft()
            dropped = True
        return dropped


class InProcessChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(
        self, expiry: float = 60, group_expiry: float = 86400, capacity: int = 100, channel_capacity: dict | None = None, **kwargs: Any
    ) -> None:
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity, **kwargs)
        self.group_expiry = group_expiry
        self._channels: dict[str, _Channel] = {}
        self._groups: dict[str, dict[str, float]] = {}  # group → {channel: joined at}
        self._memberships: dict[str, set[str]] = {}  # channel → its groups

    # --- channels ---------------------------------------------------------------------------------

    async def send(self, channel: str, message: dict) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        queue = self._channels.get(channel)
        if queue is None:
            queue = self._channels[channel] = _Channel()
        now = time.time()
        capacity = self.get_capacity(channel)
        if len(queue.messages) >= capacity:
            if queue.drop_expired(now):
                for group in list(self._memberships.get(channel, ())):
                    self._leave(group, channel)  # not being read: a dead consumer
            if len(queue.messages) >= capacity:
                raise ChannelFull(channel)
        queue.messages.append((now + self.expiry, deepcopy(message)))
        queue.arrived.set()

    async def receive(self, channel: str) -> dict:
        """The first unexpired message on the channel, waiting for one if there is none. Of several
        receivers of one channel, one gets each message."""
        self.require_valid_channel_name(channel)
        queue = self._channels.get(channel)
        if queue is None:
            queue = self._channels[channel] = _Channel()
        queue.receivers += 1
        try:
            while True:
                queue.drop_expired(time.time())
                if queue.messages:
                    return queue.messages.popleft()[1]
                queue.arrived.clear()
                await queue.arrived.wait()
        finally:
            queue.receivers -= 1
            if not queue.messages and not queue.receivers and self._channels.get(channel) is queue:
                del self._channels[channel]

    async def new_channel(self, prefix: str = "specific.") -> str:
        return f"{prefix}.inmemory!{''.join(random.choice(string.ascii_letters) for _ in range(12))}"

    # --- groups -----------------------------------------------------------------------------------

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        self._groups.setdefault(group, {})[channel] = time.time()
        self._memberships.setdefault(channel, set()).add(group)

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_channel_name(channel)
        self.require_valid_group_name(group)
        self._leave(group, channel)

    def _leave(self, group: str, channel: str) -> None:
        members = self._groups.get(group)
        if members is not None:
            members.pop(channel, None)
            if not members:
                del self._groups[group]
        groups = self._memberships.get(channel)
        if groups is not None:
            groups.discard(group)
            if not groups:
                del self._memberships[channel]

    async def group_send(self, group: str, message: dict) -> None:
        """To every channel of the group; a full channel misses the message (as in Channels' layers)."""
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        joined_after = time.time() - self.group_expiry
        for channel, joined_at in list(self._groups.get(group, {}).items()):
            if joined_at < joined_after:
                self._leave(group, channel)
                continue
            try:
                await self.send(channel, message)
            except ChannelFull:
                pass

    # --- flush --------------------------------------------------------------------------------------

    async def flush(self) -> None:
        self._channels, self._groups, self._memberships = {}, {}, {}

    async def close(self) -> None:
        pass  # nothing is held outside this process's memory
