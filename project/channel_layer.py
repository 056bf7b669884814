"""The channel layer when several workers share the work: channels_redis's publish/subscribe layer.

Every frame here is HTML for the tabs open right now; a tab that is not connected gets nothing
either way (it loads the conversation from the database when it comes back), so delivery to
whoever is subscribed is exactly what is needed. The list-based layer (`channels_redis.core`)
makes several Redis round trips per message received, one message at a time per process, and
drops frames beyond its capacity; with publish/subscribe a worker receives on one connection
that reads whatever has arrived, and a group send is one PUBLISH. One process alone uses
Channels' own in-memory layer (settings.py).
"""

from __future__ import annotations


def redis_layer_config(url: str, *, prefix: str) -> dict:
    """CHANNEL_LAYERS["default"] for channels_redis (its publish/subscribe layer)."""
    return {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [{"address": url}], "prefix": prefix},
    }
