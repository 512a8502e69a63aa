"""A token bucket that also never hands out more than its rate in any one second.

Tokens accrue at ``rate`` a second up to ``burst``; each admission takes one. Tokens
never go below zero or pile up beyond ``burst``, so over any span of ``T`` seconds at
most ``burst + rate * T`` are taken, counted at the moments they are taken. On top of
that, no span of one second sees more than ``max(burst, ceil(rate))`` taken: the rate
is a hard cap per second, and the burst only lets a taker that comes late (an event
loop busy elsewhere for a moment) take the tokens that came due meanwhile, up to
``burst`` of them, without ever going over the rate in the second around it. A token
that nobody could take before the bucket filled is lost: a busy server admits fewer,
never a catch-up burst.

The bucket does no I/O and reads no clock: every call is given the time (``now``, in
seconds of any monotonic clock), so tests drive it with made-up instants.
"""

from __future__ import annotations

import collections
import math

_ROUNDING = 1e-9
"""Tokens short of a whole one that still count as one: fractions added up over many
intervals (0.1 s at 10 a second is not exact in binary) must not lose a token."""
SECOND = 1.0


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` in hand, at most ``per_second`` taken
    in any one second; ``rate`` > 0, ``burst`` >= 1."""

    __slots__ = ("_burst", "_per_second", "_rate", "_taken", "_tokens", "_updated")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        _check(rate, burst)
        self._rate = rate
        self._burst = burst
        self._per_second = _per_second(rate, burst)
        self._tokens = float(burst)
        self._updated = now
        self._taken: collections.deque[float] = collections.deque()
        """When tokens were taken within the last second, oldest first."""

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def burst(self) -> int:
        return self._burst

    @property
    def per_second(self) -> int:
        """Most tokens taken in any one second: ``max(burst, ceil(rate))``."""
        return self._per_second

    def tokens(self, now: float) -> float:
        """Tokens in hand at ``now`` (fractions count towards the next one)."""
        return min(float(self._burst), self._tokens + max(0.0, now - self._updated) * self._rate)

    def take(self, now: float) -> bool:
        """Take a token if one is in hand and the last second has room for it."""
        tokens = self.tokens(now)
        self._updated = max(now, self._updated)
        self._tokens = tokens
        if tokens < 1.0 - _ROUNDING or self._room(now) < 1:
            return False
        self._tokens = max(0.0, tokens - 1.0)
        self._taken.append(now)
        return True

    def wait(self, now: float, ahead: int = 0) -> float:
        """Seconds from ``now`` until a token can be taken by the taker after ``ahead``
        others waiting before it (0.0: now), if each is taken as soon as it can be."""
        missing = ahead + 1.0 - self.tokens(now)
        wait = 0.0 if missing <= _ROUNDING else missing / self._rate
        beyond = ahead + 1 - self._room(now)  # takes that must first leave the window
        if 0 < beyond <= len(self._taken):
            wait = max(wait, self._taken[beyond - 1] + SECOND - now)
        return wait

    def batch(self, seconds: float) -> int:
        """The tokens accrued in ``seconds``, whole: at least one, at most the burst."""
        return max(1, min(self._burst, math.floor(self._rate * seconds + _ROUNDING)))

    def reconfigure(self, rate: float, burst: int, now: float) -> None:
        """A new rate and burst from ``now`` on; the tokens in hand are kept, up to the
        new burst, and the tokens taken in the last second still count."""
        _check(rate, burst)
        tokens = self.tokens(now)
        self._updated = max(now, self._updated)
        self._rate = rate
        self._burst = burst
        self._per_second = _per_second(rate, burst)
        self._tokens = min(tokens, float(burst))

    def _room(self, now: float) -> int:
        """Tokens the window of the second up to ``now`` has room for."""
        taken = self._taken
        while taken and taken[0] <= now - SECOND + _ROUNDING:
            taken.popleft()
        return self._per_second - len(taken)


def _per_second(rate: float, burst: int) -> int:
    return max(burst, math.ceil(rate - _ROUNDING))


def _check(rate: float, burst: int) -> None:
    if not rate > 0:
        raise ValueError(f"a token bucket needs a rate above 0, got {rate}")
    if burst < 1:
        raise ValueError(f"a token bucket needs a burst of at least 1, got {burst}")
