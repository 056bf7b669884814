"""The channel layers: Redis for several workers; for one process, the in-process layer, which
keeps the channel layer contract (delivery, groups, capacity, message and group expiry, flush)."""

import asyncio

import pytest
from channels.exceptions import ChannelFull
from django.conf import settings

from project import channel_layer
from project.channel_layer import InProcessChannelLayer
from tests.questions.test_durability import redis_url  # noqa: F401  (the session fixture: a reachable Redis)


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


def test_one_process_uses_it():
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"] == "project.channel_layer.InProcessChannelLayer"


async def test_a_message_is_received_once_as_it_was_sent():
    layer = InProcessChannelLayer()
    channel = await layer.new_channel()
    message = {"type": "html", "text": ["first"]}
    await layer.send(channel, message)
    message["text"].append("changed after sending")
    assert await asyncio.wait_for(layer.receive(channel), 1) == {"type": "html", "text": ["first"]}
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(channel), 0.05)


async def test_a_receiver_waits_for_the_next_message():
    layer = InProcessChannelLayer()
    channel = await layer.new_channel()
    waiting = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    await layer.send(channel, {"type": "html", "n": 1})
    assert await asyncio.wait_for(waiting, 1) == {"type": "html", "n": 1}


async def test_a_group_reaches_its_members_and_only_them():
    layer = InProcessChannelLayer()
    a, b, c = [await layer.new_channel() for _ in range(3)]
    await layer.group_add("conversation-1", a)
    await layer.group_add("conversation-1", b)
    await layer.group_add("conversation-2", c)
    await layer.group_discard("conversation-1", b)
    await layer.group_send("conversation-1", {"type": "html", "n": 1})
    assert await asyncio.wait_for(layer.receive(a), 1) == {"type": "html", "n": 1}
    for other in (b, c):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(layer.receive(other), 0.05)


async def test_a_full_channel_refuses_a_send_and_misses_a_group_send():
    layer = InProcessChannelLayer(capacity=2)
    full, reading = await layer.new_channel(), await layer.new_channel()
    for name in (full, reading):
        await layer.group_add("g", name)
    await layer.send(full, {"type": "x", "n": 1})
    await layer.send(full, {"type": "x", "n": 2})
    with pytest.raises(ChannelFull):
        await layer.send(full, {"type": "x", "n": 3})
    await layer.group_send("g", {"type": "x", "n": 4})  # no error: the full channel misses it
    assert [(await asyncio.wait_for(layer.receive(full), 1))["n"] for _ in range(2)] == [1, 2]
    assert (await asyncio.wait_for(layer.receive(reading), 1))["n"] == 4


async def test_expired_messages_are_dropped_and_a_channel_nobody_reads_leaves_its_groups():
    layer = InProcessChannelLayer(expiry=0.2, capacity=1)
    dead, alive = await layer.new_channel(), await layer.new_channel()
    for name in (dead, alive):
        await layer.group_add("g", name)
    await layer.send(dead, {"type": "x", "n": 1})
    await asyncio.sleep(0.3)
    await layer.send(dead, {"type": "x", "n": 2})  # full of expired messages: room again, and out of "g"
    await layer.group_send("g", {"type": "x", "n": 3})
    assert (await asyncio.wait_for(layer.receive(alive), 1))["n"] == 3
    assert (await asyncio.wait_for(layer.receive(dead), 1))["n"] == 2
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(dead), 0.05)

    await layer.send(alive, {"type": "x", "n": 4})
    await asyncio.sleep(0.3)
    with pytest.raises(TimeoutError):  # expired before it was read
        await asyncio.wait_for(layer.receive(alive), 0.05)


async def test_a_membership_older_than_the_group_expiry_ends():
    layer = InProcessChannelLayer(group_expiry=0.05)
    channel = await layer.new_channel()
    await layer.group_add("g", channel)
    await asyncio.sleep(0.1)
    await layer.group_send("g", {"type": "x"})
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(channel), 0.05)


async def test_flush_forgets_every_message_and_group():
    layer = InProcessChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("g", channel)
    await layer.send(channel, {"type": "x"})
    await layer.flush()
    await layer.group_send("g", {"type": "x"})
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(channel), 0.05)


async def test_names_are_validated_as_by_channels():
    layer = InProcessChannelLayer()
    with pytest.raises(TypeError):
        await layer.send("bad name!x", {"type": "x"})
    with pytest.raises(TypeError):
        await layer.group_add("bad group!", await layer.new_channel())
