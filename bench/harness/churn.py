"""Endpoint churn events, and which proxy has which of them since when.

Events are numbered from 1 across the whole benchmark (every server, every fleet
size), so a number is never reused. Event ``k`` moves the first WorkloadEntry of
service ``(k - 1) % services`` of the push fan-out mesh (``harness/mesh.py``) to an
address that encodes ``k``: ``10.(200 + k // 65536).(k // 256 % 256).(k % 256)``. The
mesh's own addresses stay below ``10.200``, so the number can be read back from any
ClusterLoadAssignment: the largest event number among its endpoint addresses is its
*generation*. A load assignment of service ``s`` reflects event ``k`` (of ``s``) once its
generation is ``k`` or more: a later event replaced the address ``k`` set, so a version
holding the later address holds ``k``'s change too.

``ChurnLedger`` is the bookkeeping, without I/O: ``reach(proxy, service, generation,
at)`` says that a proxy ACKed, at ``at``, a load assignment of that generation; every
event of the service up to it that the proxy did not have yet is then reached, with
latency ``at`` minus the instant the event was made, however many events one push
merged. An event is *complete* once every proxy reached it; its completion time is its
slowest proxy's latency. ``LedgerTap`` feeds a ledger from a fleet's accepted EDS
responses.

``watch_latencies`` reads from pilothouse's log when its file watcher saw each event: it
logs one ``config update`` line per changed object, stamped to the millisecond (UTC); the
first such line for a service's churned WorkloadEntry after an event was written (and
before the next event of that service) is when the server saw it.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import math
import re
import time
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]

from bench.harness.mesh import WORKLOAD_ENTRY, FanoutMesh
from pilothouse.loadtest.holdings import XdsEvent
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.loadtest.triggers import write_atomically
from pilothouse.protocol.type_urls import EDS

SECOND_OCTET: Final = 200
"""Churned addresses are 10.200.0.1 and up; the mesh's own stay below 10.200."""
LARGEST_EVENT: Final = (256 - SECOND_OCTET) * 65536 - 1
NO_EVENT: Final = 0
"""The generation of a load assignment that no event has touched."""


def churn_address(number: int) -> str:
    """The address event ``number`` gives its endpoint."""
    if not 1 <= number <= LARGEST_EVENT:
        raise ValueError(f"event numbers run from 1 to {LARGEST_EVENT}, not {number}")
    return f"10.{SECOND_OCTET + (number >> 16)}.{(number >> 8) & 0xFF}.{number & 0xFF}"


def churn_number(address: str) -> int:
    """The event number an address encodes, or ``NO_EVENT`` for any other address."""
    parts = address.split(".")
    if len(parts) != 4 or parts[0] != "10":
        return NO_EVENT
    try:
        second, third, fourth = (int(part) for part in parts[1:])
    except ValueError:
        return NO_EVENT
    if not SECOND_OCTET <= second <= 255 or not (0 <= third <= 255 and 0 <= fourth <= 255):
        return NO_EVENT
    return ((second - SECOND_OCTET) << 16) | (third << 8) | fourth


def generation(body: bytes) -> int:
    """The largest event number among a ClusterLoadAssignment's endpoint addresses."""
    assignment = endpoint_pb2.ClusterLoadAssignment.FromString(body)
    found = NO_EVENT
    for locality in assignment.endpoints:
        for lb_endpoint in locality.lb_endpoints:
            address = lb_endpoint.endpoint.address.socket_address.address
            found = max(found, churn_number(address))
    return found


def with_address(body: bytes, old: str, new: str) -> bytes:
    """The ClusterLoadAssignment ``body`` with every endpoint at ``old`` moved to ``new``."""
    assignment = endpoint_pb2.ClusterLoadAssignment.FromString(body)
    moved = 0
    for locality in assignment.endpoints:
        for lb_endpoint in locality.lb_endpoints:
            socket = lb_endpoint.endpoint.address.socket_address
            if socket.address == old:
                socket.address = new
                moved += 1
    if not moved:
        raise ValueError(f"no endpoint at {old} in {assignment.cluster_name}")
    return bytes(assignment.SerializeToString())


@dataclass(frozen=True)
class ChurnEvent:
    """One event: its number, the service whose endpoint it moves, the new address, and
    when it was made (``time.monotonic()`` and wall-clock ``time.time()``)."""

    number: int
    service: int
    address: str
    at: float
    wall: float


class ChurnSchedule:
    """Hands out events in order: numbers from 1, services round-robin."""

    def __init__(self, services: int) -> None:
        if services < 1:
            raise ValueError("at least one service")
        self.services = services
        self.made = 0

    def next(self, at: float | None = None) -> ChurnEvent:
        """The next event, made now (or at ``at``)."""
        self.made += 1
        number = self.made
        return ChurnEvent(
            number=number,
            service=(number - 1) % self.services,
            address=churn_address(number),
            at=time.monotonic() if at is None else at,
            wall=time.time(),
        )


def workload_entry_path(mesh: FanoutMesh, service: int) -> Path:
    """The file of the service's first WorkloadEntry (the one the churn moves)."""
    return mesh.root / mesh.namespace_of(service) / f"svc-{service}-we-0.yaml"


def write_event(mesh: FanoutMesh, event: ChurnEvent) -> None:
    """Rewrite the WorkloadEntry the event moves, whole, with a rename."""
    text = WORKLOAD_ENTRY.format(
        name=f"svc-{event.service}",
        index=0,
        ns=mesh.namespace_of(event.service),
        address=event.address,
    )
    write_atomically(workload_entry_path(mesh, event.service), text)


class ChurnLedger:
    """Per event and proxy: reached or not, and how long it took."""

    def __init__(self, proxies: int, services: int) -> None:
        if proxies < 1 or services < 1:
            raise ValueError("a ledger needs proxies and services")
        self.proxies = proxies
        self.services = services
        self.events: list[ChurnEvent] = []
        self.latencies = array("d")
        """Every (event, proxy) latency, in the order they were reached."""
        self._by_service: list[list[int]] = [[] for _ in range(services)]
        """Per service: positions in ``events`` of its events, oldest first."""
        self._cursor = [[0] * services for _ in range(proxies)]
        """Per proxy and service: how many of the service's events it has reached."""
        self._reached: list[int] = []
        self._completion: list[float | None] = []
        self.complete = 0
        self._complete_prefix = 0

    def add(self, event: ChurnEvent) -> None:
        """A new event, made after every event added so far."""
        if self.events and event.number <= self.events[-1].number:
            raise ValueError("events must be added in the order they were made")
        if not 0 <= event.service < self.services:
            raise ValueError(f"service {event.service} is outside the ledger")
        self._by_service[event.service].append(len(self.events))
        self.events.append(event)
        self._reached.append(0)
        self._completion.append(None)

    def reach(self, proxy: int, service: int, generation: int, at: float) -> int:
        """``proxy`` ACKed, at ``at``, ``service``'s load assignment of ``generation``;
        returns how many events it reached with it."""
        positions = self._by_service[service]
        cursors = self._cursor[proxy]
        cursor = start = cursors[service]
        events = self.events
        while cursor < len(positions):
            position = positions[cursor]
            event = events[position]
            if event.number > generation:
                break
            latency = at - event.at
            self.latencies.append(latency)
            reached = self._reached[position] = self._reached[position] + 1
            if reached == self.proxies:
                self._completion[position] = latency
                self.complete += 1
            cursor += 1
        cursors[service] = cursor
        return cursor - start

    @property
    def pending(self) -> int:
        """Events some proxy has not reached yet."""
        return len(self.events) - self.complete

    def delivered(self, through: int) -> bool:
        """Whether the first ``through`` events have all reached every proxy."""
        completion = self._completion
        while (
            self._complete_prefix < len(completion)
            and completion[self._complete_prefix] is not None
        ):
            self._complete_prefix += 1
        return self._complete_prefix >= through

    def completions(self) -> tuple[float | None, ...]:
        """Per event, in order: seconds until every proxy had it (None: some never did)."""
        return tuple(self._completion)


GenerationOf = Callable[[bytes], int]


class LedgerTap:
    """Reports a fleet's accepted EDS responses to a ledger, by proxy index."""

    def __init__(
        self,
        proxies: Sequence[SimulatedProxy],
        ledger: ChurnLedger,
        service_of: Mapping[str, int],
        generation_of: GenerationOf,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len(proxies) != ledger.proxies:
            raise ValueError("the ledger counts a different number of proxies")
        self.proxies = tuple(proxies)
        self.ledger = ledger
        self.service_of = service_of
        self.generation_of = generation_of
        self.clock = clock
        self._index = {proxy: index for index, proxy in enumerate(self.proxies)}
        self._seen: list[XdsEvent | None] = [None] * len(self.proxies)

    def attach(self) -> None:
        """Start listening; what the proxies hold already counts at once."""
        now = self.clock()
        for index, proxy in enumerate(self.proxies):
            self._report(index, proxy, proxy.holds(EDS).keys(), now)
            proxy.add_listener(self.observe)

    def detach(self) -> None:
        for proxy in self.proxies:
            proxy.remove_listener(self.observe)

    def observe(self, proxy: SimulatedProxy) -> None:
        """Runs after each response (and connection change) of ``proxy``."""
        events = proxy.events
        if not events:
            return
        last = events[-1]
        index = self._index[proxy]
        if last is self._seen[index] or last.type_url != EDS or not last.accepted:
            return
        self._seen[index] = last
        self._report(index, proxy, last.names, self.clock())

    def _report(self, index: int, proxy: SimulatedProxy, names: Iterable[str], now: float) -> None:
        held = proxy.holds(EDS)
        for name in names:
            service = self.service_of.get(name)
            resource = held.get(name)
            if service is None or resource is None:
                continue
            self.ledger.reach(index, service, self.generation_of(resource.body), now)


CONFIG_UPDATE = re.compile(
    r'^(\S+Z) \w+ serve config update key="WorkloadEntry [^/"]+/svc-(\d+)-0"', re.MULTILINE
)
STAMP_SLACK = 0.001
"""Log stamps are truncated to the millisecond: one may read up to 1 ms before the write."""


def config_updates(log: str, offset: int = 0) -> dict[int, list[float]]:
    """Per service, the wall times of its churned WorkloadEntry's config updates, in order."""
    seen: dict[int, list[float]] = {}
    for found in CONFIG_UPDATE.finditer(log, offset):
        with contextlib.suppress(ValueError):
            stamp = datetime.datetime.fromisoformat(found.group(1)).timestamp()
            seen.setdefault(int(found.group(2)), []).append(stamp)
    return {service: sorted(stamps) for service, stamps in seen.items()}


def watch_latencies(
    events: Sequence[ChurnEvent], updates: Mapping[int, Sequence[float]]
) -> list[float | None]:
    """Per event, in order: seconds from its write to the server's update (None: not found)."""
    following: dict[int, float] = {}
    """Per service: the wall time of the event after the one being matched."""
    out: list[float | None] = []
    for event in reversed(events):
        stamps = updates.get(event.service, ())
        start = event.wall - STAMP_SLACK
        index = bisect.bisect_left(stamps, start)
        found = index < len(stamps) and stamps[index] < following.get(event.service, math.inf)
        out.append(max(0.0, stamps[index] - event.wall) if found else None)
        following[event.service] = start
    return out[::-1]
