"""The heap keeper: freezes what is alive, and compacts (collects the frozen heap) when due."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from pilothouse.heap import HeapKeeper


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    """Whatever a test froze is handed back to the collector afterwards."""
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.collect()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Node:
    """One half of a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_tick_freezes_what_is_alive_so_full_collections_skip_it() -> None:
    keeper = HeapKeeper(clock=Clock())
    held = [Node() for _ in range(1000)]
    assert keeper.tick() is None
    assert gc.get_freeze_count() >= len(held)
    tracked_before = len(gc.get_objects())
    assert tracked_before < gc.get_freeze_count()  # the frozen are no longer scanned


def test_a_cycle_dropped_after_a_freeze_waits_for_the_next_compaction() -> None:
    clock = Clock()
    keeper = HeapKeeper(clock=clock, compact_every=60.0)
    ref = cycle()
    keeper.tick()  # frozen while alive (no one refers to it, but it was not collected)
    gc.collect()
    assert ref() is not None, "a frozen cycle is not collected"
    clock.now = 30.0
    assert keeper.tick() is None  # not due yet
    clock.now = 61.0
    done = keeper.tick()
    assert done is not None and done.collected >= 2
    assert ref() is None
    assert keeper.compactions == [done] and done.frozen > 0


def test_a_compaction_waits_for_a_quiet_moment_but_not_forever() -> None:
    clock = Clock()
    busy = [True]
    keeper = HeapKeeper(lambda: busy[0], clock=clock, compact_every=60.0)
    clock.now = 61.0
    assert keeper.tick() is None  # a push is in flight: freeze only
    busy[0] = False
    clock.now = 70.0
    assert keeper.tick() is not None  # quiet: compacted
    busy[0] = True
    clock.now = 131.0
    assert keeper.tick() is None
    clock.now = 191.0  # twice the interval since the last compaction: overdue
    assert keeper.tick() is not None


def test_intervals_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        HeapKeeper(settle_every=0)
    with pytest.raises(ValueError, match="positive"):
        HeapKeeper(compact_every=-1)


async def test_run_freezes_every_interval_until_cancelled() -> None:
    keeper = HeapKeeper(settle_every=0.01)
    task = asyncio.get_running_loop().create_task(keeper.run())
    await asyncio.sleep(0.05)
    assert gc.get_freeze_count() > 0
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
