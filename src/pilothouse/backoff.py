"""How long a client waits before it dials again: exponential backoff with jitter.

One :class:`Backoff` for every redialling client (the ``xds://`` source, the load
generator's simulated proxies). The n-th consecutive failure (n from 1) waits a random
time below a ceiling that grows from ``initial`` and stops at ``maximum`` (seconds); a
stream that delivered a response counts as a success and starts again from 1. Two shapes:

- :attr:`Jitter.HALF` (the default): ``[ceiling / 2, ceiling]`` with
  ``ceiling = min(initial × 2**(n−1), maximum)``: 0.25–0.5 s, then 0.5–1 s, 1–2 s … up to
  15–30 s with the defaults. The jitter keeps many replicas that lost the same server from
  dialling it in lockstep; the lower bound keeps a flapping server from being hammered.
- :attr:`Jitter.FULL`, Envoy's own (:meth:`Backoff.envoy`): ``[0, ceiling)`` with
  ``ceiling = min(initial × (2**n − 1), maximum)``, 500 ms and 30 s for Envoy's xDS
  stream; what a simulated Envoy does.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass


class Jitter(enum.Enum):
    """Where in the range below the ceiling a delay falls, and how the ceiling grows."""

    HALF = "half"
    FULL = "full"


_LONGEST_GROWTH = 62
"""Past this many failures every ceiling is the maximum (and 2**n stays a small int)."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter; ``initial`` and ``maximum`` in seconds."""

    initial: float = 0.5
    maximum: float = 30.0
    jitter: Jitter = Jitter.HALF

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"backoff needs 0 < initial <= maximum, got {self}")

    @classmethod
    def envoy(cls, initial: float = 0.5, maximum: float = 30.0) -> Backoff:
        """Envoy's jittered exponential backoff (defaults those of its xDS stream)."""
        return cls(initial, maximum, Jitter.FULL)

    def ceiling(self, failures: int) -> float:
        """The longest wait after ``failures`` consecutive failures (counted from 1)."""
        if failures < 1:
            raise ValueError("failures count from 1")
        if failures > _LONGEST_GROWTH:
            return self.maximum
        if self.jitter is Jitter.FULL:
            return min(self.initial * ((1 << failures) - 1), self.maximum)
        return min(self.initial * float(1 << (failures - 1)), self.maximum)

    def delay(self, failures: int, rng: random.Random) -> float:
        """A wait for the ``failures``-th consecutive failure."""
        top = self.ceiling(failures)
        floor = top / 2 if self.jitter is Jitter.HALF else 0.0
        return rng.uniform(floor, top)
