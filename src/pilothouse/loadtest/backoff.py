"""How long a simulated proxy waits before it reconnects: Envoy's jittered exponential backoff.

Envoy draws the n-th delay (n from 1) uniformly from
``[0, initial × (2**n − 1))`` and caps it at ``maximum`` (500 ms and 30 s for
its xDS stream); a stream that delivered a response resets the count.  Here
``initial`` and ``maximum`` are settable so tests can reconnect quickly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Envoy-like full-jitter exponential backoff."""

    initial: float = 0.5
    maximum: float = 30.0

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.maximum < self.initial:
            raise ValueError(f"backoff needs 0 < initial <= maximum, got {self}")

    def ceiling(self, attempt: int) -> float:
        """The upper bound of the ``attempt``-th delay (``attempt`` counts from 1)."""
        if attempt < 1:
            raise ValueError("attempts count from 1")
        if attempt > 62:
            return self.maximum
        return min(self.initial * ((1 << attempt) - 1), self.maximum)

    def delay(self, attempt: int, rng: random.Random) -> float:
        """A delay for the ``attempt``-th reconnect."""
        return rng.uniform(0.0, self.ceiling(attempt))
