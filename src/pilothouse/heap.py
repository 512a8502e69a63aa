"""Keeping a long-running server's long-lived objects out of the cyclic collector's scans.

Python's cyclic garbage collector scans its oldest generation in full whenever that
generation has grown by a quarter since the last full scan. A server holding 10,000
streams has millions of objects that live as long as their stream (watch state,
subscriptions, queues, tasks), and every push replaces part of them: so full scans come
every few seconds under load, each one pausing the event loop for as long as it takes to
walk the whole heap (2.5 s at 10,000 streams here), while they find next to nothing to
free. Measured on ``bench/fleet10k.py``: 11 s of the server's 51 s of CPU were full
scans, two of them inside one push.

:class:`HeapKeeper` moves everything alive into the collector's permanent generation
(``gc.freeze``) every few seconds: what exists then is no longer scanned, new objects
are collected as usual, and reference counting still frees anything that is not in a
cycle, frozen or not. What it cannot free is a *cycle* that became garbage after it was
frozen (a closed stream's tasks, for instance); so once in a while (``compact_every``)
it unfreezes, collects in full and freezes again, at a moment when no push is in flight
if there is one (at the latest after twice that interval). That is one full pause every
few minutes instead of several per push. In a worker of ``serve --workers N`` (forked
from a parent whose heap is frozen) the first compaction also walks the objects inherited
from the parent, and so copies the pages they sit on (about 22 MiB) out of the shared heap.

:func:`set_collector_thresholds` sets how often the collector runs at all
(``PILOTHOUSE_GC_THRESHOLD0``..``2``), once per serving process when ``serve`` starts.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from pilothouse.settings import GcSettings

log = logging.getLogger("pilothouse.heap")

SETTLE_EVERY = 5.0
"""Seconds between freezes of what is alive."""
COMPACT_EVERY = 300.0
"""Seconds between full collections of the frozen heap (cycles frozen and since dropped)."""
CPYTHON_THRESHOLDS: Final = (700, 10, 10)
"""CPython's own collector thresholds, kept where a ``GcSettings`` field is 0."""


def collector_thresholds(settings: GcSettings) -> tuple[int, int, int]:
    """The thresholds ``settings`` ask for: each field, or CPython's value where it is 0."""
    asked = (settings.threshold0, settings.threshold1, settings.threshold2)
    first, second, third = (
        value or default for value, default in zip(asked, CPYTHON_THRESHOLDS, strict=True)
    )
    return first, second, third


def set_collector_thresholds(settings: GcSettings) -> tuple[int, int, int]:
    """Set this process's collector thresholds from ``settings`` and log them; returns
    them. (0 in ``gc.set_threshold`` would turn the collector off: never set here.)"""
    thresholds = collector_thresholds(settings)
    gc.set_threshold(*thresholds)
    log.info("garbage collector", extra={"thresholds": ",".join(map(str, thresholds))})
    return thresholds


@dataclass(frozen=True, slots=True)
class Compaction:
    """One full collection of the frozen heap: how long it paused and what it freed."""

    seconds: float
    collected: int
    frozen: int


class HeapKeeper:
    """Freezes the live heap periodically and compacts it now and then (module docstring)."""

    def __init__(
        self,
        busy: Callable[[], bool] = lambda: False,
        *,
        settle_every: float = SETTLE_EVERY,
        compact_every: float = COMPACT_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``busy``: whether a push is in flight now (a compaction waits for a quiet
        moment, at most ``compact_every`` longer)."""
        if settle_every <= 0 or compact_every <= 0:
            raise ValueError("heap keeper intervals must be positive")
        self._busy = busy
        self._settle_every = settle_every
        self._compact_every = compact_every
        self._clock = clock
        self._compacted = clock()
        self.compactions: list[Compaction] = []
        """The last few compactions, newest last (for logs and tests)."""

    async def run(self) -> None:
        """Freeze every ``settle_every`` seconds, compact when due; runs until cancelled."""
        while True:
            await asyncio.sleep(self._settle_every)
            self.tick()

    def tick(self) -> Compaction | None:
        """Freeze what is alive now; first collect the frozen heap in full when a
        compaction is due (and the server is quiet, or it is overdue)."""
        now = self._clock()
        since = now - self._compacted
        due = since >= self._compact_every
        if due and (not self._busy() or since >= 2 * self._compact_every):
            return self.compact()
        gc.freeze()
        return None

    def compact(self) -> Compaction:
        """Unfreeze, collect every generation and freeze again."""
        started = time.perf_counter()
        gc.unfreeze()
        collected = gc.collect()
        gc.freeze()
        done = Compaction(time.perf_counter() - started, collected, gc.get_freeze_count())
        self._compacted = self._clock()
        self.compactions = [*self.compactions[-9:], done]
        log.info(
            "heap compacted",
            extra={
                "pause_ms": round(done.seconds * 1000, 1),
                "collected": done.collected,
                "frozen": done.frozen,
            },
        )
        return done
