"""One side of the push fan-out comparison: a server process, its fleet, and its figures.

``Side`` owns a started server (pilothouse or the transport floor), the fleet of
simulated proxies connected to it, how to fire a trigger at it, and what was
measured. ``Recording`` carries what pilothouse sent in each push to the floor, which
sends the very same resource bytes; ``FileWrites`` reads from pilothouse's log when it
saw each trigger's file write.
"""

from __future__ import annotations

import asyncio
import datetime
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from bench.harness.fleet import start_converged
from bench.harness.process import ServerProcess
from bench.harness.push import PushRun, timed_push
from bench.harness.servers import idle_cpu_rate, resource_message
from pilothouse.loadtest.cpu_time import CLOCK
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, push_order_key

TYPES = (CDS, EDS, LDS, RDS)
TRIGGERS = {"eds": EDS, "cds": CDS}
SETTLE = 2.0
"""Seconds a side waits after its fleet converged before reading RSS, and over which it
measures its idle CPU (``--settle``: a smoke run shortens it)."""
CONFIG_EVENT = re.compile(r"^(\S+Z) \w+ serve config update", re.MULTILINE)

Fire = Callable[[str, int], Awaitable[None]]


@dataclass(frozen=True)
class Limits:
    """How long to wait, and what ends a push."""

    timeout: float
    tail: float
    settle: float = SETTLE


@dataclass
class ServerFigures:
    """What one server did with its fleet."""

    name: str
    connect_seconds: float = 0.0
    rss_empty_kib: int = 0
    rss_connected_kib: int = 0
    rss_double_kib: int | None = None
    idle_cpu_rate: float = 0.0
    runs: dict[str, list[PushRun]] = field(default_factory=dict)
    watch_latency: dict[str, list[float]] = field(default_factory=dict)
    """Per trigger and run: seconds from the file write to the server's config event."""
    connections: list[int] = field(default_factory=list)
    """Per process of the server holding any: its connections from the fleet."""
    cpu_clock: str = CLOCK
    """The clock the server's CPU was read from (``cpu_time.CLOCK``, or ``TICKS``)."""

    def per_connection(self, proxies: int) -> float:
        """KiB of RSS per idle connection: connected minus empty, over the fleet."""
        return (self.rss_connected_kib - self.rss_empty_kib) / proxies

    def slope(self, proxies: int) -> float | None:
        """KiB per connection from N to 2N connected (None: not measured)."""
        if self.rss_double_kib is None:
            return None
        return (self.rss_double_kib - self.rss_connected_kib) / proxies


@dataclass
class Recording:
    """What pilothouse sent during each timed push, for the floor to send again: per trigger
    and run, every resource of every response the first proxy accepted during the run
    (types in push order), with its content as held after the run."""

    sent: dict[str, list[list[Any]]] = field(default_factory=dict)

    def record(self, kind: str, probe: SimulatedProxy, since: float) -> None:
        names: dict[str, set[str]] = {}
        for event in probe.events:
            if event.at >= since and event.accepted:
                names.setdefault(event.type_url, set()).update(event.names)
        self.sent.setdefault(kind, []).append(
            [
                resource_message(type_url, probe.holds(type_url)[name])
                for type_url in sorted(names, key=push_order_key)
                for name in sorted(names[type_url])
                if name in probe.holds(type_url)
            ]
        )

    def push_request(self, kind: str, index: int) -> Any:
        return discovery_pb2.DeltaDiscoveryResponse(
            system_version_info="push", resources=self.sent[kind][index]
        )


class Side:
    """A server under test with its own fleet of N proxies."""

    def __init__(
        self,
        server: ServerProcess,
        target: str,
        fire: Fire,
        fleet_factory: Callable[[str, str], ProxyFleet],
        limits: Limits,
    ) -> None:
        self.server = server
        self.target = target
        self.fire = fire
        self.figures = ServerFigures(server.name)
        self.limits = limits
        self._fleet_factory = fleet_factory
        self.fleet = fleet_factory(target, "app")

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def probe(self) -> SimulatedProxy:
        return self.fleet.proxies[0]

    async def connect(self) -> None:
        """Measure RSS empty, connect the fleet and wait for it, measure RSS and idle CPU."""
        self.figures.rss_empty_kib = self.server.rss_kib()
        report = await start_converged(self.fleet, self.limits.timeout, self.name)
        self.figures.connect_seconds = report.wall
        await asyncio.sleep(self.limits.settle)
        self.figures.rss_connected_kib = self.server.rss_kib()
        self.figures.idle_cpu_rate = await idle_cpu_rate(self.server, self.limits.settle)

    async def push(self, kind: str, index: int, cluster: str) -> PushRun:
        """Time one push of ``kind`` to the fleet."""

        async def trigger() -> None:
            await self.fire(kind, index)

        run = await timed_push(
            self.fleet,
            self.server,
            TRIGGERS[kind],
            cluster,
            trigger,
            idle_rate=self.figures.idle_cpu_rate,
            timeout=self.limits.timeout,
            tail=self.limits.tail,
            type_urls=TYPES,
        )
        if run.unconverged:
            raise RuntimeError(f"{self.name}: {run.unconverged} proxies missed {kind} push")
        self.figures.runs.setdefault(kind, []).append(run)
        self.figures.cpu_clock = self.server.cpu_clock
        return run

    async def double(self, app: str) -> None:
        """RSS with a second fleet of N (apps named ``app``) connected (2N in all), then
        disconnect it."""
        more = self._fleet_factory(self.target, app)
        try:
            await start_converged(more, self.limits.timeout, f"{self.name}, second fleet")
            await asyncio.sleep(self.limits.settle)
            self.figures.rss_double_kib = self.server.rss_kib()
        finally:
            await more.close()

    async def close(self) -> None:
        await self.fleet.close()


def config_event_time(log: str, offset: int) -> float | None:
    """The wall time of the first config event pilothouse logged after ``offset``."""
    found = CONFIG_EVENT.search(log, offset)
    if found is None:
        return None
    try:
        return datetime.datetime.fromisoformat(found.group(1)).timestamp()
    except ValueError:
        return None


class FileWrites:
    """Wall times of trigger file writes, matched afterwards with pilothouse's log."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self._writes: list[tuple[str, float, int]] = []

    def note(self, kind: str) -> None:
        self._writes.append((kind, time.time(), len(self.server.output())))

    def latencies(self) -> dict[str, list[float]]:
        log = self.server.output()
        out: dict[str, list[float]] = {}
        for kind, written, offset in self._writes:
            seen = config_event_time(log, offset)
            if seen is not None:
                out.setdefault(kind, []).append(seen - written)
        return out
