"""A token bucket: tokens accrue at ``rate`` a second up to ``burst``; each admission takes one.

This is the classic bucket, kept to the letter: tokens never go below zero and never
pile up beyond ``burst``, so over any span of ``T`` seconds at most ``burst + rate * T``
tokens are taken, counted at the moments they are taken. A token that comes due while
nobody can take it (the taker's event loop is busy elsewhere) is lost once the bucket
is full: a busy server then admits fewer streams rather than a catch-up burst when it
gets back to them.

The bucket does no I/O and reads no clock: every call is given the time (``now``, in
seconds of any monotonic clock), so tests drive it with made-up instants.
"""

from __future__ import annotations

_ROUNDING = 1e-9
"""Tokens short of a whole one that still count as one: fractions added up over many
intervals (0.1 s at 10 a second is not exact in binary) must not lose a token."""


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` in hand; ``rate`` > 0, ``burst`` >= 1."""

    __slots__ = ("_burst", "_rate", "_tokens", "_updated")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        _check(rate, burst)
        self._rate = rate
        self._burst = burst
        self._tokens = float(burst)
        self._updated = now

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def burst(self) -> int:
        return self._burst

    def tokens(self, now: float) -> float:
        """Tokens in hand at ``now`` (fractions count towards the next one)."""
        return min(float(self._burst), self._tokens + max(0.0, now - self._updated) * self._rate)

    def take(self, now: float) -> bool:
        """Take a token if one is in hand."""
        tokens = self.tokens(now)
        self._updated = max(now, self._updated)
        if tokens < 1.0 - _ROUNDING:
            self._tokens = tokens
            return False
        self._tokens = max(0.0, tokens - 1.0)
        return True

    def wait(self, now: float, ahead: int = 0) -> float:
        """Seconds from ``now`` until a token is in hand for the taker after ``ahead``
        others waiting before it (0.0: now), if every token is taken when it comes due."""
        missing = ahead + 1.0 - self.tokens(now)
        return 0.0 if missing <= _ROUNDING else missing / self._rate

    def reconfigure(self, rate: float, burst: int, now: float) -> None:
        """A new rate and burst from ``now`` on; the tokens in hand are kept, up to the
        new burst."""
        _check(rate, burst)
        tokens = self.tokens(now)
        self._updated = max(now, self._updated)
        self._rate = rate
        self._burst = burst
        self._tokens = min(tokens, float(burst))


def _check(rate: float, burst: int) -> None:
    if not rate > 0:
        raise ValueError(f"a token bucket needs a rate above 0, got {rate}")
    if burst < 1:
        raise ValueError(f"a token bucket needs a burst of at least 1, got {burst}")
