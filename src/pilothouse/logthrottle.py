"""Throttled log lines: at most a few lines per key per interval, and a count of the rest.

Some events can come by the thousand from one misbehaving peer (a refused stream, a
connection closed at a limit, an ``accept`` that found no file descriptor left). Each
one is worth a line, but a flood of identical lines buries everything else and fills
the disk. :class:`LogThrottle` decides, per key (a refusal reason, say), whether an
event gets its line: the first ``lines`` events of every ``interval`` do; the others
are only counted, and the next line that is written carries that count
(``suppressed``), so nothing goes unaccounted. It keeps one small entry per key and
does no I/O; the clock is given, so its rules are tested without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Window:
    """One key's current interval."""

    started: float
    written: int
    suppressed: int


class LogThrottle:
    """Says which events of each key may be logged: ``lines`` per ``interval`` seconds."""

    def __init__(
        self,
        interval: float,
        lines: int = 1,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval < 0 or lines < 1:
            raise ValueError("a log throttle needs an interval >= 0 and at least one line")
        self._interval = interval
        self._lines = lines
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def admit(self, key: str) -> int | None:
        """None when this event of ``key`` is not to be logged (it is counted); else the
        number of events of ``key`` that were not logged since its last line (0 mostly),
        to be written with this one."""
        now = self._clock()
        window = self._windows.get(key)
        if window is None:
            self._windows[key] = _Window(now, 1, 0)
            return 0
        if now - window.started >= self._interval:
            held = window.suppressed
            window.started, window.written, window.suppressed = now, 1, 0
            return held
        if window.written < self._lines:
            window.written += 1
            return 0
        window.suppressed += 1
        return None
