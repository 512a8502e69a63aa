"""FleetWatch: connect times from each proxy's start, and per-change times from the instant a
change was made to the proxy's next accepted change, with late announcements, overlapping
changes, timeouts and the end of the run. Driven by stand-in proxies and a hand-moved clock."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import pytest

from pilothouse.loadtest.holdings import TypeCounters
from pilothouse.loadtest.outcome import Traffic
from pilothouse.loadtest.watch import FleetWatch
from pilothouse.protocol.type_urls import CDS, EDS, LDS


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class StandInProxy:
    """What FleetWatch reads of a SimulatedProxy, set by hand."""

    def __init__(self, started_at: float = 100.0) -> None:
        self.started_at = started_at
        self.connected = False
        self.stream_failures = 0
        self.streams_opened = 1
        self.stream_errors: deque[str] = deque()
        self.is_settled = False
        self.changed: dict[str, float] = {}
        self.responses = 0
        self.nack: str | None = None
        self.types: tuple[str, ...] = ()
        """No types: the stalls at the end of a run count it, with no reason per type."""
        self._listeners: list[Callable[[Any], None]] = []

    def wants(self) -> dict[str, Any]:
        return {}

    def add_listener(self, listener: Callable[[Any], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[Any], None]) -> None:
        self._listeners.remove(listener)

    def settled(self) -> bool:
        return self.is_settled

    def counters(self, type_url: str) -> TypeCounters:
        responses = self.responses if type_url == CDS else 0
        return TypeCounters(
            responses=responses,
            acks=responses,
            bytes_received=100 * responses,
            requests=responses,
            last_change_at=self.changed.get(type_url),
        )

    def last_error(self, type_url: str) -> str | None:
        return self.nack if type_url == LDS else None

    def traffic_counts(self) -> tuple[int, int, int, int, int]:
        counters = self.counters(CDS)
        return (counters.responses, counters.bytes_received, counters.acks, counters.nacks,
                counters.requests)  # fmt: skip

    def last_change_at(self) -> float | None:
        return max(self.changed.values(), default=None)

    def respond(
        self, *, settled: bool | None = None, change: tuple[str, float] | None = None
    ) -> None:
        """A response arrived (maybe settling the proxy, maybe changing what it holds)."""
        self.connected = True
        self.responses += 1
        if settled is not None:
            self.is_settled = settled
        if change is not None:
            self.changed[change[0]] = change[1]
        for listener in tuple(self._listeners):
            listener(self)


def watched(count: int, timeout: float = 5.0) -> tuple[FleetWatch, list[StandInProxy], Clock]:
    clock = Clock()
    proxies = [StandInProxy() for _ in range(count)]
    watch = FleetWatch(proxies, timeout, clock)  # type: ignore[arg-type]
    watch.attach()
    return watch, proxies, clock


def test_connect_time_runs_from_each_proxys_own_start() -> None:
    watch, (first, second, third), clock = watched(3)
    second.started_at = 100.5
    clock.now = 100.2
    first.respond()  # not settled yet
    assert watch.converged == 0
    first.respond(settled=True)
    clock.now = 101.0
    second.respond(settled=True)
    first.respond(settled=True)  # counted once
    status = watch.status()
    assert (status.converged, status.connected, status.proxies) == (2, 2, 3)
    assert watch.connect.count == 2
    assert watch.connect.minimum == pytest.approx(0.2)
    assert watch.connect.maximum == pytest.approx(0.5)
    assert watch.last_converged_at == 101.0
    result = watch.result()
    assert (result.proxies, result.converged) == (3, 2)
    assert third.connected is False


def test_a_change_is_timed_to_each_proxys_next_accepted_change() -> None:
    watch, proxies, _clock = watched(3)
    for proxy in proxies:
        proxy.respond(settled=True, change=(CDS, 100.1))
    watch.arm(0, 110.0)
    assert watch.status().pending == 3
    proxies[0].respond(change=(EDS, 110.2))
    proxies[1].respond(change=(CDS, 110.3))
    proxies[1].respond(change=(EDS, 110.9))  # a later change does not move its time
    proxies[2].respond()  # a response that changed nothing does not count
    assert watch.status().pending == 1
    proxies[2].respond(change=(LDS, 110.5))
    assert watch.status().pending == 0
    (outcome,) = watch.result().changes
    assert (outcome.reached, outcome.missed) == (3, 0)
    assert outcome.histogram is not None
    assert outcome.histogram.minimum == pytest.approx(0.2)
    assert outcome.histogram.maximum == pytest.approx(0.5)


def test_an_announcement_that_arrives_after_the_change_counts_the_true_time() -> None:
    watch, (early, late, before), clock = watched(3)
    before.respond(change=(CDS, 109.9))  # before the change was made: not it
    early.respond(change=(EDS, 110.05))  # the change was made at 110.0, announced at 110.1
    clock.now = 110.1
    watch.arm(0, 110.0)
    assert watch.status().pending == 2
    late.respond(change=(EDS, 110.3))
    before.respond(change=(EDS, 110.4))
    (outcome,) = watch.result().changes
    assert outcome.reached == 3
    assert outcome.histogram is not None
    assert outcome.histogram.minimum == pytest.approx(0.05)
    assert outcome.histogram.maximum == pytest.approx(0.4)


def test_overlapping_changes_are_each_reached_by_the_first_change_after_them() -> None:
    watch, (proxy,), _clock = watched(1)
    watch.arm(0, 110.0)
    watch.arm(1, 110.1)
    proxy.respond(change=(CDS, 110.3))  # one response answers both
    watch.arm(2, 110.4)
    assert watch.status().pending == 1
    proxy.respond(change=(CDS, 110.45))
    result = watch.result()
    assert [change.reached for change in result.changes] == [1, 1, 1]
    times = [change.histogram.maximum for change in result.changes if change.histogram]
    assert times == pytest.approx([0.3, 0.2, 0.05])
    assert result.change_times.count == 3


def test_proxies_that_do_not_reach_a_change_in_time_missed_it() -> None:
    watch, (fast, slow), clock = watched(2, timeout=1.0)
    watch.arm(0, 110.0)
    fast.respond(change=(EDS, 110.2))
    clock.now = 110.9
    assert watch.status().pending == 1
    clock.now = 111.2
    status = watch.status()  # expires the change
    assert status.pending == 0
    assert status.armed == 1
    slow.respond(change=(EDS, 111.3))  # too late for change 0
    watch.arm(1, 112.0)
    slow.respond(change=(EDS, 112.1))
    fast.respond(change=(EDS, 112.2))
    first, second = watch.result().changes
    assert (first.reached, first.missed) == (1, 1)
    assert (second.reached, second.missed) == (2, 0)
    assert second.histogram is not None
    assert second.histogram.maximum == pytest.approx(0.2)


def test_a_change_reached_after_the_timeout_is_missed_even_before_expiry() -> None:
    watch, (proxy,), _clock = watched(1, timeout=1.0)
    watch.arm(0, 110.0)
    proxy.respond(change=(CDS, 111.5))  # no status poll came between
    (outcome,) = watch.result().changes
    assert (outcome.reached, outcome.missed) == (0, 1)


def test_the_end_of_the_run_closes_open_changes_as_missed() -> None:
    watch, proxies, _clock = watched(4)
    watch.arm(0, 110.0)
    proxies[0].respond(change=(CDS, 110.1))
    result = watch.result()
    (outcome,) = result.changes
    assert (outcome.reached, outcome.missed) == (1, 3)
    assert watch.pending == 0


def test_changes_are_announced_in_order() -> None:
    watch, _, _ = watched(1)
    watch.arm(0, 110.0)
    with pytest.raises(ValueError, match="expected 1"):
        watch.arm(2, 111.0)
    with pytest.raises(ValueError, match="order"):
        watch.arm(1, 109.0)


def test_traffic_marks_errors_and_detach() -> None:
    watch, (one, two), _clock = watched(2)
    one.respond()
    one.respond()
    two.respond()
    watch.mark("connected")
    two.respond()
    one.stream_failures = 2
    one.streams_opened = 3
    one.stream_errors.append("UNAVAILABLE: connection refused")
    two.nack = "bad cluster"
    result = watch.result()
    assert result.marks["connected"] == Traffic(3, 300, 3, 0, 3)
    assert result.marks["end"] == Traffic(4, 400, 4, 0, 4)
    assert result.stream_failures == 2
    assert result.reconnects == 2
    assert result.error_examples == (
        "UNAVAILABLE: connection refused",
        "NACK Listener: bad cluster",
    )
    watch.detach()
    activity = watch.activity
    one.respond()
    assert watch.activity == activity
