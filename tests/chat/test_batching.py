"""chat.batching: requests that arrive together share a hop; `settled` waits for all of them."""

from __future__ import annotations

import asyncio

from chat.batching import Batcher


def _batcher(release: asyncio.Event, finished: list[int]) -> Batcher[int, int]:
    async def hop(items: list[int]) -> list[int | Exception]:
        await release.wait()
        return list(items)

    async def finish(results: list[int | Exception]) -> list[int | Exception]:
        finished.extend(r for r in results if isinstance(r, int))
        return results

    return Batcher(hop, finish, limit=2)


async def test_settled_returns_once_everything_submitted_is_finished():
    release, finished = asyncio.Event(), []
    batcher = _batcher(release, finished)
    await batcher.settled(timeout=5)  # nothing submitted yet: at once
    submitted = [asyncio.create_task(batcher.submit(i)) for i in range(5)]  # three hops of at most two
    await asyncio.sleep(0)
    waiting = asyncio.create_task(batcher.settled(timeout=5))
    await asyncio.sleep(0.05)
    assert not waiting.done() and finished == []

    release.set()
    await waiting
    assert sorted(finished) == [0, 1, 2, 3, 4] and all(t.done() for t in submitted)
    assert await asyncio.gather(*submitted) == [0, 1, 2, 3, 4]


async def test_settled_gives_up_after_its_timeout():
    release, finished = asyncio.Event(), []
    batcher = _batcher(release, finished)
    submitted = asyncio.create_task(batcher.submit(1))
    await asyncio.sleep(0)
    await asyncio.wait_for(batcher.settled(timeout=0.05), timeout=5)
    assert finished == [] and not submitted.done()
    release.set()
    assert await submitted == 1


def test_a_modest_queue_goes_in_halves_and_a_long_one_limit_at_a_time():
    async def unused(items):  # pragma: no cover - never called
        return items

    batcher: Batcher[int, int] = Batcher(unused, unused, limit=100, least=25)
    assert [batcher.hop_size(n) for n in (1, 24, 25, 49, 50, 99, 199, 200, 499)] == [1, 24, 25, 25, 25, 50, 100, 100, 100]
    only_limit: Batcher[int, int] = Batcher(unused, unused, limit=2)
    assert [only_limit.hop_size(n) for n in (1, 2, 5)] == [1, 2, 2]


async def test_a_burst_goes_in_hops_that_halve_the_queue():
    release, sizes = asyncio.Event(), []

    async def hop(items: list[int]) -> list[int | Exception]:
        sizes.append(len(items))
        await release.wait()
        return list(items)

    async def finish(results: list[int | Exception]) -> list[int | Exception]:
        return results

    batcher: Batcher[int, int] = Batcher(hop, finish, limit=100, least=25)
    first = asyncio.create_task(batcher.submit(0))
    try:
        await asyncio.wait_for(_until(lambda: sizes == [1]), timeout=5)  # a request alone goes at once
        rest = [asyncio.create_task(batcher.submit(i)) for i in range(1, 100)]
    finally:
        release.set()
    assert await asyncio.gather(first, *rest) == list(range(100))
    assert sizes == [1, 50, 25, 24]


async def _until(condition) -> None:
    while not condition():
        await asyncio.sleep(0)
