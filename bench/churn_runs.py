"""One endpoint churn run against a converged fleet, and the sides that run it.

``make_events`` makes an event every ``1/rate`` seconds for ``duration`` seconds on a
thread of its own (a file write for pilothouse) and hands each to the ledger (and, for
the floor, to its batcher). ``churn`` then waits until every proxy has every event, or
``timeout`` seconds after the last one, and reads what the fleet received and the CPU the
server used over the window from the first event to the end of that wait.

``Churns`` runs it for each side: pilothouse (its events written as files, the file
watcher's share of each read back from its log), the transport floor (the same events
handed to its batcher, ``churn_floor.py``, the floor loaded with what pilothouse served)
and ``serve --workers N`` (started for the run on a copy of the mesh of its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.churn_floor import FloorBatcher, FloorPusher, Template, completions_from_release
from bench.harness.churn import (
    ChurnEvent,
    ChurnLedger,
    ChurnSchedule,
    LedgerTap,
    config_updates,
    generation,
    watch_latencies,
    write_event,
)
from bench.harness.figures import note
from bench.harness.fleet import FleetCounts, ServerGauge, converged_fleet
from bench.harness.mesh import FanoutMesh, endpoint_address
from bench.harness.process import ServerProcess
from bench.harness.rounds import QUANTILES, percentiles
from bench.harness.servers import (
    FloorControl,
    floor_load_requests,
    idle_cpu_rate,
    serving_pilothouse,
)
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.protocol.type_urls import EDS

SETTLE = 1.0
"""Seconds of quiet after a fleet converged, and the seconds its server's idle CPU is
measured over (``--settle``: a smoke run shortens both)."""
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
    """The median of ``completion`` for each quarter of the events, in order made."""
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
    """pilothouse only: ``completion`` minus each event's own watch time and push window."""
    from_release: tuple[float, float, float] | None = None
    """floor only: ``completion`` from the release of the batch holding each event."""
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
    own (so they keep to the rate however busy the event loop is), each written there
    (``write``: pilothouse's file) and handed to the loop for the ledger and ``deliver``
    (the floor's batcher). A late event is followed at once by those that fell due."""
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
    tap = LedgerTap(
        fleet.proxies, ledger, service_of, functools.lru_cache(maxsize=None)(generation)
    )
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


@dataclass(frozen=True)
class ChurnOptions:
    """The endpoint churn's command line (``endpoint_churn.py``), as runs and report read it."""

    sizes: tuple[int, ...]
    runs: int
    rate: float
    duration: float
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    file_debounce: float
    debounce_after: float
    debounce_max: float
    connect_timeout: float
    timeout: float
    gate: float
    workers: int = 1
    settle: float = SETTLE

    @property
    def push_window(self) -> float:
        """The longest an event waits in the push debouncer under steady churn: a batch goes
        after ``debounce_after`` of quiet or ``debounce_max`` after its first event; when
        events come closer together than ``debounce_after`` there is no quiet."""
        if self.debounce_after < 1.0 / self.rate:
            return min(self.debounce_after, self.debounce_max)
        return self.debounce_max

    @property
    def pilothouse_debounce(self) -> float:
        return self.file_debounce + self.push_window


def as_three(values: tuple[float, ...]) -> tuple[float, float, float]:
    first, second, third = values
    return first, second, third


class Churns:
    """Every side's churn runs; the floor serves what pilothouse served before any event."""

    def __init__(self, options: ChurnOptions, mesh: FanoutMesh, work: Path, control: FloorControl):
        self.options, self.mesh, self.work, self.control = options, mesh, work, control
        self.schedule = ChurnSchedule(mesh.services)
        self.plan = ChurnPlan(options.rate, options.duration, options.timeout)
        self.service_of = {mesh.cluster(s): s for s in range(mesh.services)}
        self.templates: dict[int, Template] = {}
        self.push_window = options.push_window

    async def _fleet(self, stack: contextlib.AsyncExitStack, target: str, proxies: int) -> Any:
        return await converged_fleet(
            stack, target, proxies, self.mesh.namespace_names,
            streams_per_channel=self.options.streams_per_channel,
            timeout=self.options.connect_timeout, settle=self.options.settle,
        )  # fmt: skip

    async def pilothouse(
        self, server: ServerProcess, target: str, mesh: FanoutMesh, proxies: int
    ) -> ChurnRun:
        """One churn run of a pilothouse server serving ``mesh`` (where events are written)."""
        async with contextlib.AsyncExitStack() as stack:
            fleet = await self._fleet(stack, target, proxies)
            if not self.templates:
                probe = fleet.proxies[0]
                for service in range(self.mesh.services):
                    name, address = self.mesh.cluster(service), endpoint_address(service, 0, 0)
                    self.templates[service] = Template(name, probe.holds(EDS)[name].body, address)
                await self.control.load(floor_load_requests(probe))
            idle = await idle_cpu_rate(server, self.options.settle)
            offset = len(server.output())
            ledger = ChurnLedger(proxies, mesh.services)
            run, events = await churn(
                fleet, server, self.plan, self.schedule, lambda event: write_event(mesh, event),
                ledger, self.service_of, idle_cpu_rate=idle,
            )  # fmt: skip
        watch = watch_latencies(events, config_updates(server.output(), offset))
        beyond = [
            completion - seen - self.push_window
            for completion, seen in zip(ledger.completions(), watch, strict=True)
            if completion is not None and seen is not None
        ]
        return _noted(
            "pilothouse" if mesh is self.mesh else "workers",
            replace(
                run,
                watch=tuple(seen for seen in watch if seen is not None),
                beyond_measured=as_three(percentiles(beyond, QUANTILES)) if beyond else None,
            ),
        )

    async def floor(self, server: ServerProcess, target: str, proxies: int) -> ChurnRun:
        async with contextlib.AsyncExitStack() as stack:
            fleet = await self._fleet(stack, target, proxies)
            idle = await idle_cpu_rate(server, self.options.settle)
            ledger = ChurnLedger(proxies, self.mesh.services)
            batcher = FloorBatcher(self.options.debounce_after, self.options.debounce_max)
            pusher = FloorPusher(
                batcher, ledger, self.templates, self.control.apply, self.options.gate
            )
            pushing = asyncio.get_running_loop().create_task(pusher.run())
            stack.callback(pushing.cancel)
            stack.callback(pusher.finish)
            run, _ = await churn(
                fleet, server, self.plan, self.schedule, lambda event: None, ledger,
                self.service_of, idle_cpu_rate=idle, deliver=batcher.add,
                events_done=pusher.finish,
            )  # fmt: skip
            if pushing.done():
                pushing.result()
        from_release = completions_from_release(ledger, pusher.released)
        return _noted(
            "floor",
            replace(
                run,
                floor_pushes=pusher.pushes,
                floor_gate_timeouts=pusher.gate_timeouts,
                from_release=as_three(percentiles(from_release, QUANTILES))
                if from_release
                else None,
            ),
        )


async def serving_workers(
    stack: contextlib.AsyncExitStack, options: ChurnOptions, work: Path, proxies: int
) -> tuple[ServerProcess, str, FanoutMesh]:
    """``serve --workers N`` for the churn at ``proxies``, on a copy of the mesh of its own
    (the single-process server sees none of its events), stopped when ``stack`` closes; its
    xDS address and its mesh, where that side's events are written."""
    mesh = FanoutMesh(
        work / f"mesh-workers-{proxies}", options.services, options.namespaces, options.endpoints
    )
    mesh.write()
    server, target = await serving_pilothouse(
        stack, mesh.root, work / f"pilothouse-workers-{proxies}.log",
        pilothouse_environment(options), options.workers,
    )  # fmt: skip
    return server, target, mesh


def _noted(side: str, run: ChurnRun) -> ChurnRun:
    note(
        f"{side} {run.proxies}: {run.events} events at {run.rate:.1f}/s, event p50 "
        f"{run.completion[0] * 1000:.0f} ms p99 {run.completion[2] * 1000:.0f} ms, missed "
        f"{run.missed}, {run.responses_per_second:.0f} EDS responses/s, cpu "
        f"{run.cpu_cores:.2f} cores"
    )
    return run


def pilothouse_environment(options: ChurnOptions) -> dict[str, str]:
    return {
        "PILOTHOUSE_FILE_DEBOUNCE": str(options.file_debounce),
        "PILOTHOUSE_DEBOUNCE_AFTER": str(options.debounce_after),
        "PILOTHOUSE_DEBOUNCE_MAX": str(options.debounce_max),
    }
