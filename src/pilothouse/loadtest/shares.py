"""A share of a load run: one slice of the fleet, in this process or in a worker process.

The run's driver talks to every share through the same ``Share`` interface:
``prepare`` (build it; a worker process is started and answers ready), ``start``
(its proxies connect, spread over ``ramp`` seconds), ``status`` (the latest
``ShareStatus``), ``arm`` (a change was made at an instant), ``mark`` (note
the traffic counters under a name), ``finish`` (the ``ShareResult``) and
``close`` (stop everything; safe to call more than once, and after a failure).

``LocalShare`` runs its slice on this process's event loop; the worker
process side of ``workers.WorkerShare`` is a ``LocalShare`` too.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.loadtest.outcome import ShareResult, ShareStatus
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.loadtest.spec import FleetSlice, LoadSpec, slice_identities
from pilothouse.loadtest.watch import FleetWatch


class Share(Protocol):
    """One slice of the fleet, wherever it runs."""

    @property
    def name(self) -> str: ...

    @property
    def proxies(self) -> int: ...

    async def prepare(self) -> None: ...

    async def start(self, ramp: float) -> None: ...

    def status(self) -> ShareStatus: ...

    def problem(self) -> str | None:
        """Why the share failed, once it has (None while it is healthy)."""
        ...

    async def arm(self, index: int, at: float) -> None: ...

    async def mark(self, name: str) -> None: ...

    async def finish(self) -> ShareResult: ...

    async def close(self) -> None: ...


class LocalShare:
    """A slice of the fleet on this event loop."""

    def __init__(self, spec: LoadSpec, part: FleetSlice) -> None:
        self.spec = spec
        self.part = part
        self.fleet: ProxyFleet | None = None
        self.watch: FleetWatch | None = None
        self._starting: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return "this process" if self.part.index == 0 else f"worker {self.part.index}"

    @property
    def proxies(self) -> int:
        return self.part.count

    async def prepare(self) -> None:
        self.fleet = ProxyFleet(
            self.spec.servers,
            slice_identities(self.spec, self.part),
            delta=self.spec.delta,
            streams_per_channel=self.spec.streams_per_connection,
            types=self.spec.type_set,
        )

    async def start(self, ramp: float) -> None:
        if self.fleet is None:
            raise RuntimeError("share not prepared")

        def watch(proxies: tuple[SimulatedProxy, ...]) -> None:
            self.watch = FleetWatch(proxies, self.spec.timeout)
            self.watch.attach()

        self._starting = asyncio.get_running_loop().create_task(
            self.fleet.start(ramp, prepare=watch), name="loadtest fleet start"
        )
        # The fleet builds its proxies (and the watch) before its first await.
        while self.watch is None and not self._starting.done():
            await asyncio.sleep(0)
        if self._starting.done():
            self._starting.result()

    def status(self) -> ShareStatus:
        if self.watch is None:
            return ShareStatus(proxies=self.part.count)
        return self.watch.status()

    def problem(self) -> str | None:
        starting = self._starting
        if starting is None or not starting.done() or starting.cancelled():
            return None
        error = starting.exception()
        return None if error is None else f"{self.name}: the fleet did not start: {error}"

    async def arm(self, index: int, at: float) -> None:
        if self.watch is not None:
            self.watch.arm(index, at)

    async def mark(self, name: str) -> None:
        if self.watch is not None:
            self.watch.mark(name)

    async def finish(self) -> ShareResult:
        if self.watch is None:
            raise RuntimeError("share not started")
        await self._stop_starting()
        return self.watch.result()

    async def _stop_starting(self) -> None:
        starting, self._starting = self._starting, None
        if starting is not None and not starting.done():
            starting.cancel()
        if starting is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await starting

    async def close(self) -> None:
        await self._stop_starting()
        if self.watch is not None:
            self.watch.detach()
        fleet, self.fleet = self.fleet, None
        if fleet is not None:
            await fleet.close()
