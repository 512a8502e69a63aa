"""The runs/rounds loop every benchmark shares: subject and baseline alternating, and the
statistics taken over the rounds (median, best, spread, percentiles).

Alternating (subject, baseline, subject, baseline, …) instead of all of one then all of
the other spreads the machine's noise over both sides, so that their ratio holds on a
shared machine; each side's rounds are kept whole so the report can show their spread.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")
QUANTILES = (50.0, 90.0, 99.0)


async def alternate(
    rounds: int, sides: Mapping[str, Callable[[int], Awaitable[T]]]
) -> dict[str, list[T]]:
    """``rounds`` rounds, each running every side once in the order given (the round's
    index passed in); each side's results in round order."""
    results: dict[str, list[T]] = {name: [] for name in sides}
    for index in range(rounds):
        for name, side in sides.items():
            results[name].append(await side(index))
    return results


def best_of(runs: int, work: Callable[[], object]) -> float:
    """The fastest of ``runs`` timed calls of ``work``, seconds (``perf_counter``)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def median(values: Iterable[float]) -> float:
    return float(statistics.median(list(values)))


def spread(values: Sequence[float]) -> str:
    """The rounds' spread as the report shows it: ``smallest–largest``, two decimals."""
    return f"{min(values):.2f}–{max(values):.2f}"


def percentiles(values: Sequence[float], qs: Sequence[float]) -> tuple[float, ...]:
    """Several percentiles (0–100) of one sample, sorted once; linear interpolation between
    ranks (as ``pilothouse.loadtest.stats.percentile``). NaN for an empty sample."""
    if not values:
        return tuple(math.nan for _ in qs)
    ordered = sorted(values)
    out = []
    for q in qs:
        rank = (len(ordered) - 1) * q / 100
        low, high = math.floor(rank), math.ceil(rank)
        weight = rank - low
        out.append(ordered[low] * (1 - weight) + ordered[high] * weight)
    return tuple(out)
