"""Slots: a semaphore for one loop whose size changes while it is used."""

from __future__ import annotations

import asyncio

import pytest

from pilothouse.push.slots import Slots


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_free_slots_are_taken_without_yielding() -> None:
    slots = Slots(2)
    # A coroutine that never suspends completes on its first send.
    coroutine = slots.acquire()
    with pytest.raises(StopIteration):
        coroutine.send(None)
    assert slots.taken == 1


async def test_try_acquire_takes_only_a_free_slot_and_a_waiter_keeps_the_one_handed_it() -> None:
    slots = Slots(1)
    assert slots.try_acquire() and slots.taken == 1
    assert not slots.try_acquire() and slots.taken == 1  # full: refused, nothing taken
    waiter = asyncio.create_task(slots.acquire())
    await settle()
    slots.resize(2)  # the room made goes to the waiter, not to a later try_acquire
    assert not slots.try_acquire()
    await waiter
    assert slots.taken == 2


async def test_waiters_are_served_first_come_first_served() -> None:
    slots = Slots(1)
    await slots.acquire()
    order: list[int] = []

    async def take(number: int) -> None:
        await slots.acquire()
        order.append(number)

    tasks = [asyncio.create_task(take(n)) for n in range(3)]
    await settle()
    assert order == [] and slots.waiting() == 3
    for expected in ([0], [0, 1], [0, 1, 2]):
        slots.release()
        await settle()
        assert order == expected
    await asyncio.gather(*tasks)


async def test_growing_wakes_as_many_waiters_as_now_fit() -> None:
    slots = Slots(1)
    await slots.acquire()
    tasks = [asyncio.create_task(slots.acquire()) for _ in range(4)]
    await settle()
    slots.resize(3)
    await settle()
    assert sum(task.done() for task in tasks) == 2
    assert slots.taken == 3 and slots.waiting() == 2
    slots.resize(10)
    await settle()
    assert all(task.done() for task in tasks)
    assert slots.taken == 5


async def test_shrinking_keeps_held_slots_and_makes_new_takers_wait() -> None:
    slots = Slots(3)
    for _ in range(3):
        await slots.acquire()
    slots.resize(1)
    late = asyncio.create_task(slots.acquire())
    await settle()
    slots.release()
    slots.release()
    await settle()
    assert not late.done(), "2 taken would still be more than the new size of 1"
    slots.release()
    await settle()
    assert late.done() and slots.taken == 1


async def test_a_cancelled_waiter_leaves_no_slot_taken() -> None:
    slots = Slots(1)
    await slots.acquire()
    waiter = asyncio.create_task(slots.acquire())
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    slots.release()
    assert slots.taken == 0 and slots.waiting() == 0
    await slots.acquire()
    assert slots.taken == 1


async def test_a_waiter_cancelled_as_it_is_handed_a_slot_gives_it_back() -> None:
    slots = Slots(1)
    await slots.acquire()
    waiter = asyncio.create_task(slots.acquire())
    await settle()
    slots.release()  # hands the slot to the waiter, which has not run yet
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert slots.taken == 0


def test_sizes_below_one_and_extra_releases_are_refused() -> None:
    with pytest.raises(ValueError, match="1 or more"):
        Slots(0)
    slots = Slots(1)
    with pytest.raises(ValueError, match="1 or more"):
        slots.resize(0)
    with pytest.raises(RuntimeError, match="released more often"):
        slots.release()
