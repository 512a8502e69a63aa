"""Histograms the push path records into: one bisect and two additions per observation.

prometheus_client's own ``Histogram`` takes a lock and walks its buckets on every
``observe``, and its ``labels()`` validates and looks up the label values each time.
The push path records from one event loop, so a histogram here is a list of
per-bucket counts and a running sum; ``/metrics`` turns it into a Prometheus
histogram family only when it is scraped (:mod:`pilothouse.metrics.families`).

A :class:`HistogramSpec` is what istiod registers: name, help text, bucket upper
bounds and, for a labelled histogram, the label. A :class:`HistogramVec` hands out
one child :class:`Histogram` per label value; callers on a hot path keep the child
instead of asking again.

:class:`Unrecorded` and :class:`UnrecordedVec` have the same interface and drop every
observation: the benchmark's "without metrics" side (``bench/metrics_overhead.py``).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class HistogramSpec:
    """A histogram as registered: name, help, ascending finite upper bounds, label."""

    name: str
    documentation: str
    bounds: tuple[float, ...]
    label: str = ""
    """The one label a :class:`HistogramVec` of this spec is split by (istiod's ``type``)."""

    def __post_init__(self) -> None:
        bounds = self.bounds
        if not bounds:
            raise ValueError(f"{self.name}: a histogram needs at least one bucket")
        if any(not math.isfinite(b) for b in bounds):
            raise ValueError(f"{self.name}: bucket bounds must be finite (+Inf is implied)")
        if any(a >= b for a, b in pairwise(bounds)):
            raise ValueError(f"{self.name}: bucket bounds must ascend strictly")


class Histogram:
    """Counts per bucket (not cumulative), their total and the sum of what was observed.

    A value lands in the first bucket whose upper bound is at least the value
    (Prometheus's ``le``), or in the implied ``+Inf`` bucket after the last bound.
    """

    __slots__ = ("_bounds", "_counts", "spec", "sum")

    def __init__(self, spec: HistogramSpec) -> None:
        self.spec = spec
        self._bounds = spec.bounds
        self._counts = [0] * (len(spec.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect_left(self._bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self._counts)

    def cumulative(self) -> Iterator[tuple[float, int]]:
        """``(upper bound, observations at or below it)`` for every bound, then ``+Inf``."""
        running = 0
        for bound, count in zip((*self._bounds, math.inf), self._counts, strict=True):
            running += count
            yield bound, running


class HistogramVec:
    """One :class:`Histogram` per value of the spec's label, created on first use."""

    __slots__ = ("_children", "spec")

    def __init__(self, spec: HistogramSpec) -> None:
        if not spec.label:
            raise ValueError(f"{spec.name}: a HistogramVec needs a label")
        self.spec = spec
        self._children: dict[str, Histogram] = {}

    def child(self, value: str) -> Histogram:
        """The histogram for label ``value`` (the same object every time)."""
        found = self._children.get(value)
        if found is None:
            found = self._children[value] = Histogram(self.spec)
        return found

    def children(self) -> Mapping[str, Histogram]:
        return MappingProxyType(self._children)


class Unrecorded(Histogram):
    """A histogram that drops what it is given (recording turned off)."""

    __slots__ = ()

    def observe(self, value: float) -> None:
        pass


class UnrecordedVec(HistogramVec):
    """A :class:`HistogramVec` whose one shared child drops what it is given."""

    __slots__ = ("_dropped",)

    def __init__(self, spec: HistogramSpec) -> None:
        super().__init__(spec)
        self._dropped = Unrecorded(spec)

    def child(self, value: str) -> Histogram:
        return self._dropped


def spec(name: str, documentation: str, bounds: Sequence[float], label: str = "") -> HistogramSpec:
    """A :class:`HistogramSpec` from any sequence of bounds."""
    return HistogramSpec(name, documentation, tuple(float(b) for b in bounds), label)
