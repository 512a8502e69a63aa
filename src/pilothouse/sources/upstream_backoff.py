"""How long an upstream config source waits before it dials again: exponential, jittered.

The n-th consecutive failure (n from 1) waits a random time in
``[ceiling / 2, ceiling]`` where ``ceiling = min(initial × 2**(n−1), maximum)``:
0.25–0.5 s, then 0.5–1 s, 1–2 s … up to 15–30 s with the defaults. The jitter keeps
many replicas that lost the same server from dialling it in lockstep; the lower half
bound keeps a flapping server from being hammered. A stream that delivered a response
counts as a success and starts the sequence again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter; ``initial`` and ``maximum`` in seconds."""

    initial: float = 0.5
    maximum: float = 30.0

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"backoff needs 0 < initial <= maximum, got {self}")

    def ceiling(self, failures: int) -> float:
        """The longest wait after ``failures`` consecutive failures (counted from 1)."""
        if failures < 1:
            raise ValueError("failures count from 1")
        if failures > 64:
            return self.maximum
        return min(self.initial * float(2 ** (failures - 1)), self.maximum)

    def delay(self, failures: int, rng: random.Random) -> float:
        """A wait for the ``failures``-th consecutive failure."""
        top = self.ceiling(failures)
        return rng.uniform(top / 2, top)
