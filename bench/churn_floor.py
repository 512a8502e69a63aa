"""The floor's side of the endpoint churn: the same events, batched the way pilothouse batches.

The transport floor has no debouncer and no per-connection push queue: handed 50 pushes a
second for a thousand streams it would fall ever further behind. ``FloorBatcher`` gives it
pilothouse's batching rules, outside it: events merge into a pending batch, released once
no event has come for ``after`` seconds or ``maximum`` seconds after its first event,
whichever is sooner (``PILOTHOUSE_DEBOUNCE_AFTER``, ``PILOTHOUSE_DEBOUNCE_MAX``); a batch
is not released while the previous one is not yet ACKed by every proxy, or at most
``gate`` seconds (pilothouse holds a release while a push is in flight); a release is one
control call pushing the latest load assignment of every service the batch changed, made
from the bytes pilothouse served with only the churned address replaced.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from bench.harness.churn import ChurnEvent, ChurnLedger, with_address
from pilothouse.protocol.type_urls import EDS

POLL = 0.005


class FloorBatcher:
    """Pending events and when they are due (no I/O, no clock of its own)."""

    def __init__(self, after: float, maximum: float) -> None:
        if after < 0 or maximum < 0:
            raise ValueError("debounce times must not be negative")
        self.after = after
        self.maximum = maximum
        self.pending: list[ChurnEvent] = []
        self._first = 0.0
        self._last = 0.0

    def add(self, event: ChurnEvent) -> None:
        if not self.pending:
            self._first = event.at
        self._last = event.at
        self.pending.append(event)

    def due_at(self) -> float | None:
        """When the pending batch may go (None: nothing pending)."""
        if not self.pending:
            return None
        return min(self._last + self.after, self._first + self.maximum)

    def take(self) -> list[ChurnEvent]:
        batch, self.pending = self.pending, []
        return batch


@dataclass(frozen=True)
class Template:
    """A service's load assignment as pilothouse served it, and its churned endpoint's
    address in it."""

    name: str
    body: bytes
    address: str


def latest_per_service(batch: list[ChurnEvent]) -> dict[int, ChurnEvent]:
    """The last event of each service in a batch (it replaces the earlier ones)."""
    latest: dict[int, ChurnEvent] = {}
    for event in batch:
        latest[event.service] = event
    return latest


def push_request(batch: list[ChurnEvent], templates: Mapping[int, Template]) -> Any:
    """The floor control call that pushes the load assignments a batch changed."""
    resources = []
    for service, event in sorted(latest_per_service(batch).items()):
        template = templates[service]
        body = with_address(template.body, template.address, event.address)
        resources.append(
            discovery_pb2.Resource(
                name=template.name,
                version=str(event.number),
                resource=any_pb2.Any(type_url=EDS, value=body),
            )
        )
    return discovery_pb2.DeltaDiscoveryResponse(system_version_info="push", resources=resources)


class FloorPusher:
    """Releases batches to the floor until ``finish`` and nothing is left."""

    def __init__(
        self,
        batcher: FloorBatcher,
        ledger: ChurnLedger,
        templates: Mapping[int, Template],
        apply: Callable[[Any], Awaitable[None]],
        gate: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.batcher = batcher
        self.ledger = ledger
        self.templates = templates
        self.apply = apply
        self.gate = gate
        self.clock = clock
        self.pushes = 0
        self.gate_timeouts = 0
        self.released: dict[int, float] = {}
        """Event number → when the batch holding it was handed to the floor."""
        self._finished = False
        self._through = 0
        self._released_at: float | None = None

    def finish(self) -> None:
        """No more events will come: push what is pending, then stop."""
        self._finished = True

    def _gate_open(self, now: float) -> bool:
        if self._released_at is None or self.ledger.delivered(self._through):
            return True
        if now - self._released_at >= self.gate:
            self.gate_timeouts += 1
            return True
        return False

    async def run(self) -> None:
        while True:
            due = self.batcher.due_at()
            if due is None:
                if self._finished:
                    return
                await asyncio.sleep(POLL)
                continue
            now = self.clock()
            if now < due or not self._gate_open(now):
                await asyncio.sleep(min(POLL, max(0.0, due - now)) or POLL)
                continue
            batch = self.batcher.take()
            self._through = len(self.ledger.events)
            self._released_at = now
            self.pushes += 1
            for event in batch:
                self.released[event.number] = now
            await self.apply(push_request(batch, self.templates))


def completions_from_release(ledger: ChurnLedger, released: Mapping[int, float]) -> list[float]:
    """Per complete event: from its batch's release to the slowest proxy's ACK (the
    transport's own share, without the batching wait)."""
    out = []
    for event, completion in zip(ledger.events, ledger.completions(), strict=True):
        release = released.get(event.number)
        if completion is not None and release is not None:
            out.append(completion - (release - event.at))
    return out
