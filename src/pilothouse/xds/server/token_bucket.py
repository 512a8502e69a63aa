"""A token bucket that hands out turns: how long a newcomer waits, decided when it arrives.

Tokens accrue at ``rate`` a second up to ``burst``; each newcomer takes one. When none
is left, the newcomer *reserves* the next one to come: the count goes below zero and
the newcomer is told how long to wait, so newcomers are served first come, first
served, one every ``1 / rate`` seconds, and no turn is lost while they wait. A newcomer
whose turn is further away than it may wait takes nothing and is told so at once. This
is Go's ``rate.Limiter.Wait`` under a deadline, which istiod uses for new xDS streams.

Over any span of ``T`` seconds at most ``burst + rate * T`` turns fall due. The bucket
does no I/O and reads no clock: every call is given the time (``now``, in seconds of
any monotonic clock), so tests drive it with made-up instants.
"""

from __future__ import annotations


class TokenBucket:
    """Turns at ``rate`` per second with bursts of up to ``burst``; ``rate`` > 0."""

    __slots__ = ("_burst", "_rate", "_tokens", "_updated")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        _check(rate, burst)
        self._rate = rate
        self._burst = burst
        self._tokens = float(burst)
        """Tokens in hand at ``_updated``; below zero when turns are reserved ahead."""
        self._updated = now

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def burst(self) -> int:
        return self._burst

    def tokens(self, now: float) -> float:
        """Tokens in hand at ``now`` (negative: that many turns reserved ahead)."""
        return min(float(self._burst), self._tokens + max(0.0, now - self._updated) * self._rate)

    def reserve(self, now: float, longest_wait: float) -> float | None:
        """Take the next turn: the seconds until it comes (0.0: now), or None when it is
        further away than ``longest_wait`` (then nothing is taken)."""
        tokens = self.tokens(now) - 1.0
        wait = 0.0 if tokens >= 0 else -tokens / self._rate
        if wait > longest_wait:
            return None
        self._tokens = tokens
        self._updated = max(now, self._updated)
        return wait

    def reconfigure(self, rate: float, burst: int, now: float) -> None:
        """New rate and burst from ``now`` on. Turns already handed out keep their times
        and the next newcomer's turn comes after the last of them, then at the new rate;
        tokens in hand are kept, up to the new burst."""
        _check(rate, burst)
        tokens = self.tokens(now)
        if tokens < 0:  # reserved ahead: the same stretch of time, counted at the new rate
            tokens *= rate / self._rate
        self._tokens = min(tokens, float(burst))
        self._updated = max(now, self._updated)
        self._rate = rate
        self._burst = burst


def _check(rate: float, burst: int) -> None:
    if not rate > 0:
        raise ValueError(f"a token bucket needs a rate above 0, got {rate}")
    if burst < 1:
        raise ValueError(f"a token bucket needs a burst of at least 1, got {burst}")
