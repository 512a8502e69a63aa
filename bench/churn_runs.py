"""One endpoint churn run against a converged fleet: make events at a rate, time each one.

``make_events`` makes an event every ``1/rate`` seconds for ``duration``
seconds on a thread of its own (a file write for pilothouse) and hands each
to the ledger (and, for the floor, to its batcher). ``churn`` then
waits until every proxy has every event, or ``timeout`` seconds after the last
one, and reads what the fleet received and the CPU the server used over the
window from the first event to the end of that wait.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench.churn_events import ChurnEvent, ChurnSchedule, GenerationReader
from bench.churn_ledger import ChurnLedger, LedgerTap
from bench.harness.fleet import FleetCounts, ServerGauge
from bench.harness.rounds import QUANTILES, percentiles
from pilothouse.loadtest.fleet import ProxyFleet

WAIT_POLL = 0.02


def by_quarter(completions: Sequence[float | None]) -> tuple[float, ...]:
    """The median of each quarter of the events (in order), over those complete."""
    out = []
    for quarter in range(4):
        part = completions[len(completions) * quarter // 4 : len(completions) * (quarter + 1) // 4]
        out.append(percentiles([c for c in part if c is not None], (50.0,))[0])
    return tuple(out)


@dataclass(frozen=True)
class ChurnRun:
    """What one churn run measured (times in seconds)."""

    proxies: int
    events: int
    events_seconds: float
    """First event → last event."""
    window: float
    """First event → every proxy had every event (or the wait gave up)."""
    completion: tuple[float, float, float]
    """p50, p90, p99 over complete events of the time until every proxy had the event."""
    completion_max: float
    completion_by_quarter: tuple[float, ...]
    """Median time until every proxy had the event, for each quarter of the events in
    the order they were made (a rising series: the server falls further behind)."""
    missed: int
    """Events that some proxy never had within the timeout."""
    per_proxy: tuple[float, float, float]
    """p50, p90, p99 over every (event, proxy) of the time until that proxy had it."""
    eds_responses: int
    eds_bytes: int
    cpu_seconds: float
    idle_cpu_rate: float
    load_generator_cpu_seconds: float
    """CPU time of this process (the fleet, the ledger, the event thread) over the window."""
    stream_failures: int
    nacks: int
    reconnects: int
    watch: tuple[float, ...] = ()
    """pilothouse only: per event, file write → the server's config event (from its log)."""
    beyond_measured: tuple[float, float, float] | None = None
    """pilothouse only: p50, p90, p99 over events of the time until every proxy had the
    event minus that event's own file-watch time and the push window."""
    from_release: tuple[float, float, float] | None = None
    """floor only: p50, p90, p99 over events from the release of the batch holding the
    event to the slowest proxy's ACK."""
    floor_pushes: int = 0
    floor_gate_timeouts: int = 0

    @property
    def rate(self) -> float:
        """Events made per second."""
        return (self.events - 1) / self.events_seconds if self.events_seconds > 0 else 0.0

    @property
    def responses_per_second(self) -> float:
        return self.eds_responses / self.window if self.window > 0 else 0.0

    @property
    def bytes_per_second(self) -> float:
        return self.eds_bytes / self.window if self.window > 0 else 0.0

    @property
    def cpu_cores(self) -> float:
        return self.cpu_seconds / self.window if self.window > 0 else 0.0


@dataclass(frozen=True)
class ChurnPlan:
    rate: float
    duration: float
    timeout: float


async def make_events(
    plan: ChurnPlan,
    schedule: ChurnSchedule,
    ledger: ChurnLedger,
    write: Callable[[ChurnEvent], None],
    deliver: Callable[[ChurnEvent], None] = lambda event: None,
) -> list[ChurnEvent]:
    """Make ``duration × rate`` events, one every ``1/rate`` seconds, on a thread of their
    own, so that they keep to the rate however busy the fleet keeps the event loop.

    Each event is made (its instant taken) and written (``write``, still on that thread:
    pilothouse's file), then handed to the event loop, which adds it to the ledger and
    calls ``deliver`` (the floor's batcher). A late event is followed at once by the ones
    that fell due meanwhile. Returns once the loop has every event.
    """
    loop = asyncio.get_running_loop()
    count = max(1, round(plan.duration * plan.rate))
    interval = 1.0 / plan.rate

    def accept(event: ChurnEvent) -> None:
        ledger.add(event)
        deliver(event)

    def maker() -> list[ChurnEvent]:
        made = []
        begin = time.monotonic()
        for index in range(count):
            delay = begin + index * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            event = schedule.next()
            write(event)
            loop.call_soon_threadsafe(accept, event)
            made.append(event)
        return made

    # The thread's result reaches the loop after every hand-over it queued before.
    return await asyncio.to_thread(maker)


async def churn(
    fleet: ProxyFleet,
    server: ServerGauge,
    plan: ChurnPlan,
    schedule: ChurnSchedule,
    write: Callable[[ChurnEvent], None],
    ledger: ChurnLedger,
    service_of: Mapping[str, int],
    *,
    idle_cpu_rate: float,
    deliver: Callable[[ChurnEvent], None] = lambda event: None,
    events_done: Callable[[], None] = lambda: None,
) -> tuple[ChurnRun, list[ChurnEvent]]:
    """Churn against a converged fleet, events kept in ``ledger`` (new, one per run); the
    figures and the events made."""
    tap = LedgerTap(fleet.proxies, ledger, service_of, GenerationReader())
    tap.attach()
    try:
        before = FleetCounts.of(fleet)
        cpu_before = server.cpu_seconds()
        own_before = time.process_time()
        events = await make_events(plan, schedule, ledger, write, deliver)
        events_done()
        if not events:
            raise RuntimeError("no event was made")
        give_up = events[-1].at + plan.timeout
        while ledger.pending and time.monotonic() < give_up:
            await asyncio.sleep(WAIT_POLL)
        ended = time.monotonic()
        cpu = server.cpu_seconds() - cpu_before
        own = time.process_time() - own_before
        counts = FleetCounts.of(fleet) - before
    finally:
        tap.detach()
    completions = ledger.completions()
    complete = [c for c in completions if c is not None]
    p50, p90, p99 = percentiles(complete, QUANTILES)
    pair50, pair90, pair99 = percentiles(ledger.latencies, QUANTILES)
    window = ended - events[0].at
    return (
        ChurnRun(
            proxies=len(fleet.proxies),
            events=len(events),
            events_seconds=events[-1].at - events[0].at,
            window=window,
            completion=(p50, p90, p99),
            completion_max=max(complete, default=math.nan),
            completion_by_quarter=by_quarter(completions),
            missed=len(completions) - len(complete),
            per_proxy=(pair50, pair90, pair99),
            eds_responses=counts.eds_responses,
            eds_bytes=counts.eds_bytes,
            cpu_seconds=cpu,
            idle_cpu_rate=idle_cpu_rate,
            load_generator_cpu_seconds=own,
            stream_failures=counts.stream_failures,
            nacks=counts.nacks,
            reconnects=counts.reconnects,
        ),
        events,
    )
