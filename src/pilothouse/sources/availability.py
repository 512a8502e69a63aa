"""Whether a config source can be read right now, and if not, why.

A source that cannot be read (its directory gone, its upstream down) is *unavailable*,
not empty: it keeps serving its last good objects. Its :class:`Availability` says so for
``/ready`` and the logs; sources that can tell implement :class:`ReportsAvailability`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Availability:
    """One source's state. ``reason`` says why it is unavailable, or, for an available
    source, what part of it could not be read (empty when all is well)."""

    source: str
    available: bool
    reason: str = ""
    since: float = 0.0
    """Wall-clock time (``time.time()``) of the last change of ``available``."""

    @property
    def state(self) -> str:
        return "available" if self.available else "unavailable"

    def __str__(self) -> str:
        return f"{self.source}: {self.state}" + (f" ({self.reason})" if self.reason else "")

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "state": self.state,
            "reason": self.reason,
            "since": self.since,
        }


@runtime_checkable
class ReportsAvailability(Protocol):
    """A source that can say whether it is available."""

    def availability(self) -> Availability: ...
