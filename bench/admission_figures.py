"""What the admission storm benchmark reads from a server's log, and the figures it reports.

``pilothouse serve`` with ``--log-level info,xds.admission:debug`` writes one line per
stream it admits (``xds stream admitted at=<seconds since the epoch>``, the moment its
token was taken, to the microsecond) and per stream it refuses (``xds stream refused
reason=...``). ``admitted_times`` reads the former; ``busiest_window`` is the most
admissions in any one-second span (half open: ``[t, t + 1)``), the figure to hold
against the configured rate.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

_STAMP = r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z debug xds\.admission "
_ADMITTED = re.compile(_STAMP + r"xds stream admitted at=(\d+\.\d+)", re.MULTILINE)
_REFUSED = re.compile(_STAMP + r"xds stream refused reason=(\w+)", re.MULTILINE)


def admitted_times(log: str) -> list[float]:
    """When each stream was admitted (seconds since the epoch), in order."""
    return sorted(float(found.group(2)) for found in _ADMITTED.finditer(log))


def refusals(log: str) -> Counter[str]:
    """Refused streams by reason."""
    return Counter(found.group(2) for found in _REFUSED.finditer(log))


def busiest_window(times: Sequence[float], length: float = 1.0) -> int:
    """The most of ``times`` (sorted) within any half-open span ``[t, t + length)``."""
    most = 0
    for index, start in enumerate(times):
        # the window that starts at an admission is the fullest among those around it
        end = bisect.bisect_left(times, start + length - 1e-9, lo=index)
        most = max(most, end - index)
    return most


@dataclass(frozen=True)
class Admissions:
    """One storm's admissions as the server logged them."""

    admitted: int
    busiest_second: int
    """Most admissions in any one-second span."""
    mean_rate: float
    """Admissions per second from the first to the last (0 with fewer than two)."""
    refused: dict[str, int]

    @classmethod
    def from_log(cls, log: str) -> Admissions:
        times = admitted_times(log)
        span = times[-1] - times[0] if len(times) > 1 else 0.0
        return cls(
            admitted=len(times),
            busiest_second=busiest_window(times),
            mean_rate=(len(times) - 1) / span if span > 0 else 0.0,
            refused=dict(sorted(refusals(log).items())),
        )
