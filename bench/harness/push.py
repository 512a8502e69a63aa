"""Timing one push to a fleet of simulated proxies.

A run starts just before the trigger (a file write for pilothouse, a control call
for the floor) and ends when every proxy has accepted (and ACKed) a response in
which the watched resource differs from what it held before. The proxies live in
this process, so the trigger and the ACK times come from one clock. The server's
CPU over the run (its idle rate subtracted) is the cost of the push. A benchmark reports
the medians of its runs' figures (``figures.medians``).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from bench.harness.fleet import ServerGauge, holds_new
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.loadtest.stats import percentile


@dataclass(frozen=True)
class PushRun:
    """One trigger: per-proxy seconds to ACK, server CPU, and what the fleet received."""

    durations: tuple[float, ...]
    unconverged: int
    cpu_seconds: float
    window: float
    responses: Mapping[str, int]
    """Responses per type short name received by the whole fleet during the run."""
    received: Mapping[str, int]
    """Bytes per type short name received by the whole fleet during the run."""

    @property
    def p50(self) -> float:
        return percentile(self.durations, 50)

    @property
    def p99(self) -> float:
        return percentile(self.durations, 99)

    @property
    def last(self) -> float:
        return max(self.durations)

    @property
    def spread(self) -> float:
        """The fan-out spread: the last proxy's time minus the first's (the debounce and
        the trigger, the same for every proxy, drop out)."""
        return max(self.durations) - min(self.durations)

    def last_channels(self, streams_per_channel: int, share: float = 0.1) -> list[int]:
        """The channels (HTTP/2 connections, in the fleet's order) of the last ``share`` of
        the proxies to ACK, most of them first: which connections a push reached last."""
        order = sorted(range(len(self.durations)), key=self.durations.__getitem__)
        last = order[len(order) - max(1, round(share * len(order))) :]
        tally = Counter(index // streams_per_channel for index in last)
        return [channel for channel, _ in tally.most_common()]

    def describe(self, streams_per_channel: int) -> str:
        """One line for the run's progress output: CPU, per message, spread, last channels."""
        messages = sum(self.responses.values())
        per_message = f"{1e6 * self.cpu_seconds / messages:.1f}" if messages else "—"
        channels = ",".join(map(str, self.last_channels(streams_per_channel)[:4]))
        return (
            f"server CPU {1e3 * self.cpu_seconds:.1f} ms ({per_message} µs per message), "
            f"first ACK {1e3 * min(self.durations):.0f} ms, spread {1e3 * self.spread:.0f} ms, "
            f"last tenth on channels {channels}"
        )


def _received(fleet: ProxyFleet, type_urls: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per type: responses and bytes received by the whole fleet so far."""
    out = {}
    for url in type_urls:
        counters = [proxy.counters(url) for proxy in fleet.proxies]
        out[url] = (sum(c.responses for c in counters), sum(c.bytes_received for c in counters))
    return out


async def _quiet(fleet: ProxyFleet, type_urls: Sequence[str], tail: float, deadline: float) -> None:
    """Wait until the fleet has received nothing for ``tail`` seconds (or the deadline):
    responses that follow the timed one (EDS after CDS, say) belong to the push too."""
    seen = _received(fleet, type_urls)
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(min(0.05, tail))
        now = _received(fleet, type_urls)
        if now != seen:
            seen = now
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= tail:
            return


async def timed_push(
    fleet: ProxyFleet,
    server: ServerGauge,
    type_url: str,
    name: str,
    trigger: Callable[[], Awaitable[None]],
    *,
    idle_rate: float,
    timeout: float,
    tail: float,
    type_urls: Sequence[str],
) -> PushRun:
    """Fire ``trigger`` and time every proxy until it holds a new ``name`` of ``type_url``.

    The server's CPU is counted until the fleet has been quiet for ``tail`` seconds.
    """
    updated = holds_new(fleet, type_url, name)
    counts = _received(fleet, type_urls)
    cpu_before = server.cpu_seconds()
    start = time.monotonic()
    await trigger()
    report = await fleet.wait_converged(updated, timeout=timeout, since=start)
    await _quiet(fleet, type_urls, tail, start + timeout)
    window = time.monotonic() - start
    cpu = server.cpu_seconds() - cpu_before - idle_rate * window
    after = _received(fleet, type_urls)
    short = {url: url.rsplit(".", 1)[-1] for url in type_urls}
    return PushRun(
        durations=report.durations,
        unconverged=len(report.unconverged),
        cpu_seconds=cpu,
        window=window,
        responses={short[url]: after[url][0] - counts[url][0] for url in type_urls},
        received={short[url]: after[url][1] - counts[url][1] for url in type_urls},
    )


def responses(runs: Sequence[PushRun]) -> str:
    """Responses the fleet received per push, by type, with their total size (medians)."""
    medians = {
        name: (
            statistics.median(r.responses[name] for r in runs),
            statistics.median(r.received[name] for r in runs),
        )
        for name in runs[0].responses
    }
    return ", ".join(
        f"{name} {round(count)} ({round(size) / 1e6:.2f} MB)"
        for name, (count, size) in medians.items()
        if round(count)
    )
