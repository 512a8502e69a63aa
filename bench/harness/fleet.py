"""The fleet driver: simulated proxies (``pilothouse.loadtest``) on one server, and what
the benchmarks read of them and of the server while they run.

``connect`` makes a fleet of the mesh's proxies (``converged_fleet``: started, converged and
closed with an exit stack); ``FleetCounts`` is what the whole fleet
has received and suffered so far (subtract two to get a run's share); ``PeakMemory``
samples the server's RSS in the background; ``held_counts`` says what most proxies hold,
for the report (what went wrong: :func:`pilothouse.loadtest.watch.error_examples`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Protocol

from pilothouse.loadtest.fleet import ConvergenceReport, ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.loadtest.watch import WATCHED_TYPES
from pilothouse.protocol.type_urls import EDS

SAMPLE_EVERY = 0.05


class ServerGauge(Protocol):
    """What a run reads of the server (``process.ServerProcess``)."""

    def cpu_seconds(self) -> float: ...

    def rss_kib(self) -> int: ...


def connect(
    target: str,
    proxies: int,
    namespaces: Sequence[str],
    *,
    streams_per_channel: int,
    delta: bool = False,
    app: str = "app",
) -> ProxyFleet:
    """A fleet of ``proxies`` sidecars spread over ``namespaces`` (not started yet)."""
    identities = fleet_identities(proxies, namespaces=namespaces, app=app)
    return ProxyFleet(target, identities, delta=delta, streams_per_channel=streams_per_channel)


async def start_converged(fleet: ProxyFleet, timeout: float, name: str = "") -> ConvergenceReport:
    """Start ``fleet`` and wait until every proxy has converged; fail if some never do."""
    await fleet.start()
    report = await fleet.wait_converged(timeout=timeout)
    if not report.converged:
        raise RuntimeError(
            f"{name or 'the fleet'}: {len(report.unconverged)} of {len(fleet.proxies)} proxies "
            f"never converged, e.g. {report.unconverged[:3]}"
        )
    return report


async def converged_fleet(
    stack: contextlib.AsyncExitStack,
    target: str,
    proxies: int,
    namespaces: Sequence[str],
    *,
    streams_per_channel: int,
    timeout: float,
    settle: float = 0.0,
    delta: bool = False,
    app: str = "app",
) -> ProxyFleet:
    """``connect`` and ``start_converged``, closed when ``stack`` closes; then ``settle``
    seconds of quiet."""
    fleet = connect(
        target, proxies, namespaces, streams_per_channel=streams_per_channel, delta=delta, app=app
    )
    stack.push_async_callback(fleet.close)
    await start_converged(fleet, timeout, target)
    await asyncio.sleep(settle)
    return fleet


def holds_new(fleet: ProxyFleet, type_url: str, name: str) -> Callable[[SimulatedProxy], bool]:
    """Whether a proxy holds ``name`` of ``type_url`` other than the fleet's first proxy
    holds now (the predicate that ends a timed change)."""
    reference = fleet.proxies[0].holds(type_url).get(name)
    if reference is None:
        raise RuntimeError(f"the fleet does not hold {name}")
    old = reference.body

    def updated(proxy: SimulatedProxy) -> bool:
        held = proxy.holds(type_url).get(name)
        return held is not None and held.body != old

    return updated


@dataclass(frozen=True)
class FleetCounts:
    """What the whole fleet received and suffered so far."""

    eds_responses: int
    eds_bytes: int
    stream_failures: int
    nacks: int
    reconnects: int

    @classmethod
    def of(cls, fleet: ProxyFleet) -> FleetCounts:
        proxies = fleet.proxies
        eds = [proxy.counters(EDS) for proxy in proxies]
        return cls(
            eds_responses=sum(c.responses for c in eds),
            eds_bytes=sum(c.bytes_received for c in eds),
            stream_failures=sum(proxy.stream_failures for proxy in proxies),
            nacks=sum(proxy.counters(t).nacks for proxy in proxies for t in WATCHED_TYPES),
            reconnects=sum(max(0, proxy.streams_opened - 1) for proxy in proxies),
        )

    def __sub__(self, before: FleetCounts) -> FleetCounts:
        return FleetCounts(*(getattr(self, f.name) - getattr(before, f.name) for f in fields(self)))


class PeakMemory:
    """Samples the server's RSS in the background until ``stop``; ``peak_kib`` is the largest."""

    def __init__(self, server: ServerGauge, every: float = SAMPLE_EVERY) -> None:
        self.server = server
        self.every = every
        self.peak_kib = server.rss_kib()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            self.note()

    def note(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.peak_kib = max(self.peak_kib, self.server.rss_kib())

    async def stop(self) -> int:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.note()
        return self.peak_kib


def held_counts(fleet: ProxyFleet) -> tuple[tuple[tuple[str, int], ...], int]:
    """What most proxies hold, per type, and how many proxies hold something else."""
    tally: Counter[tuple[tuple[str, int], ...]] = Counter()
    for proxy in fleet.proxies:
        tally[tuple((t.rsplit(".", 1)[-1], len(proxy.holds(t))) for t in WATCHED_TYPES)] += 1
    if not tally:
        return (), 0
    common, count = tally.most_common(1)[0]
    return common, len(fleet.proxies) - count
