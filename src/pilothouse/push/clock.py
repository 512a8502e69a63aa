"""Monotonic clocks for the push stage: the event loop's own, and a manual one for tests.

The debouncer and the push queue read time and arm timers only through :class:`Clock`, so
tests (and simulations such as the load generator) can move time by hand instead of sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Timer(Protocol):
    """A scheduled callback that can be called off."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic seconds and callbacks at a point in time; used from inside the event loop."""

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """The running event loop's monotonic clock (``loop.time()`` and ``loop.call_at``).

    The loop is looked up on first use, so a ``LoopClock`` can be built before any loop
    runs, and kept while it runs: ``asyncio.get_running_loop`` asks the OS for the
    process id on every call, and the push queue reads the clock twice per push.
    """

    __slots__ = ("_loop",)

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def _running(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None or not loop.is_running():
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def now(self) -> float:
        return self._running().time()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        return self._running().call_at(when, callback)


@dataclass(order=True)
class _ManualTimer:
    when: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when :meth:`advance` is called; timers fire as it passes them."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[_ManualTimer] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(when, next(self._seq), callback)
        heapq.heappush(self._timers, timer)
        return timer

    def pending_timers(self) -> int:
        """How many timers are armed and not cancelled."""
        return sum(1 for timer in self._timers if not timer.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer due on the way, in order."""
        if seconds < 0:
            raise ValueError("a monotonic clock cannot go back")
        target = self._now + seconds
        while self._timers and self._timers[0].when <= target:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, timer.when)
            timer.callback()
        self._now = target
