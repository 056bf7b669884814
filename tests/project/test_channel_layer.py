"""The Redis channel layer several workers share."""

from project import channel_layer
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
