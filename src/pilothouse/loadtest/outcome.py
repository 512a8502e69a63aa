"""What one part of a load run reports: live status while it runs, its result at the end.

Each process of a run (the parent and every worker) runs a slice of the fleet
and reports a ``ShareStatus`` many times a second and one ``ShareResult`` at the
end; workers send them to the parent as JSON lines, so every value here has a
``to_json`` and a ``from_json``.  Times are ``time.monotonic()`` instants, which
on Linux is one clock for every process on the machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pilothouse.loadtest.histogram import LatencyHistogram
from pilothouse.loadtest.stalls import Stalls


@dataclass(frozen=True)
class Traffic:
    """What a fleet received and sent back, summed over its proxies and types."""

    responses: int = 0
    received_bytes: int = 0
    acks: int = 0
    nacks: int = 0
    requests: int = 0

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(
            self.responses + other.responses,
            self.received_bytes + other.received_bytes,
            self.acks + other.acks,
            self.nacks + other.nacks,
            self.requests + other.requests,
        )

    def __sub__(self, other: Traffic) -> Traffic:
        return Traffic(
            self.responses - other.responses,
            self.received_bytes - other.received_bytes,
            self.acks - other.acks,
            self.nacks - other.nacks,
            self.requests - other.requests,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "responses": self.responses,
            "receivedBytes": self.received_bytes,
            "acks": self.acks,
            "nacks": self.nacks,
            "requests": self.requests,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Traffic:
        return cls(
            int(data["responses"]),
            int(data["receivedBytes"]),
            int(data["acks"]),
            int(data["nacks"]),
            int(data["requests"]),
        )


@dataclass(frozen=True)
class ShareStatus:
    """A slice of the fleet right now."""

    proxies: int
    connected: int = 0
    converged: int = 0
    """Proxies that have converged once (the connect phase)."""
    armed: int = 0
    """Changes announced to this slice so far."""
    pending: int = 0
    """(proxy, change) pairs of changes still open that the proxy has not reached yet."""
    activity: int = 0
    """Responses and connection changes seen so far: it stops moving when the fleet is quiet."""
    stream_failures: int = 0
    traffic: Traffic = Traffic()
    """Refreshed at most every half second."""

    def to_json(self) -> dict[str, Any]:
        return {
            "proxies": self.proxies,
            "connected": self.connected,
            "converged": self.converged,
            "armed": self.armed,
            "pending": self.pending,
            "activity": self.activity,
            "streamFailures": self.stream_failures,
            "traffic": self.traffic.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ShareStatus:
        return cls(
            proxies=int(data["proxies"]),
            connected=int(data["connected"]),
            converged=int(data["converged"]),
            armed=int(data["armed"]),
            pending=int(data["pending"]),
            activity=int(data["activity"]),
            stream_failures=int(data["streamFailures"]),
            traffic=Traffic.from_json(data["traffic"]),
        )


def combine(statuses: list[ShareStatus]) -> ShareStatus:
    """The whole fleet's status from its slices' (``armed`` is the least of them)."""
    total = Traffic()
    for status in statuses:
        total = total + status.traffic
    return ShareStatus(
        proxies=sum(s.proxies for s in statuses),
        connected=sum(s.connected for s in statuses),
        converged=sum(s.converged for s in statuses),
        armed=min((s.armed for s in statuses), default=0),
        pending=sum(s.pending for s in statuses),
        activity=sum(s.activity for s in statuses),
        stream_failures=sum(s.stream_failures for s in statuses),
        traffic=total,
    )


@dataclass(frozen=True)
class ChangeOutcome:
    """One change as one slice saw it: when it was made, how many proxies got it in time."""

    index: int
    at: float
    reached: int
    missed: int
    histogram: LatencyHistogram | None = None
    """Per-proxy seconds from the change to the proxy's next accepted change (kept for the
    first changes of a run only)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "at": self.at,
            "reached": self.reached,
            "missed": self.missed,
            "histogram": None if self.histogram is None else self.histogram.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChangeOutcome:
        histogram = data.get("histogram")
        return cls(
            index=int(data["index"]),
            at=float(data["at"]),
            reached=int(data["reached"]),
            missed=int(data["missed"]),
            histogram=None if histogram is None else LatencyHistogram.from_json(histogram),
        )


def _no_marks() -> Mapping[str, Traffic]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ShareResult:
    """Everything one slice measured, at the end of the run."""

    proxies: int
    converged: int
    connect: LatencyHistogram
    """Per-proxy seconds from its start to its first convergence."""
    last_converged_at: float | None
    changes: tuple[ChangeOutcome, ...]
    change_times: LatencyHistogram
    """Every (proxy, change) time of every change."""
    marks: Mapping[str, Traffic] = field(default_factory=_no_marks)
    """Traffic counters at named moments (phase boundaries)."""
    stream_failures: int = 0
    reconnects: int = 0
    error_examples: tuple[str, ...] = ()
    stalls: Stalls = field(default_factory=Stalls)
    """What the proxies that had not converged by the end were waiting for."""

    def to_json(self) -> dict[str, Any]:
        return {
            "proxies": self.proxies,
            "stalls": self.stalls.to_json(),
            "converged": self.converged,
            "connect": self.connect.to_json(),
            "lastConvergedAt": self.last_converged_at,
            "changes": [change.to_json() for change in self.changes],
            "changeTimes": self.change_times.to_json(),
            "marks": {name: traffic.to_json() for name, traffic in self.marks.items()},
            "streamFailures": self.stream_failures,
            "reconnects": self.reconnects,
            "errorExamples": list(self.error_examples),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ShareResult:
        last = data["lastConvergedAt"]
        return cls(
            proxies=int(data["proxies"]),
            converged=int(data["converged"]),
            connect=LatencyHistogram.from_json(data["connect"]),
            last_converged_at=None if last is None else float(last),
            changes=tuple(ChangeOutcome.from_json(item) for item in data["changes"]),
            change_times=LatencyHistogram.from_json(data["changeTimes"]),
            marks=MappingProxyType(
                {name: Traffic.from_json(item) for name, item in data["marks"].items()}
            ),
            stream_failures=int(data["streamFailures"]),
            reconnects=int(data["reconnects"]),
            error_examples=tuple(str(item) for item in data["errorExamples"]),
            stalls=Stalls.from_json(data["stalls"]) if "stalls" in data else Stalls(),
        )
