"""The asyncio Debouncer driver, with a manual clock and with short real timings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from pilothouse.config.model import ConfigKey
from pilothouse.push.clock import ManualClock
from pilothouse.push.debounce import Debouncer, DebounceSettings
from pilothouse.push.request import PushRequest, TriggerReason


def key(i: int) -> ConfigKey:
    return ConfigKey("VirtualService", "default", f"vs-{i}")


def config_event(i: int, start: float = 0.0) -> PushRequest:
    return PushRequest.for_configs([key(i)], start=start)


def eds_event(i: int) -> PushRequest:
    return PushRequest.for_configs([key(i)], TriggerReason.ENDPOINT, start=0.0, full=False)


async def settle() -> None:
    """Let the debouncer's task run until it blocks again."""
    for _ in range(20):
        await asyncio.sleep(0)


class Recorder:
    def __init__(self, clock: ManualClock | None = None, hold: asyncio.Event | None = None):
        self.pushes: list[PushRequest] = []
        self.times: list[float] = []
        self.clock = clock
        self.hold = hold
        self.running = 0
        self.max_running = 0

    async def __call__(self, request: PushRequest) -> None:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.pushes.append(request)
        self.times.append(self.clock.now() if self.clock else asyncio.get_running_loop().time())
        try:
            if self.hold is not None:
                await self.hold.wait()
            else:
                await asyncio.sleep(0)
        finally:
            self.running -= 1


class Runner:
    """Starts debouncers in tasks; the fixture closes them and checks that run() returns."""

    def __init__(self) -> None:
        self.started: list[tuple[Debouncer, asyncio.Task[None]]] = []

    def __call__(self, debouncer: Debouncer) -> asyncio.Task[None]:
        task = asyncio.create_task(debouncer.run())
        self.started.append((debouncer, task))
        return task


@pytest.fixture
async def start() -> AsyncIterator[Runner]:
    runner = Runner()
    yield runner
    for debouncer, _ in runner.started:
        debouncer.close()
    await asyncio.wait_for(asyncio.gather(*(task for _, task in runner.started)), timeout=2)


async def test_burst_of_fifty_events_is_one_merged_push(start: Runner) -> None:
    recorder = Recorder()
    observed: list[float] = []
    debouncer = Debouncer(
        DebounceSettings(debounce_after=0.05, debounce_max=5.0),
        recorder,
        observe_debounce_time=observed.append,
    )
    start(debouncer)
    await settle()  # the debouncer is waiting for its first event
    loop = asyncio.get_running_loop()
    began = loop.time()
    # The burst arrives within one turn of the loop, as a source loading many objects
    # sends it: no stall of a loaded machine can open a quiet period inside it.
    for i in range(50):
        debouncer.enqueue(config_event(i, start=float(i)))
    while not recorder.pushes:
        await asyncio.sleep(0.005)
        assert loop.time() - began < 20, "no push within 20 s"
    await asyncio.sleep(0.1)  # nothing else follows
    assert len(recorder.pushes) == 1
    push = recorder.pushes[0]
    assert push.configs_updated == {key(i) for i in range(50)}
    assert push.reasons == {TriggerReason.CONFIG: 50}
    assert push.start == 0.0
    assert recorder.times[0] - began >= 0.05
    assert len(observed) == 1
    assert observed[0] >= 0.05
    stats = debouncer.stats
    assert (stats.events, stats.pushes, stats.debounced_pushes) == (50, 1, 1)
    assert stats.max_debounce_time == observed[0]


async def test_continuous_stream_is_released_by_debounce_max(start: Runner) -> None:
    clock = ManualClock()
    recorder = Recorder(clock)
    debouncer = Debouncer(DebounceSettings(debounce_after=0.1, debounce_max=10.0), recorder, clock)
    start(debouncer)
    await settle()
    for i in range(192):  # one event every 62.5 ms for 12 s: never quiet for 100 ms
        debouncer.enqueue(config_event(i))
        await settle()
        clock.advance(0.0625)
        await settle()
    # Released at 10 s exactly, holding the events of 0 s … 9.9375 s.
    assert recorder.times == [10.0]
    assert recorder.pushes[0].configs_updated == {key(i) for i in range(160)}
    assert debouncer.stats.last_debounce_time == 10.0
    clock.advance(0.1)  # quiet: the rest goes out
    await settle()
    assert len(recorder.pushes) == 2
    assert recorder.pushes[1].configs_updated == {key(i) for i in range(160, 192)}


async def test_quiet_period_restarts_with_each_event(start: Runner) -> None:
    clock = ManualClock()
    recorder = Recorder(clock)
    debouncer = Debouncer(DebounceSettings(debounce_after=0.1), recorder, clock)
    start(debouncer)
    debouncer.enqueue(config_event(1))
    await settle()
    clock.advance(0.09)
    debouncer.enqueue(config_event(2))
    await settle()
    clock.advance(0.09)
    await settle()
    assert recorder.pushes == []
    clock.advance(0.01)
    await settle()
    assert recorder.times == [pytest.approx(0.19)]
    assert clock.pending_timers() == 0


async def test_pushes_never_overlap_and_keep_merging(start: Runner) -> None:
    clock = ManualClock()
    hold = asyncio.Event()
    recorder = Recorder(clock, hold)
    debouncer = Debouncer(DebounceSettings(debounce_after=0.1), recorder, clock)
    start(debouncer)
    debouncer.enqueue(config_event(0))
    await settle()
    clock.advance(0.1)
    await settle()
    assert len(recorder.pushes) == 1
    assert debouncer.state.in_flight
    for i in range(1, 6):  # these arrive while the first push is in flight
        debouncer.enqueue(config_event(i))
        clock.advance(1.0)
        await settle()
    assert len(recorder.pushes) == 1, "released while a push was in flight"
    hold.set()  # the first push finishes: the overdue batch goes at once
    await settle()
    assert len(recorder.pushes) == 2
    assert recorder.pushes[1].configs_updated == {key(i) for i in range(1, 6)}
    assert recorder.max_running == 1


async def test_pushes_never_overlap_in_real_time(start: Runner) -> None:
    pushed: list[PushRequest] = []
    active = 0
    overlaps = 0

    async def slow_push(request: PushRequest) -> None:
        nonlocal active, overlaps
        active += 1
        overlaps += active > 1
        pushed.append(request)
        await asyncio.sleep(0.03)
        active -= 1

    debouncer = Debouncer(DebounceSettings(debounce_after=0.005, debounce_max=0.05), slow_push)
    start(debouncer)
    for i in range(40):
        debouncer.enqueue(config_event(i))
        await asyncio.sleep(0.004)
    await asyncio.sleep(0.1)
    assert overlaps == 0
    assert len(pushed) >= 2
    assert sum(p.trigger_count for p in pushed) == 40
    assert set().union(*(p.configs_updated for p in pushed)) == {key(i) for i in range(40)}


async def test_eds_skips_debounce_when_disabled(start: Runner) -> None:
    clock = ManualClock()
    recorder = Recorder(clock)
    debouncer = Debouncer(DebounceSettings(eds_debounce=False), recorder, clock)
    start(debouncer)
    debouncer.enqueue(eds_event(1))
    await settle()
    assert recorder.pushes == [eds_event(1)]
    assert recorder.times == [0.0]
    assert debouncer.stats.debounced_pushes == 0


async def test_eds_is_debounced_when_enabled(start: Runner) -> None:
    clock = ManualClock()
    recorder = Recorder(clock)
    debouncer = Debouncer(DebounceSettings(eds_debounce=True), recorder, clock)
    start(debouncer)
    debouncer.enqueue(eds_event(1))
    debouncer.enqueue(eds_event(2))
    await settle()
    assert recorder.pushes == []
    clock.advance(0.1)
    await settle()
    assert recorder.pushes == [eds_event(1).merge(eds_event(2))]


async def test_a_failing_push_does_not_stop_the_loop(start: Runner) -> None:
    clock = ManualClock()
    pushed: list[PushRequest] = []

    async def flaky(request: PushRequest) -> None:
        pushed.append(request)
        if len(pushed) == 1:
            raise RuntimeError("boom")

    debouncer = Debouncer(DebounceSettings(), flaky, clock)
    start(debouncer)
    for i in (1, 2):
        debouncer.enqueue(config_event(i))
        await settle()
        clock.advance(0.1)
        await settle()
    assert [p.configs_updated for p in pushed] == [{key(1)}, {key(2)}]
    assert not debouncer.state.in_flight


async def test_close_stops_run_and_ignores_later_events() -> None:
    clock = ManualClock()
    recorder = Recorder(clock)
    debouncer = Debouncer(DebounceSettings(), recorder, clock)
    task = asyncio.create_task(debouncer.run())
    debouncer.enqueue(config_event(1))
    await settle()
    debouncer.close()
    await asyncio.wait_for(task, timeout=1)
    debouncer.enqueue(config_event(2))
    assert debouncer.stats.events == 1
    assert recorder.pushes == []


async def test_a_failing_push_or_observer_keeps_the_loop_running(start: Runner) -> None:
    recorder = Recorder()
    failures = [True]

    async def on_push(request: PushRequest) -> None:
        if failures.pop() if failures else False:
            raise RuntimeError("generator bug")
        await recorder(request)

    def broken(seconds: float) -> None:
        raise RuntimeError("metrics bug")

    debouncer = Debouncer(
        DebounceSettings(debounce_after=0.0, debounce_max=0.0),
        on_push,
        observe_debounce_time=broken,
    )
    task = start(debouncer)
    debouncer.enqueue(config_event(1))
    await asyncio.sleep(0.02)
    debouncer.enqueue(config_event(2))
    await asyncio.sleep(0.02)
    assert not task.done()
    assert [p.configs_updated for p in recorder.pushes] == [{key(2)}]


async def test_a_failing_merge_pushes_everything_instead_of_losing_the_change(
    start: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pilothouse.push.debounce as debounce

    recorder = Recorder()
    debouncer = Debouncer(DebounceSettings(debounce_after=0.0, debounce_max=0.0), recorder)
    real = debounce.on_events
    calls = [0]

    def on_events_failing_once(*args: object) -> object:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("merge bug")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(debounce, "on_events", on_events_failing_once)
    task = start(debouncer)
    debouncer.enqueue(config_event(1, start=3.0))
    await asyncio.sleep(0.02)
    assert not task.done()
    assert len(recorder.pushes) == 1
    assert recorder.pushes[0].is_everything and recorder.pushes[0].start == 3.0
    debouncer.enqueue(config_event(2))
    await asyncio.sleep(0.02)
    assert [p.configs_updated for p in recorder.pushes[1:]] == [{key(2)}]


async def test_reconfigured_times_apply_to_the_batch_already_waiting(start: Runner) -> None:
    clock = ManualClock()
    recorder = Recorder(clock)
    debouncer = Debouncer(DebounceSettings(debounce_after=5.0), recorder, clock)
    start(debouncer)
    debouncer.enqueue(config_event(1))
    await settle()
    clock.advance(1.0)
    await settle()
    assert recorder.pushes == []
    debouncer.reconfigure(DebounceSettings(debounce_after=0.5))
    await settle()
    assert recorder.times == [1.0], "0.5 s of quiet had already passed: released at once"
    debouncer.reconfigure(DebounceSettings(debounce_after=3.0, debounce_max=4.0))
    assert debouncer.settings.debounce_max == 4.0
    debouncer.enqueue(config_event(2))
    await settle()
    clock.advance(2.9)
    await settle()
    assert len(recorder.pushes) == 1
    clock.advance(0.1)
    await settle()
    assert recorder.times == [1.0, 4.0]


async def test_turning_eds_debounce_off_releases_endpoint_pushes_at_once(start: Runner) -> None:
    clock = ManualClock()
    recorder = Recorder(clock)
    debouncer = Debouncer(DebounceSettings(debounce_after=1.0), recorder, clock)
    start(debouncer)
    debouncer.enqueue(eds_event(1))
    await settle()
    assert recorder.pushes == []
    debouncer.reconfigure(DebounceSettings(debounce_after=1.0, eds_debounce=False))
    await settle()
    assert recorder.times == [0.0]
    debouncer.enqueue(eds_event(2))
    await settle()
    assert recorder.times == [0.0, 0.0]
