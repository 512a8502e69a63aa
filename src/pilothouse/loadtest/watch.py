"""Watching a fleet: when each proxy first converged, and when it reached each change.

``FleetWatch`` listens to every proxy of a ``ProxyFleet`` (a listener runs after
each response, so there is no task per proxy) and records:

- **connect**: the first time a proxy is ``settled`` (everything it wants
  accepted and held), measured from the proxy's own start;
- **changes**: a change is announced with ``arm(index, at)``, ``at`` being the
  instant it was made.  A proxy *reaches* it with its first accepted response
  at or after ``at`` that changed what it holds, of any type; the time is that
  response's ``last_change_at`` minus ``at``.  Changes are reached in order.  A
  change is closed when every proxy reached it or when ``timeout`` has passed
  since it was made; proxies that had not reached it by then *missed* it.

An announcement may arrive a little after the change was made (from the
parent process): each proxy remembers its last few change instants, so a
response that came first still counts with its true time.  When changes
overlap (a churn run), a response may answer an earlier change than the one it
is counted for; that is the nature of measuring a server from the outside.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from pilothouse.loadtest.histogram import LatencyHistogram
from pilothouse.loadtest.outcome import ChangeOutcome, ShareResult, ShareStatus, Traffic
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.loadtest.stalls import find_stalls
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

WATCHED_TYPES: Final = (CDS, EDS, LDS, RDS)
"""Every type a simulated proxy (Envoy or proxyless gRPC) asks for."""
RECENT_CHANGES: Final = 8
PER_CHANGE_HISTOGRAMS: Final = 100
"""Changes after this many are timed in the run's overall histogram only."""
TRAFFIC_REFRESH: Final = 0.5
TALLY_SHARE: Final = 0.05
"""A large fleet's tally is refreshed less often, so that it takes at most this share
of the process's time (a tally of 5,000 proxies takes some 50 ms)."""
ERROR_EXAMPLES: Final = 5


def latest_change(proxy: SimulatedProxy) -> float | None:
    """When an accepted response last changed what the proxy holds (None: never)."""
    return proxy.last_change_at()


def fleet_traffic(proxies: Sequence[SimulatedProxy]) -> Traffic:
    """The fleet's counters summed over proxies and types, now.

    It reads each proxy's raw counters (``traffic_counts``): with thousands of
    proxies per process, a snapshot object per proxy and type every half second
    cost a third of a core."""
    responses = received = acks = nacks = requests = 0
    for proxy in proxies:
        counts = proxy.traffic_counts()
        responses += counts[0]
        received += counts[1]
        acks += counts[2]
        nacks += counts[3]
        requests += counts[4]
    return Traffic(responses, received, acks, nacks, requests)


@dataclass
class _Change:
    index: int
    at: float
    keep_histogram: bool
    reached: int = 0
    missed: int = 0
    closed: bool = False
    histogram: LatencyHistogram = field(default_factory=LatencyHistogram)

    def outcome(self) -> ChangeOutcome:
        histogram = self.histogram if self.keep_histogram else None
        return ChangeOutcome(self.index, self.at, self.reached, self.missed, histogram)


class FleetWatch:
    """Connect and change times of a fleet's proxies, kept as they happen."""

    def __init__(
        self,
        proxies: Sequence[SimulatedProxy],
        timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.proxies = tuple(proxies)
        self.timeout = timeout
        self._clock = clock
        self._index = {proxy: index for index, proxy in enumerate(self.proxies)}
        count = len(self.proxies)
        self._converged = [False] * count
        self._last_change = [0.0] * count
        self._recent: list[deque[float]] = [deque(maxlen=RECENT_CHANGES) for _ in range(count)]
        self._cursor = [0] * count
        """Per proxy: the first change it has not reached yet."""
        self._changes: list[_Change] = []
        self._closed_prefix = 0
        """Changes before this one are all closed."""
        self.connect = LatencyHistogram()
        self.change_times = LatencyHistogram()
        self.converged = 0
        self.last_converged_at: float | None = None
        self.activity = 0
        self._marks: dict[str, Traffic] = {}
        self._traffic = Traffic()
        self._traffic_at = -TRAFFIC_REFRESH
        self._refresh = TRAFFIC_REFRESH
        self._failures = 0
        self._connected = [False] * count
        self.connected = 0
        """Proxies whose stream has delivered a response and not ended (kept as they change)."""

    # -- listening -------------------------------------------------------------

    def attach(self) -> None:
        for proxy in self.proxies:
            proxy.add_listener(self.observe)

    def detach(self) -> None:
        for proxy in self.proxies:
            proxy.remove_listener(self.observe)

    def observe(self, proxy: SimulatedProxy) -> None:
        """Run after every response and connection change of ``proxy``."""
        index = self._index[proxy]
        self.activity += 1
        if proxy.connected != self._connected[index]:
            self._connected[index] = proxy.connected
            self.connected += 1 if proxy.connected else -1
        if not self._converged[index] and proxy.settled():
            now = self._clock()
            self._converged[index] = True
            self.converged += 1
            self.last_converged_at = now
            self.connect.add(now - (proxy.started_at if proxy.started_at is not None else now))
        changed = latest_change(proxy)
        if changed is not None and changed > self._last_change[index]:
            self._last_change[index] = changed
            self._recent[index].append(changed)
            self._reach(index, changed)

    # -- changes ---------------------------------------------------------------

    def arm(self, index: int, at: float) -> None:
        """A change numbered ``index`` (0, 1, … in order) was made at ``at``."""
        if index != len(self._changes):
            raise ValueError(f"change {index} announced, expected {len(self._changes)}")
        if self._changes and at < self._changes[-1].at:
            raise ValueError("changes must be announced in the order they were made")
        change = _Change(index, at, keep_histogram=index < PER_CHANGE_HISTOGRAMS)
        self._changes.append(change)
        for proxy_index in range(len(self.proxies)):
            if max(self._cursor[proxy_index], self._closed_prefix) != index:
                continue
            for changed in self._recent[proxy_index]:
                if changed >= at:
                    self._reach(proxy_index, changed)
                    break

    def _reach(self, proxy_index: int, changed: float) -> None:
        """The proxy accepted a change at ``changed``: it reached every open change before."""
        position = max(self._cursor[proxy_index], self._closed_prefix)
        changes = self._changes
        while position < len(changes) and changes[position].at <= changed:
            change = changes[position]
            elapsed = changed - change.at
            if not change.closed and elapsed <= self.timeout:
                change.reached += 1
                change.histogram.add(elapsed)
                self.change_times.add(elapsed)
                if change.reached == len(self.proxies):
                    change.closed = True
            position += 1
        self._cursor[proxy_index] = position
        self._advance_prefix()

    def _advance_prefix(self) -> None:
        while (
            self._closed_prefix < len(self._changes) and self._changes[self._closed_prefix].closed
        ):
            self._closed_prefix += 1

    def expire(self, now: float | None = None) -> None:
        """Close every change made more than ``timeout`` ago; its stragglers missed it."""
        now = self._clock() if now is None else now
        for change in self._changes[self._closed_prefix :]:
            if not change.closed and now - change.at > self.timeout:
                self._close(change)
        self._advance_prefix()

    def close_all(self) -> None:
        """End of the run: every open change is closed now."""
        for change in self._changes[self._closed_prefix :]:
            if not change.closed:
                self._close(change)
        self._advance_prefix()

    def _close(self, change: _Change) -> None:
        change.closed = True
        change.missed = len(self.proxies) - change.reached

    @property
    def pending(self) -> int:
        total = len(self.proxies)
        return sum(total - c.reached for c in self._changes[self._closed_prefix :] if not c.closed)

    # -- reporting -------------------------------------------------------------

    def traffic(self, fresh: bool = False) -> Traffic:
        """The fleet's traffic counters and failed streams, recomputed unless fresh at most
        every half second, or less often for a fleet so large that the tally would take
        more than ``TALLY_SHARE`` of the time."""
        now = self._clock()
        if fresh or now - self._traffic_at >= self._refresh:
            began = time.perf_counter()
            self._traffic = fleet_traffic(self.proxies)
            self._failures = sum(proxy.stream_failures for proxy in self.proxies)
            self._traffic_at = now
            cost = time.perf_counter() - began
            self._refresh = max(TRAFFIC_REFRESH, cost / TALLY_SHARE)
        return self._traffic

    def mark(self, name: str) -> None:
        """Remember the traffic counters now, under ``name``."""
        self._marks[name] = self.traffic(fresh=True)

    def status(self) -> ShareStatus:
        self.expire()
        return ShareStatus(
            proxies=len(self.proxies),
            connected=self.connected,
            converged=self.converged,
            armed=len(self._changes),
            pending=self.pending,
            activity=self.activity,
            traffic=self.traffic(),
            stream_failures=self._failures,
        )

    def result(self) -> ShareResult:
        """Everything measured; closes every open change first."""
        self.close_all()
        self.mark("end")
        return ShareResult(
            proxies=len(self.proxies),
            converged=self.converged,
            connect=self.connect,
            last_converged_at=self.last_converged_at,
            changes=tuple(change.outcome() for change in self._changes),
            change_times=self.change_times,
            marks=MappingProxyType(dict(self._marks)),
            stream_failures=sum(proxy.stream_failures for proxy in self.proxies),
            reconnects=sum(max(0, proxy.streams_opened - 1) for proxy in self.proxies),
            error_examples=self.error_examples(),
            stalls=find_stalls(self.proxies),
        )

    def error_examples(self) -> tuple[str, ...]:
        """A few distinct stream errors and NACK messages, latest streams first."""
        return error_examples(self.proxies)


def error_examples(
    proxies: Iterable[SimulatedProxy], limit: int = ERROR_EXAMPLES
) -> tuple[str, ...]:
    """Up to ``limit`` distinct stream errors and NACK messages of ``proxies``, each
    proxy's latest stream first."""
    seen: dict[str, None] = {}
    for proxy in proxies:
        for message in reversed(proxy.stream_errors):
            seen.setdefault(message, None)
        for type_url in WATCHED_TYPES:
            nack = proxy.last_error(type_url)
            if nack is not None:
                seen.setdefault(f"NACK {type_url.rsplit('.', 1)[-1]}: {nack}", None)
        if len(seen) >= limit:
            break
    return tuple(seen)[:limit]
