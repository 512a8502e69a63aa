"""PushWorkers: throttled concurrent pushes off the push queue, and the throttle default."""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict

import pytest

from pilothouse.config.model import ConfigKey
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest
from pilothouse.push.workers import PushWorkers, default_push_throttle, push_throttle


def key(i: int) -> ConfigKey:
    return ConfigKey("Sidecar", "default", f"s{i}")


def push(i: int) -> PushRequest:
    return PushRequest.for_configs([key(i)], start=0.0)


def test_configured_throttle_wins_and_zero_means_auto() -> None:
    assert push_throttle(7) == 7
    assert push_throttle(0) == push_throttle(-1) == default_push_throttle() == 100


async def test_throttle_bound_is_never_exceeded() -> None:
    queue: PushQueue[int] = PushQueue()
    running = 0
    peak = 0
    done: list[int] = []
    rng = random.Random(7)

    async def slow(conn: int, request: PushRequest) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(rng.randint(1, 5)):
            await asyncio.sleep(0)
        running -= 1
        done.append(conn)

    workers = PushWorkers(queue, slow, throttle=5)
    assert workers.throttle == 5
    for conn in range(60):
        queue.enqueue(conn, push(conn))
    task = asyncio.create_task(workers.run())
    while len(done) < 60:
        await asyncio.sleep(0)
        assert workers.running() <= 5
    queue.shutdown()
    await asyncio.wait_for(task, timeout=2)
    assert peak == 5
    assert workers.stats.max_concurrent == 5
    assert sorted(done) == list(range(60))
    assert workers.stats.pushes == 60
    assert queue.in_flight() == 0


async def test_pushes_are_marked_done_and_follow_ups_pushed_after() -> None:
    queue: PushQueue[str] = PushQueue()
    gate = asyncio.Event()
    seen: list[PushRequest] = []

    async def gated(conn: str, request: PushRequest) -> None:
        seen.append(request)
        if len(seen) == 1:
            await gate.wait()

    workers = PushWorkers(queue, gated, throttle=4)
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(1))
    await asyncio.sleep(0.01)
    queue.enqueue("a", push(2))
    queue.enqueue("a", push(3))
    await asyncio.sleep(0.01)
    assert len(seen) == 1, "a second push started for a connection already in flight"
    gate.set()
    await asyncio.sleep(0.01)
    assert [r.configs_updated for r in seen] == [{key(1)}, {key(2), key(3)}]
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)


async def test_a_failing_push_is_marked_done_and_frees_its_slot() -> None:
    queue: PushQueue[str] = PushQueue()
    calls: Counter[str] = Counter()

    async def failing(conn: str, request: PushRequest) -> None:
        calls[conn] += 1
        raise RuntimeError("send failed")

    workers = PushWorkers(queue, failing, throttle=1)
    task = asyncio.create_task(workers.run())
    for conn in ("a", "b", "c"):
        queue.enqueue(conn, push(0))
    # Each failure is logged with its traceback: on a loaded machine that takes a while,
    # so wait for the three pushes (bounded) rather than for a fixed 10 ms.
    for _ in range(200):
        if workers.stats.failures == 3:
            break
        await asyncio.sleep(0.01)
    assert calls == {"a": 1, "b": 1, "c": 1}
    assert workers.stats.failures == 3
    assert queue.in_flight() == 0
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)


async def test_queue_time_is_observed_per_push() -> None:
    queue: PushQueue[str] = PushQueue()
    observed: list[float] = []

    async def quick(conn: str, request: PushRequest) -> None:
        await asyncio.sleep(0)

    queue.enqueue("a", push(0))
    queue.enqueue("b", push(1))
    await asyncio.sleep(0.03)
    workers = PushWorkers(queue, quick, throttle=2, observe_queue_time=observed.append)
    task = asyncio.create_task(workers.run())
    await asyncio.sleep(0.01)
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)
    assert len(observed) == 2
    assert all(t >= 0.03 for t in observed)
    assert workers.stats.max_queue_time == max(observed)
    assert workers.stats.total_queue_time == pytest.approx(sum(observed))


async def test_run_waits_for_pushes_in_flight_after_shutdown() -> None:
    queue: PushQueue[str] = PushQueue()
    finished: list[str] = []

    async def slow(conn: str, request: PushRequest) -> None:
        await asyncio.sleep(0.02)
        finished.append(conn)

    workers = PushWorkers(queue, slow, throttle=3)
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(0))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)
    assert finished == ["a"]


async def test_cancelling_run_cancels_pushes_in_flight() -> None:
    queue: PushQueue[str] = PushQueue()
    started = asyncio.Event()
    cancelled: list[str] = []

    async def forever(conn: str, request: PushRequest) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(conn)
            raise

    workers = PushWorkers(queue, forever, throttle=2)
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(0))
    await asyncio.wait_for(started.wait(), timeout=1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == ["a"]
    assert queue.in_flight() == 0


@pytest.mark.parametrize("seed", range(5))
async def test_random_traffic_one_push_per_connection_and_nothing_lost(seed: int) -> None:
    rng = random.Random(seed)
    queue: PushQueue[int] = PushQueue()
    flying: set[int] = set()
    overlap: list[int] = []
    received: dict[int, set[ConfigKey]] = defaultdict(set)
    sent: dict[int, set[ConfigKey]] = defaultdict(set)

    async def push_fn(conn: int, request: PushRequest) -> None:
        if conn in flying:
            overlap.append(conn)
        flying.add(conn)
        for _ in range(rng.randint(0, 4)):
            await asyncio.sleep(0)
        received[conn] |= request.configs_updated
        flying.discard(conn)

    workers = PushWorkers(queue, push_fn, throttle=3)
    task = asyncio.create_task(workers.run())
    for step in range(300):
        conn = rng.randrange(8)
        queue.enqueue(conn, push(step))
        sent[conn].add(key(step))
        if rng.random() < 0.5:
            await asyncio.sleep(0)
    while queue.pending() or queue.in_flight():
        await asyncio.sleep(0)
    queue.shutdown()
    await asyncio.wait_for(task, timeout=2)
    assert overlap == []
    assert received == sent
    assert workers.stats.max_concurrent <= 3


async def test_a_failing_queue_time_observer_costs_no_push() -> None:
    queue: PushQueue[str] = PushQueue()
    pushed: list[str] = []

    async def record(conn: str, request: PushRequest) -> None:
        pushed.append(conn)

    def broken(seconds: float) -> None:
        raise RuntimeError("metrics bug")

    workers = PushWorkers(queue, record, throttle=2, observe_queue_time=broken)
    task = asyncio.create_task(workers.run())
    for conn in ("a", "b", "c"):
        queue.enqueue(conn, push(0))
    # every push goes through although each one's observer raises (waited for, not slept
    # on: a fixed 20 ms was too short once under a loaded machine)
    async with asyncio.timeout(5):
        while len(pushed) < 3 or workers.running() or queue.in_flight():
            await asyncio.sleep(0.001)
    assert sorted(pushed) == ["a", "b", "c"] and not task.done()
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)


async def test_the_throttle_changes_while_the_workers_run() -> None:
    queue: PushQueue[int] = PushQueue()
    gate = asyncio.Event()
    running = 0
    peaks: list[int] = []

    async def held(conn: int, request: PushRequest) -> None:
        nonlocal running
        running += 1
        peaks.append(running)
        await gate.wait()
        running -= 1

    workers = PushWorkers(queue, held, throttle=2)
    task = asyncio.create_task(workers.run())
    for conn in range(10):
        queue.enqueue(conn, push(conn))
    for _ in range(10):
        await asyncio.sleep(0)
    assert workers.running() == 2
    assert workers.set_throttle(5) == 5
    for _ in range(10):
        await asyncio.sleep(0)
    assert workers.running() == 5, "raising the throttle starts waiting pushes at once"
    assert workers.set_throttle(1) == 1
    gate.set()
    while queue.pending() or workers.running():
        await asyncio.sleep(0)
    # Once the five running pushes finished, the rest ran one at a time.
    assert peaks[:5] == [1, 2, 3, 4, 5]
    assert max(peaks[5:]) == 1
    assert workers.set_throttle(0) == default_push_throttle()
    queue.shutdown()
    await asyncio.wait_for(task, timeout=2)


async def test_a_push_that_finishes_in_the_call_frees_its_slot_at_once() -> None:
    queue: PushQueue[int] = PushQueue()
    pushed: list[int] = []

    def inline(conn: int, request: PushRequest) -> None:
        pushed.append(conn)
        assert queue.is_in_flight(conn)

    workers = PushWorkers(queue, inline, throttle=2)
    for conn in range(7):
        queue.enqueue(conn, push(conn))
    task = asyncio.create_task(workers.run())
    while len(pushed) < 7:
        await asyncio.sleep(0)
    assert pushed == list(range(7))  # FIFO, two slots were enough
    assert workers.running() == 0 and queue.in_flight() == 0
    assert workers.stats.pushes == 7 and workers.stats.failures == 0
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)


async def test_a_returned_future_holds_the_slot_until_it_is_resolved() -> None:
    queue: PushQueue[str] = PushQueue()
    waiters: dict[str, asyncio.Future[None]] = {}

    def started(conn: str, request: PushRequest) -> asyncio.Future[None]:
        waiters[conn] = asyncio.get_running_loop().create_future()
        return waiters[conn]

    workers = PushWorkers(queue, started, throttle=1)
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(0))
    queue.enqueue("b", push(1))
    await asyncio.sleep(0.01)
    assert list(waiters) == ["a"] and workers.running() == 1
    assert queue.is_in_flight("a") and queue.is_pending("b")
    waiters["a"].set_result(None)
    await asyncio.sleep(0.01)
    assert list(waiters) == ["a", "b"] and not queue.is_in_flight("a")
    waiters["b"].set_result(None)
    await asyncio.sleep(0.01)
    assert queue.in_flight() == 0 and workers.stats.pushes == 2
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)


async def test_futures_past_the_deadline_are_given_up_and_the_rest_wait() -> None:
    """One timer for every future: each is given up ``deadline`` seconds after its push
    started (a stalled stream), while a future resolved in time finishes at once."""
    queue: PushQueue[str] = PushQueue()
    waiters: dict[str, asyncio.Future[None]] = {}
    finished: dict[str, float] = {}
    began: dict[str, float] = {}
    loop = asyncio.get_running_loop()

    def started(conn: str, request: PushRequest) -> asyncio.Future[None]:
        began.setdefault(conn, loop.time())
        waiter = loop.create_future()
        waiter.add_done_callback(lambda _: finished.setdefault(conn, loop.time()))
        waiters[conn] = waiter
        return waiter

    # a deadline well beyond the 0.1 s between the pushes: a loaded machine that wakes
    # this test late must not see the first stalled push given up before it looks
    workers = PushWorkers(queue, started, throttle=10, deadline=0.5)
    task = asyncio.create_task(workers.run())
    begin = loop.time()
    queue.enqueue("stalled-1", push(0))
    queue.enqueue("quick", push(1))
    await asyncio.sleep(0.1)
    queue.enqueue("stalled-2", push(2))
    await asyncio.sleep(0)
    waiters["quick"].set_result(None)
    await asyncio.sleep(0.01)
    assert not queue.is_in_flight("quick") and queue.is_in_flight("stalled-1")
    while queue.in_flight():
        assert loop.time() - begin < 4.0, "a stalled push was never given up"
        await asyncio.sleep(0.01)
    # each given up its own deadline after its push started (the second started 0.1 s
    # later: the first's timer would have given it up early), and not much later (the
    # loop above bounds that; a loaded machine may wake the timer late)
    assert began["stalled-2"] - began["stalled-1"] >= 0.1
    assert 0.5 <= finished["stalled-1"] - began["stalled-1"] < 2.0
    assert 0.5 <= finished["stalled-2"] - began["stalled-2"] < 2.0
    assert workers.stats.pushes == 3 and workers.running() == 0
    queue.enqueue("stalled-1", push(3))  # the timer re-arms for later pushes
    await asyncio.sleep(0)
    assert queue.is_in_flight("stalled-1")
    while queue.in_flight():
        assert loop.time() - begin < 6.0
        await asyncio.sleep(0.01)
    queue.shutdown()
    await asyncio.wait_for(task, timeout=1)
