"""PushQueue: FIFO per connection, merging while pending or in flight, removal and shutdown."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
)

from pilothouse.config.model import ConfigKey
from pilothouse.push.clock import ManualClock
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest, TriggerReason


def key(name: str) -> ConfigKey:
    return ConfigKey("DestinationRule", "default", name)


def push(*names: str) -> PushRequest:
    return PushRequest.for_configs([key(n) for n in names], start=0.0)


def drain_now(queue: PushQueue[str]) -> list[tuple[str, set[ConfigKey]]]:
    out: list[tuple[str, set[ConfigKey]]] = []
    while (item := queue.try_dequeue()) is not None:
        out.append((item.conn, set(item.request.configs_updated)))
    return out


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def test_fifo_order() -> None:
    queue: PushQueue[str] = PushQueue(ManualClock())
    for conn in ("a", "b", "c"):
        queue.enqueue(conn, push(conn))
    assert queue.pending() == 3
    assert [conn for conn, _ in drain_now(queue)] == ["a", "b", "c"]
    assert queue.in_flight() == 3


def test_merge_while_pending_keeps_position() -> None:
    queue: PushQueue[str] = PushQueue(ManualClock())
    queue.enqueue("a", push("x"))
    queue.enqueue("b", push("y"))
    queue.enqueue("a", push("z"))
    assert queue.pending() == 2
    assert drain_now(queue) == [("a", {key("x"), key("z")}), ("b", {key("y")})]


def test_merge_while_in_flight_goes_back_to_the_end_after_done() -> None:
    queue: PushQueue[str] = PushQueue(ManualClock())
    queue.enqueue("a", push("x"))
    first = queue.try_dequeue()
    assert first is not None
    assert first.conn == "a"
    queue.enqueue("a", push("y"))
    queue.enqueue("a", push("z"))
    queue.enqueue("b", push("w"))
    assert queue.pending() == 1  # only b: a is in flight, its new requests wait aside
    assert queue.is_in_flight("a")
    assert not queue.is_pending("a")
    queue.enqueue("c", push("v"))
    queue.mark_done("a")
    assert drain_now(queue) == [
        ("b", {key("w")}),
        ("c", {key("v")}),
        ("a", {key("y"), key("z")}),
    ]


def test_mark_done_without_new_requests_forgets_the_connection() -> None:
    queue: PushQueue[str] = PushQueue(ManualClock())
    queue.enqueue("a", push("x"))
    queue.try_dequeue()
    queue.mark_done("a")
    assert "a" not in queue
    assert (queue.pending(), queue.in_flight()) == (0, 0)
    queue.mark_done("a")  # twice is harmless
    assert queue.try_dequeue() is None


def test_remove_leaves_nothing_behind() -> None:
    queue: PushQueue[str] = PushQueue(ManualClock())
    queue.enqueue("pending", push("x"))
    queue.enqueue("busy", push("y"))
    queue.enqueue("other", push("z"))
    queue.try_dequeue()  # "pending" in flight
    queue.try_dequeue()  # "busy" in flight
    queue.enqueue("busy", push("later"))
    queue.remove("busy")
    queue.remove("other")
    queue.remove("never-seen")
    assert "busy" not in queue
    assert "other" not in queue
    queue.mark_done("busy")  # the closed stream's push finishing: not re-enqueued
    assert "busy" not in queue
    assert (queue.pending(), queue.in_flight()) == (0, 1)
    queue.remove("pending")
    assert (queue.pending(), queue.in_flight()) == (0, 0)


def test_queue_time_runs_from_first_enqueue_to_dequeue() -> None:
    clock = ManualClock(start=100.0)
    queue: PushQueue[str] = PushQueue(clock)
    queue.enqueue("a", push("x"))
    clock.advance(0.25)
    queue.enqueue("a", push("y"))  # merging does not reset the wait
    clock.advance(0.5)
    item = queue.try_dequeue()
    assert item is not None
    assert item.queue_time == 0.75
    clock.advance(1.0)
    queue.enqueue("a", push("z"))  # arrives while in flight
    clock.advance(2.0)
    queue.mark_done("a")
    again = queue.try_dequeue()
    assert again is not None
    assert again.queue_time == 2.0


async def test_dequeue_waits_for_an_item() -> None:
    queue: PushQueue[str] = PushQueue()
    waiter = asyncio.create_task(queue.dequeue())
    await settle()
    assert not waiter.done()
    queue.enqueue("a", push("x"))
    item = await asyncio.wait_for(waiter, timeout=1)
    assert item is not None
    assert (item.conn, item.request) == ("a", push("x"))
    assert queue.is_in_flight("a")


async def test_two_waiters_get_different_connections() -> None:
    queue: PushQueue[str] = PushQueue()
    waiters = [asyncio.create_task(queue.dequeue()) for _ in range(2)]
    await settle()
    queue.enqueue("a", push("x"))
    queue.enqueue("b", push("y"))
    items = await asyncio.wait_for(asyncio.gather(*waiters), timeout=1)
    assert sorted(item.conn for item in items if item is not None) == ["a", "b"]


async def test_shutdown_unblocks_dequeue() -> None:
    queue: PushQueue[str] = PushQueue()
    waiters = [asyncio.create_task(queue.dequeue()) for _ in range(3)]
    await settle()
    queue.shutdown()
    assert await asyncio.wait_for(asyncio.gather(*waiters), timeout=1) == [None, None, None]
    queue.enqueue("a", push("x"))
    assert await queue.dequeue() is None
    assert queue.pending() == 0
    assert queue.is_shut_down


async def test_dequeue_can_be_cancelled() -> None:
    queue: PushQueue[str] = PushQueue()
    waiter = asyncio.create_task(queue.dequeue())
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    queue.enqueue("a", push("x"))
    item = await asyncio.wait_for(queue.dequeue(), timeout=1)
    assert item is not None
    assert item.conn == "a"


# --- state machine: never two pushes in flight per connection, nothing lost ------------------

CONNS = ["c1", "c2", "c3", "c4"]
KEYS = [key(n) for n in "pqrstu"]


class PushQueueMachine(RuleBasedStateMachine):
    in_flight = Bundle("in_flight")

    def __init__(self) -> None:
        super().__init__()
        self.queue: PushQueue[str] = PushQueue(ManualClock())
        self.outstanding: dict[str, set[ConfigKey]] = {c: set() for c in CONNS}
        self.enqueued: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()
        self.flying: set[str] = set()

    @rule(conn=st.sampled_from(CONNS), keys=st.sets(st.sampled_from(KEYS), min_size=1))
    def enqueue(self, conn: str, keys: set[ConfigKey]) -> None:
        self.queue.enqueue(conn, PushRequest.for_configs(keys, TriggerReason.CONFIG, start=0.0))
        self.outstanding[conn] |= keys
        self.enqueued[conn] += 1

    @rule(target=in_flight)
    def dequeue(self) -> str:
        item = self.queue.try_dequeue()
        if item is None:
            assert self.queue.pending() == 0
            return "none"
        self._deliver(item.conn, item.request)
        return item.conn

    @rule(conn=consumes(in_flight))
    def mark_done(self, conn: str) -> None:
        if conn in self.flying:
            self.flying.discard(conn)
            self.queue.mark_done(conn)

    @rule(conn=st.sampled_from(CONNS))
    def remove(self, conn: str) -> None:
        self.queue.remove(conn)
        self.flying.discard(conn)
        self.outstanding[conn].clear()
        self.delivered[conn] = self.enqueued[conn] = 0
        assert conn not in self.queue

    @precondition(lambda self: bool(self.flying))
    @rule(conn=st.sampled_from(CONNS))
    def mark_done_unknown_is_harmless(self, conn: str) -> None:
        if conn not in self.flying:
            self.queue.mark_done(conn)

    def _deliver(self, conn: str, request: PushRequest) -> None:
        assert conn not in self.flying, f"{conn} has two pushes in flight"
        self.flying.add(conn)
        self.outstanding[conn] -= request.configs_updated
        self.delivered[conn] += request.trigger_count

    @invariant()
    def sizes_match(self) -> None:
        assert self.queue.in_flight() == len(self.flying)
        assert self.queue.pending() <= len(CONNS)

    def teardown(self) -> None:
        # Finish every push and drain: everything enqueued must come out, exactly once.
        for _ in range(len(CONNS) + 1):
            for conn in list(self.flying):
                self.flying.discard(conn)
                self.queue.mark_done(conn)
            while (item := self.queue.try_dequeue()) is not None:
                self._deliver(item.conn, item.request)
        assert self.queue.pending() == 0
        for conn in CONNS:
            assert not self.outstanding[conn], f"{conn} lost {self.outstanding[conn]}"
            assert self.delivered[conn] == self.enqueued[conn]


PushQueueMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)
TestPushQueueMachine = PushQueueMachine.TestCase


async def test_connections_waiting_with_the_same_request_share_one_merge() -> None:
    """A push reaching many connections that still wait with the previous push's request
    merges that pair once; each connection still gets what a merge of its own gives."""
    queue: PushQueue[str] = PushQueue()
    first, second, third = push("a"), push("b"), push("c")
    for conn in ("x", "y", "z"):
        queue.enqueue(conn, first)
    queue.enqueue("w", third)  # another pending request: its own merge
    for conn in ("x", "y", "z", "w"):
        queue.enqueue(conn, second)
    items = {}
    while (item := queue.try_dequeue()) is not None:
        items[item.conn] = item.request
    assert items["x"] is items["y"] is items["z"]
    assert items["x"].configs_updated == first.merge(second).configs_updated == {key("a"), key("b")}
    assert items["w"].configs_updated == {key("c"), key("b")}
    assert [item for item in items] == ["x", "y", "z", "w"]  # FIFO places kept
