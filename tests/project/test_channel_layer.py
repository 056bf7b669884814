"""The in-memory channel layer: same delivery and expiry as Channels' own, less bookkeeping."""

import time

from project import channel_layer
from project.channel_layer import InMemoryChannelLayer
from tests.questions.test_durability import redis_url  # noqa: F401  (the session fixture: a reachable Redis)


async def test_group_send_reaches_every_member_and_only_them():
    layer = InMemoryChannelLayer()
    a, b, c = [await layer.new_channel() for _ in range(3)]
    await layer.group_add("conversation-1", a)
    await layer.group_add("conversation-1", b)
    await layer.group_add("conversation-2", c)
    await layer.group_send("conversation-1", {"type": "broadcast.html", "html": "<p>hi</p>"})
    assert await layer.receive(a) == {"type": "broadcast.html", "html": "<p>hi</p>"}
    assert await layer.receive(b) == {"type": "broadcast.html", "html": "<p>hi</p>"}
    assert c not in layer.channels  # nothing queued for the other conversation
    await layer.group_send("nobody-here", {"type": "x"})  # an empty group is fine


async def test_a_full_channel_drops_the_frame_instead_of_failing_the_sender():
    layer = InMemoryChannelLayer(capacity=1)
    slow = await layer.new_channel()
    await layer.group_add("g", slow)
    await layer.group_send("g", {"type": "first"})
    await layer.group_send("g", {"type": "second"})
    assert await layer.receive(slow) == {"type": "first"}


async def test_expired_messages_and_their_channels_still_go(monkeypatch):
    layer = InMemoryChannelLayer(expiry=0.01)
    gone = await layer.new_channel()
    await layer.group_add("g", gone)
    await layer.group_send("g", {"type": "stale"})
    time.sleep(0.02)
    monkeypatch.setattr(channel_layer, "CLEAN_INTERVAL_SECONDS", 0.0)
    layer._clean_expired()
    assert gone not in layer.channels and gone not in layer.groups.get("g", {})


async def test_redis_delivers_a_burst_to_more_tabs_than_a_list_layers_default_capacity(redis_url):
    """150 conversations, one open tab each, one frame each, all sent before any is read: every
    tab gets its frame (channels_redis's list layer dropped those beyond its capacity of 100)."""
    import asyncio
    import uuid

    from django.utils.module_loading import import_string

    config = channel_layer.redis_layer_config(redis_url, prefix=f"clarion_test_{uuid.uuid4().hex[:8]}")
    layer = import_string(config["BACKEND"])(**config["CONFIG"])
    tabs = [await layer.new_channel() for _ in range(150)]
    for n, tab in enumerate(tabs):
        await layer.group_add(f"conversation-{n}", tab)
    for n in range(len(tabs)):
        await layer.group_send(f"conversation-{n}", {"type": "broadcast.html", "html": f"<p>{n}</p>"})
    received = [await asyncio.wait_for(layer.receive(tab), 10) for tab in tabs]
    assert [m["html"] for m in received] == [f"<p>{n}</p>" for n in range(150)]
    await layer.flush()
