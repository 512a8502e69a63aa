"""Summaries of timing samples: percentiles (p50, p90, p99) and a frozen summary value."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) with linear interpolation between ranks.

    Raises ``ValueError`` for an empty sample or ``q`` outside [0, 100].
    """
    if not values:
        raise ValueError("percentile of an empty sample")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside [0, 100]")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return ordered[low]
    weight = rank - low
    return ordered[low] * (1 - weight) + ordered[high] * weight


def p50(values: Sequence[float]) -> float:
    return percentile(values, 50)


def p90(values: Sequence[float]) -> float:
    return percentile(values, 90)


def p99(values: Sequence[float]) -> float:
    return percentile(values, 99)


@dataclass(frozen=True)
class Summary:
    """Count, extremes, mean and the usual percentiles of a sample (seconds, usually)."""

    count: int
    minimum: float
    p50: float
    p90: float
    p99: float
    maximum: float
    mean: float

    def describe(self, unit: float = 1e3, suffix: str = "ms") -> str:
        """One line, values scaled by ``unit`` (milliseconds by default)."""
        return (
            f"n={self.count} min={self.minimum * unit:.1f}{suffix} "
            f"p50={self.p50 * unit:.1f}{suffix} p90={self.p90 * unit:.1f}{suffix} "
            f"p99={self.p99 * unit:.1f}{suffix} max={self.maximum * unit:.1f}{suffix}"
        )


def summarize(values: Sequence[float]) -> Summary:
    """The summary of a non-empty sample."""
    if not values:
        raise ValueError("summary of an empty sample")
    return Summary(
        count=len(values),
        minimum=min(values),
        p50=p50(values),
        p90=p90(values),
        p99=p99(values),
        maximum=max(values),
        mean=math.fsum(values) / len(values),
    )
