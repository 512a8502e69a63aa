"""Prometheus metric families for ``/metrics``, named exactly as istiod names them.

istiod's counters have no ``_total`` suffix (``pilot_xds_pushes``,
``pilot_total_xds_rejects``) and istiod exposes them under exactly those names. The
Prometheus text format that prometheus_client writes appends ``_total`` to the
samples and ``TYPE`` line of every family typed ``counter``, which would rename them
(``pilot_xds_pushes_total``) and break every dashboard and alert written for istiod.
So :func:`istiod_counter` gives such a counter as an *untyped* family, whose samples
carry the registered name unchanged (``# TYPE pilot_xds_pushes untyped``);
``rate()`` and ``increase()`` work on it as on a counter. A registered name that
already ends in ``_total`` stays a typed counter. pilothouse's own counters
(:func:`counter`, ``pilothouse_*``) follow Prometheus's convention instead: typed
counters exposed with ``_total``.

Histograms (:func:`histogram_family`) come from :mod:`pilothouse.metrics.histogram`
recorders; their samples are ``<name>_bucket{le=…}``, ``<name>_sum`` and
``<name>_count``, with ``le`` values written as istiod's Go client writes them (``1``, not
``1.0``) and no ``_created`` series.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    UnknownMetricFamily,
)

from pilothouse.metrics.histogram import Histogram, HistogramVec

_TOTAL = "_total"


def istiod_counter(
    name: str,
    documentation: str,
    values: Mapping[str, float] | float,
    label: str = "",
) -> Metric:
    """An istiod counter under its registered ``name``: ``values`` by ``label`` value, or
    one value when the counter has no label."""
    family: Metric
    if name.endswith(_TOTAL):
        family = CounterMetricFamily(name, documentation, labels=[label] if label else None)
    else:
        family = UnknownMetricFamily(name, documentation, labels=[label] if label else None)
    _fill(family, values, label)
    return family


def counter(
    name: str, documentation: str, values: Mapping[str, float] | float, label: str = ""
) -> Metric:
    """A pilothouse counter (``name`` without ``_total``; exposed as ``<name>_total``)."""
    family = CounterMetricFamily(name, documentation, labels=[label] if label else None)
    _fill(family, values, label)
    return family


def gauge(
    name: str,
    documentation: str,
    values: Mapping[str, float] | float,
    label: str = "",
) -> Metric:
    """A gauge: ``values`` by ``label`` value, or one value."""
    family = GaugeMetricFamily(name, documentation, labels=[label] if label else None)
    _fill(family, values, label)
    return family


def _fill(family: Metric, values: Mapping[str, float] | float, label: str) -> None:
    add = family.add_metric  # type: ignore[attr-defined]
    if isinstance(values, Mapping):
        if not label:
            raise ValueError(f"{family.name}: values by label need a label name")
        for value_of_label, value in sorted(values.items()):
            add([value_of_label], value)
    else:
        if label:
            raise ValueError(f"{family.name}: one value for a labelled family")
        add([], values)


def histogram_family(histogram: Histogram | HistogramVec) -> Metric:
    """A histogram family from a recorder (every child of a :class:`HistogramVec`)."""
    spec = histogram.spec
    if isinstance(histogram, HistogramVec):
        family = HistogramMetricFamily(spec.name, spec.documentation, labels=[spec.label])
        for value, child in sorted(histogram.children().items()):
            family.add_metric([value], _buckets(child), child.sum)
        return family
    family = HistogramMetricFamily(spec.name, spec.documentation, labels=[])
    family.add_metric([], _buckets(histogram), histogram.sum)
    return family


def _buckets(histogram: Histogram) -> Sequence[tuple[str, float]]:
    return [(le(bound), count) for bound, count in histogram.cumulative()]


def le(bound: float) -> str:
    """A bucket bound as Go's client writes it (``strconv.FormatFloat(b, 'g', -1, 64)``:
    ``0.01``, ``1``, ``10000``, ``1e+06``, ``+Inf``), so that istiod's series and
    pilothouse's carry the same ``le`` values."""
    if math.isinf(bound):
        return "+Inf" if bound > 0 else "-Inf"
    shortest = Decimal(repr(bound)).normalize()
    sign, digits, exponent = shortest.as_tuple()
    assert isinstance(exponent, int)
    power = len(digits) + exponent - 1
    if -4 <= power < 6:
        return format(shortest, "f")
    mantissa = "".join(map(str, digits))
    mantissa = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'+' if power >= 0 else '-'}{abs(power):02d}"
