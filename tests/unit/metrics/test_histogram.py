"""The push path's histogram recorders: buckets by Prometheus's ``le``, sums, children."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilothouse.metrics.histogram import (
    Histogram,
    HistogramVec,
    Unrecorded,
    UnrecordedVec,
    spec,
)
from pilothouse.metrics.push import CONFIG_SIZE, PushMetrics, metric_type
from pilothouse.protocol.type_urls import CDS, EDS

SECONDS = spec("t", "help", (0.1, 1, 10))


def test_a_value_lands_in_the_first_bucket_whose_bound_is_at_least_it() -> None:
    histogram = Histogram(SECONDS)
    for value in (0.0, 0.1, 0.10001, 1, 9.9, 10, 10.5, 1e9):
        histogram.observe(value)
    assert list(histogram.cumulative()) == [(0.1, 2), (1, 4), (10, 6), (math.inf, 8)]
    assert histogram.count == 8
    assert histogram.sum == pytest.approx(0.0 + 0.1 + 0.10001 + 1 + 9.9 + 10 + 10.5 + 1e9)


@given(st.lists(st.floats(min_value=0, max_value=1e8, allow_nan=False), max_size=50))
def test_cumulative_counts_equal_counting_by_hand(values: list[float]) -> None:
    histogram = Histogram(CONFIG_SIZE)
    for value in values:
        histogram.observe(value)
    expected = [sum(1 for v in values if v <= bound) for bound in (*CONFIG_SIZE.bounds, math.inf)]
    assert [count for _, count in histogram.cumulative()] == expected


def test_a_vec_hands_out_one_child_per_label_value() -> None:
    vec = HistogramVec(spec("t", "help", (1,), "type"))
    cds = vec.child("cds")
    assert vec.child("cds") is cds and vec.child("eds") is not cds
    cds.observe(0.5)
    assert {k: v.count for k, v in vec.children().items()} == {"cds": 1, "eds": 0}


@pytest.mark.parametrize(
    "bounds", [(), (1, 1), (2, 1), (1, math.inf), (math.nan,)], ids=repr
)
def test_bounds_must_be_finite_and_ascend(bounds: tuple[float, ...]) -> None:
    with pytest.raises(ValueError):
        spec("t", "help", bounds)


def test_a_vec_needs_a_label() -> None:
    with pytest.raises(ValueError):
        HistogramVec(SECONDS)


def test_unrecorded_histograms_drop_everything() -> None:
    histogram = Unrecorded(SECONDS)
    histogram.observe(3)
    vec = UnrecordedVec(spec("t", "help", (1,), "type"))
    vec.child("cds").observe(3)
    assert histogram.count == 0 and vec.children() == {}
    off = PushMetrics(recording=False)
    assert off.clock() == 0.0 and off.clock() == 0.0
    off.push_time.child("cds").observe(1)
    assert all(
        (h.count if isinstance(h, Histogram) else len(h.children())) == 0
        for h in off.histograms()
    )


def test_metric_type_is_istiods_label() -> None:
    assert (metric_type(CDS), metric_type(EDS)) == ("cds", "eds")
    other = "networking.istio.io/v1/ServiceEntry"
    assert metric_type(other) == other
