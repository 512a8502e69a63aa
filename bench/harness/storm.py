"""One connect storm, and the figures every storm benchmark reports of several.

A storm starts every proxy of a fleet at once against a server that has no
proxy yet and waits until each is converged: every type it asks for (CDS, EDS,
LDS, RDS for a sidecar) accepted and ACKed, and every name it asked for held.
A proxy's time runs from its own start; the storm's time from the first
proxy's start to the last one's convergence. Meanwhile the server's resident
memory is sampled (its peak) and its CPU time read before and after. ``STORM_ROWS`` are
the figures of one side's runs (medians) that every storm benchmark reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.harness.figures import Row, mib, s
from bench.harness.fleet import FleetCounts, PeakMemory, ServerGauge, connect, held_counts
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.loadtest.stats import percentile
from pilothouse.loadtest.watch import error_examples

ERROR_EXAMPLES = 3
SETTLE = 1.0
"""Seconds a freshly started server is left alone before the storm (by default)."""


@dataclass(frozen=True)
class StormRun:
    """What one storm measured."""

    proxies: int
    seconds: float
    """First proxy start → last proxy converged (or the timeout)."""
    durations: tuple[float, ...]
    """Per converged proxy: its start → its convergence."""
    unconverged: int
    stream_failures: int
    reconnects: int
    nacks: int
    rss_before_kib: int
    peak_rss_kib: int
    cpu_seconds: float
    load_generator_cpu_seconds: float = 0.0
    """CPU time of this process (the fleet) over the storm."""
    error_examples: tuple[str, ...] = ()
    held: tuple[tuple[str, int], ...] = ()
    """What most proxies hold: (type short name, resources) per type."""
    odd_proxies: int = 0
    """Proxies holding other numbers of resources than ``held``."""

    def percentile(self, q: float) -> float:
        return percentile(self.durations, q) if self.durations else float("inf")

    @property
    def errors(self) -> int:
        return self.unconverged + self.stream_failures + self.nacks


async def storm_on(
    stack: contextlib.AsyncExitStack,
    server: ServerGauge,
    target: str,
    proxies: int,
    namespaces: Sequence[str],
    *,
    streams_per_channel: int,
    timeout: float,
    settle: float = SETTLE,
) -> tuple[StormRun, ProxyFleet]:
    """A storm of a new fleet (closed with ``stack``) against a server just started, after
    ``settle`` seconds left alone."""
    await asyncio.sleep(settle)
    fleet = connect(target, proxies, namespaces, streams_per_channel=streams_per_channel)
    stack.push_async_callback(fleet.close)
    return await storm(fleet, server, timeout), fleet


async def storm(fleet: ProxyFleet, server: ServerGauge, timeout: float) -> StormRun:
    """Start every proxy of ``fleet`` at once and wait until all have converged."""
    memory = PeakMemory(server)
    rss_before = memory.peak_kib
    cpu_before = server.cpu_seconds()
    own_before = time.process_time()
    memory.start()
    try:
        await fleet.start()
        report = await fleet.wait_converged(timeout=timeout)
    finally:
        peak = await memory.stop()
    cpu = server.cpu_seconds() - cpu_before
    own = time.process_time() - own_before
    counts = FleetCounts.of(fleet)
    held, odd = held_counts(fleet)
    return StormRun(
        proxies=len(fleet.proxies),
        seconds=report.wall,
        durations=report.durations,
        unconverged=len(report.unconverged),
        stream_failures=counts.stream_failures,
        reconnects=counts.reconnects,
        nacks=counts.nacks,
        rss_before_kib=rss_before,
        peak_rss_kib=peak,
        cpu_seconds=cpu,
        load_generator_cpu_seconds=own,
        error_examples=error_examples(fleet.proxies, ERROR_EXAMPLES),
        held=held,
        odd_proxies=odd,
    )


def median_of(runs: Sequence[StormRun], figure: Callable[[StormRun], float]) -> float:
    """The median over ``runs`` of one figure of each."""
    return float(statistics.median(figure(run) for run in runs))


STORM_ROWS: tuple[Row, ...] = (
    ("{side}_s", lambda runs: s(median_of(runs, lambda r: r.seconds))),
    ("{side}_runs_s", lambda runs: [s(run.seconds) for run in runs]),
    ("{side}_per_proxy_p50_s", lambda runs: s(median_of(runs, lambda r: r.percentile(50)))),
    ("{side}_per_proxy_p99_s", lambda runs: s(median_of(runs, lambda r: r.percentile(99)))),
    ("{side}_server_rss_before_mib", lambda runs: mib(median_of(runs, lambda r: r.rss_before_kib))),
    ("{side}_server_peak_rss_mib", lambda runs: mib(median_of(runs, lambda r: r.peak_rss_kib))),
    ("{side}_server_cpu_s", lambda runs: s(median_of(runs, lambda r: r.cpu_seconds))),
)
"""The figures every storm benchmark reports per side, from that side's runs (medians)."""


def median_seconds(runs: Sequence[StormRun]) -> float:
    return median_of(runs, lambda r: r.seconds)
