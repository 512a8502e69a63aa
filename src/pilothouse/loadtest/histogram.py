"""A mergeable histogram of convergence times: bounded memory, percentiles within 1 %.

A load run can collect a great many samples (every proxy times every change of
a churn run), spread over several processes.  ``LatencyHistogram`` keeps them
in logarithmic buckets, each 1 % wider than the one before, so it never holds
more than a few thousand counters, merges by adding counts, and travels as a
small JSON object.  Count, minimum, maximum and mean are exact; a percentile is
the (geometric) middle of the bucket holding that rank, clamped to the exact
extremes, so it is within 1 % of the true nearest-rank percentile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pilothouse.loadtest.stats import Summary

FLOOR: Final = 1e-6
"""Samples at or below a microsecond share bucket 0."""
GROWTH: Final = 1.01
"""Each bucket is 1 % wider than the one before it."""
_LOG_GROWTH: Final = math.log(GROWTH)


def bucket_of(seconds: float) -> int:
    """The bucket a sample falls in (0 for anything at or below ``FLOOR``)."""
    if seconds <= FLOOR:
        return 0
    return max(0, math.ceil(math.log(seconds / FLOOR) / _LOG_GROWTH))


def bucket_value(bucket: int) -> float:
    """The geometric middle of a bucket: within half a bucket (0.5 %) of any sample in it."""
    if bucket <= 0:
        return FLOOR
    return float(FLOOR * GROWTH ** (bucket - 0.5))


class LatencyHistogram:
    """Counts of durations (seconds) by logarithmic bucket, with exact count and extremes."""

    __slots__ = ("buckets", "count", "maximum", "minimum", "total")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.minimum = math.inf
        self.maximum = -math.inf

    def add(self, seconds: float) -> None:
        """Record one duration (a negative one, from clock jitter, counts as 0)."""
        value = max(0.0, seconds)
        key = bucket_of(value)
        self.buckets[key] = self.buckets.get(key, 0) + 1
        self.count += 1
        self.total += value
        self.minimum = min(self.minimum, value)
        self.maximum = max(self.maximum, value)

    def extend(self, values: Iterable[float]) -> None:
        for value in values:
            self.add(value)

    def merge(self, other: LatencyHistogram) -> None:
        """Add every sample of ``other`` to this histogram."""
        for key, count in other.buckets.items():
            self.buckets[key] = self.buckets.get(key, 0) + count
        self.count += other.count
        self.total += other.total
        self.minimum = min(self.minimum, other.minimum)
        self.maximum = max(self.maximum, other.maximum)

    def percentile(self, q: float) -> float:
        """The nearest-rank ``q``-th percentile (0–100), to within 1 %.

        Raises ``ValueError`` for an empty histogram or ``q`` outside [0, 100].
        """
        if not self.count:
            raise ValueError("percentile of an empty histogram")
        if not 0 <= q <= 100:
            raise ValueError(f"percentile {q} is outside [0, 100]")
        if q == 0:
            return self.minimum
        if q == 100:
            return self.maximum
        rank = max(1, math.ceil(q / 100 * self.count))
        seen = 0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if seen >= rank:
                return min(max(bucket_value(key), self.minimum), self.maximum)
        return self.maximum

    def summary(self) -> Summary | None:
        """Count, extremes, mean and p50/p90/p99; None when empty."""
        if not self.count:
            return None
        return Summary(
            count=self.count,
            minimum=self.minimum,
            p50=self.percentile(50),
            p90=self.percentile(90),
            p99=self.percentile(99),
            maximum=self.maximum,
            mean=self.total / self.count,
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (bucket keys become strings) that ``from_json`` reads back."""
        return {
            "buckets": {str(key): count for key, count in sorted(self.buckets.items())},
            "count": self.count,
            "total": self.total,
            "min": self.minimum if self.count else None,
            "max": self.maximum if self.count else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LatencyHistogram:
        histogram = cls()
        histogram.buckets = {int(key): int(count) for key, count in data["buckets"].items()}
        histogram.count = int(data["count"])
        histogram.total = float(data["total"])
        if histogram.count:
            histogram.minimum = float(data["min"])
            histogram.maximum = float(data["max"])
        if sum(histogram.buckets.values()) != histogram.count:
            raise ValueError("histogram bucket counts do not add up to its count")
        return histogram


def summary_json(summary: Summary | None) -> dict[str, float | int] | None:
    """A summary as JSON (seconds, to the microsecond), or None."""
    if summary is None:
        return None
    return {
        "count": summary.count,
        "min": round(summary.minimum, 6),
        "p50": round(summary.p50, 6),
        "p90": round(summary.p90, 6),
        "p99": round(summary.p99, 6),
        "max": round(summary.maximum, 6),
        "mean": round(summary.mean, 6),
    }
