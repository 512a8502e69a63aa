"""The three load scenarios, driven over the shares of a fleet: connect, push and churn.

Every scenario starts the same way: all shares start their proxies at once (or
spread over ``ramp`` seconds) and the run waits until every proxy has converged
or ``timeout`` has passed (the *connect* phase); if no proxy has connected a few
seconds in and nothing listens at the server's address, the run stops there with
``cannot connect to ADDRESS: connection refused`` (:mod:`.reachability`).  Then:

- ``connect`` ends there;
- ``push`` waits for the fleet to go quiet, makes a change with the trigger,
  tells every share when it was made and waits until every proxy reached it
  (or ``timeout``); ``repeat`` times; the server is sampled just before each
  trigger and once every proxy reached the change (``change_marks``), so that the
  report can give each change's server CPU;
- ``churn`` makes a change every ``1/rate`` seconds for ``duration`` seconds
  (never two at once, never catching up in a burst), then waits up to
  ``timeout`` for the last ones to arrive.

The driver only makes changes and waits; every time is measured by the shares
against the instant a change was made (``watch.FleetWatch``).  A stop event
(Ctrl-C) ends the current phase early; the shares still report what they have.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from pilothouse.loadtest.outcome import ShareResult, ShareStatus, combine
from pilothouse.loadtest.reachability import refused
from pilothouse.loadtest.server_process import ServerProbe, ServerRecord
from pilothouse.loadtest.shares import Share
from pilothouse.loadtest.spec import LoadSpec, Scenario
from pilothouse.loadtest.triggers import Fired, fire

POLL: Final = 0.05
QUIET_LIMIT: Final = 5.0
UNREACHABLE_AFTER: Final = 3.0
"""With no proxy connected this long, the driver asks whether anything listens."""
EXPIRY_SLACK: Final = 1.0
"""Shares close a change ``timeout`` after it was made; the driver allows this much more."""

START, CONNECTED, END = "start", "connected", "end"
CHANGES_BEGIN, CHANGES_MADE = "changes-begin", "changes-made"
"""Churn: the window in which changes were made (driver marks only)."""


def change_marks(number: int) -> tuple[str, str]:
    """The server sample marks around push change ``number``: before its trigger, and
    once every proxy reached it (or the wait ended)."""
    return f"change-{number}", f"change-{number}-reached"


class LoadtestError(RuntimeError):
    """The run could not go on (a worker died, the fleet did not start)."""


@dataclass
class RunRecord:
    """What the driver did: its phase marks, the changes it made, what the shares measured."""

    spec: LoadSpec
    marks: dict[str, float] = field(default_factory=dict)
    """``time.monotonic()`` at ``start``, ``connected`` (end of the connect phase), ``end``."""
    fired: list[Fired] = field(default_factory=list)
    results: list[ShareResult] = field(default_factory=list)
    interrupted: bool = False

    def seconds(self, start: str, end: str) -> float:
        if start not in self.marks or end not in self.marks:
            return 0.0
        return self.marks[end] - self.marks[start]


class LoadRun:
    """One run of a scenario over its shares."""

    def __init__(
        self,
        spec: LoadSpec,
        shares: Sequence[Share],
        stop: asyncio.Event,
        *,
        probe: ServerProbe | None = None,
        server: ServerRecord | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.shares = tuple(shares)
        self.stop = stop
        self.probe = probe
        self.server = server
        self.clock = clock
        self.record = RunRecord(spec)
        self.phase = "starting"
        self.armed = 0

    @property
    def proxies(self) -> int:
        return sum(share.proxies for share in self.shares)

    def status(self) -> ShareStatus:
        return combine([share.status() for share in self.shares])

    # -- the run ---------------------------------------------------------------

    async def run(self) -> RunRecord:
        """Prepare, start, run the scenario and collect every share's result.

        The caller closes the shares (also when this raises).
        """
        await asyncio.gather(*(share.prepare() for share in self.shares))
        await self._mark(START)
        await asyncio.gather(*(share.start(self.spec.ramp) for share in self.shares))
        self.phase = "connect"
        await self._connect()
        await self._mark(CONNECTED)
        if not self.stop.is_set():
            if self.spec.scenario is Scenario.PUSH:
                self.phase = "push"
                await self._push()
            elif self.spec.scenario is Scenario.CHURN:
                self.phase = "churn"
                await self._churn()
        await self._mark(END)
        self.record.interrupted = self.stop.is_set()
        self.phase = "finishing"
        self.record.results = list(await asyncio.gather(*(s.finish() for s in self.shares)))
        return self.record

    async def _connect(self) -> None:
        """Wait until every proxy converged once (or the timeout); stop with the reason
        when none has connected ``UNREACHABLE_AFTER`` seconds in and nothing listens."""
        total = self.proxies
        began = probed = self.clock()
        deadline = began + self.spec.ramp + self.spec.timeout
        while not self.stop.is_set():
            self._check()
            status = self.status()
            now = self.clock()
            if status.converged >= total or now >= deadline:
                return
            if status.connected == status.converged == 0 and now - probed >= UNREACHABLE_AFTER:
                problem = await refused(self.spec.servers)
                if problem is not None:
                    raise LoadtestError(problem)
                probed = self.clock()
            await self._sleep(POLL)

    async def _push(self) -> None:
        for number in range(1, self.spec.repeat + 1):
            await self._quiet()
            if self.stop.is_set():
                return
            before, reached = change_marks(number)
            await self._sample_server(before)
            if await self._change(number):
                await self._wait_for_changes()
                await self._sample_server(reached)
            if self.stop.is_set():
                return

    async def _churn(self) -> None:
        await self._quiet()
        interval = 1.0 / self.spec.rate
        begin = self.record.marks[CHANGES_BEGIN] = self.clock()
        end = begin + self.spec.duration
        due = begin
        number = 0
        while not self.stop.is_set():
            await self._sleep(due - self.clock())
            if self.stop.is_set() or self.clock() >= end:
                break
            number += 1
            await self._change(number)
            due = max(due + interval, self.clock())
        self.record.marks[CHANGES_MADE] = self.clock()
        self.phase = "churn: last changes"
        await self._wait_for_changes()

    async def _wait_for_changes(self) -> bool:
        """Wait until every share knows every change and none is still on its way."""
        armed = self.armed
        return await self._wait(
            lambda s: s.armed >= armed and s.pending == 0, self.spec.timeout + EXPIRY_SLACK
        )

    async def _change(self, number: int) -> bool:
        """Make change ``number`` and announce it to every share; False if the trigger
        failed."""
        fired = await fire(self.spec.trigger, number, self.spec.timeout)
        self.record.fired.append(fired)
        if not fired.ok:
            return False
        index = self.armed
        self.armed += 1
        await asyncio.gather(*(share.arm(index, fired.at) for share in self.shares))
        return True

    # -- waiting ---------------------------------------------------------------

    def _check(self) -> None:
        for share in self.shares:
            problem = share.problem()
            if problem is not None:
                raise LoadtestError(problem)

    async def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), seconds)

    async def _wait(self, condition: Callable[[ShareStatus], bool], timeout: float) -> bool:
        """Poll the shares until ``condition`` holds; False on timeout or stop."""
        deadline = self.clock() + timeout
        while not self.stop.is_set():
            self._check()
            if condition(self.status()):
                return True
            if self.clock() >= deadline:
                return False
            await self._sleep(POLL)
        return False

    async def _quiet(self) -> None:
        """Wait until no share saw a response for the spec's ``quiet`` seconds (at most
        ``QUIET_LIMIT``)."""
        deadline = self.clock() + QUIET_LIMIT
        seen = self.status().activity
        since = self.clock()
        while not self.stop.is_set() and self.clock() < deadline:
            self._check()
            await self._sleep(POLL)
            now = self.status().activity
            if now != seen:
                seen, since = now, self.clock()
            elif self.clock() - since >= self.spec.quiet:
                return

    async def _mark(self, name: str) -> None:
        self.record.marks[name] = self.clock()
        await asyncio.gather(*(share.mark(name) for share in self.shares))
        await self._sample_server(name)

    async def _sample_server(self, name: str) -> None:
        if self.probe is not None and self.server is not None:
            self.server.mark(name, await self.probe.sample())
