"""One connect storm, and the median of several.

A storm starts every proxy of a fleet at once against a server that has no
proxy yet and waits until each is converged: every type it asks for (CDS, EDS,
LDS, RDS for a sidecar) accepted and ACKed, and every name it asked for held.
A proxy's time runs from its own start; the storm's time from the first
proxy's start to the last one's convergence. Meanwhile the server's resident
memory is sampled (its peak) and its CPU time read before and after.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench.harness.fleet import FleetCounts, PeakMemory, ServerGauge, held_counts
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.loadtest.stats import percentile
from pilothouse.loadtest.watch import error_examples

ERROR_EXAMPLES = 3


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


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


@dataclass(frozen=True)
class StormSummary:
    """The runs of one server at one fleet size: medians, and the worst errors."""

    proxies: int
    runs: tuple[StormRun, ...]

    @property
    def seconds(self) -> float:
        return _median([run.seconds for run in self.runs])

    def percentile(self, q: float) -> float:
        """The median over runs of each run's per-proxy ``q``-th percentile."""
        return _median([run.percentile(q) for run in self.runs])

    @property
    def peak_rss_kib(self) -> float:
        return _median([run.peak_rss_kib for run in self.runs])

    @property
    def rss_before_kib(self) -> float:
        return _median([run.rss_before_kib for run in self.runs])

    @property
    def cpu_seconds(self) -> float:
        return _median([run.cpu_seconds for run in self.runs])

    @property
    def load_generator_cpu_seconds(self) -> float:
        return _median([run.load_generator_cpu_seconds for run in self.runs])

    @property
    def unconverged(self) -> int:
        return max(run.unconverged for run in self.runs)

    @property
    def stream_failures(self) -> int:
        return sum(run.stream_failures for run in self.runs)

    @property
    def nacks(self) -> int:
        return sum(run.nacks for run in self.runs)

    @property
    def odd_proxies(self) -> int:
        return max(run.odd_proxies for run in self.runs)

    def runs_holding_other_than(self, reference: tuple[tuple[str, int], ...]) -> int:
        """Runs whose proxies mostly hold other resource counts than ``reference``."""
        return sum(1 for run in self.runs if run.held != reference)

    @property
    def converged_every_run(self) -> bool:
        return all(run.unconverged == 0 for run in self.runs)

    @property
    def error_examples(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for run in self.runs:
            for example in run.error_examples:
                seen.setdefault(example, None)
        return tuple(seen)[:ERROR_EXAMPLES]


def summarize_storms(runs: Sequence[StormRun]) -> StormSummary:
    if not runs:
        raise ValueError("no storm to summarize")
    sizes = {run.proxies for run in runs}
    if len(sizes) != 1:
        raise ValueError(f"storms of different fleet sizes: {sorted(sizes)}")
    return StormSummary(proxies=runs[0].proxies, runs=tuple(runs))
