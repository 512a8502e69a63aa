"""The endpoint churn's events: which endpoint each one moves, where to, and how to see it.

Events are numbered from 1 across the whole benchmark (both servers, every
fleet size), so a number is never reused. Event ``k`` moves the first
WorkloadEntry of service ``(k - 1) % services`` of the push fan-out mesh
(``harness/mesh.py``) to an address that encodes ``k``:
``10.(200 + k // 65536).(k // 256 % 256).(k % 256)``. The mesh's own
addresses stay below ``10.200``, so the number can be read back from any
ClusterLoadAssignment: the largest event number among its endpoint
addresses is its *generation*. A load assignment of service ``s`` reflects
event ``k`` (of ``s``) once its generation is ``k`` or more: a later event
replaced the address ``k`` set, so a version holding the later address
holds ``k``'s change too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]

from bench.harness.mesh import WORKLOAD_ENTRY, FanoutMesh
from pilothouse.loadtest.triggers import write_atomically

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


class GenerationReader:
    """``generation`` remembered per encoded load assignment.

    The simulated proxies of a fleet hold one shared ``bytes`` object per
    distinct resource, so each distinct load assignment is decoded once.
    """

    def __init__(self) -> None:
        self._known: dict[bytes, int] = {}

    def __call__(self, body: bytes) -> int:
        known = self._known.get(body)
        if known is None:
            known = self._known[body] = generation(body)
        return known


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
