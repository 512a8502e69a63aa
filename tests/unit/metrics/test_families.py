"""Families as prometheus_client writes them: istiod's counters keep their exact names."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from pilothouse.metrics.families import counter, gauge, histogram_family, istiod_counter, le
from pilothouse.metrics.histogram import Histogram, HistogramVec, spec


class Fixed(Collector):
    def __init__(self, *families: Metric) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def exposition(*families: Metric) -> str:
    registry = CollectorRegistry()
    registry.register(Fixed(*families))
    return generate_latest(registry).decode()


def test_an_istiod_counter_is_written_under_its_registered_name() -> None:
    text = exposition(
        istiod_counter("pilot_xds_pushes", "pushes", {"cds": 3, "eds": 1}, "type"),
        istiod_counter("pilot_total_xds_internal_errors", "errors", 2),
    )
    lines = text.splitlines()
    assert "# TYPE pilot_xds_pushes untyped" in lines
    assert 'pilot_xds_pushes{type="cds"} 3.0' in lines
    assert 'pilot_xds_pushes{type="eds"} 1.0' in lines
    assert "pilot_total_xds_internal_errors 2.0" in lines
    assert "_total" not in text.replace("pilot_total_", "")


def test_a_registered_total_name_stays_a_typed_counter() -> None:
    text = exposition(istiod_counter("pilot_sds_certificate_errors_total", "errors", 4))
    assert "# TYPE pilot_sds_certificate_errors_total counter" in text.splitlines()
    assert "pilot_sds_certificate_errors_total 4.0" in text.splitlines()
    assert "pilot_sds_certificate_errors_total_total" not in text


def test_pilothouse_counters_follow_prometheus_conventions() -> None:
    text = exposition(counter("pilothouse_things", "things", {"a": 1}, "reason"))
    (family,) = text_string_to_metric_families(text)
    assert family.type == "counter"
    assert [s.name for s in family.samples] == ["pilothouse_things_total"]


def test_a_histogram_family_has_istiods_samples_and_le_values() -> None:
    vec = HistogramVec(spec("pilot_xds_push_time", "push", (0.01, 1, 1e6), "type"))
    vec.child("cds").observe(0.5)
    vec.child("cds").observe(2e6)
    single = Histogram(spec("pilot_xds_send_time", "send", (0.01, 1)))
    single.observe(0.001)
    text = exposition(histogram_family(vec), histogram_family(single))
    lines = text.splitlines()
    assert 'pilot_xds_push_time_bucket{le="0.01",type="cds"} 0.0' in lines
    assert 'pilot_xds_push_time_bucket{le="1",type="cds"} 1.0' in lines
    assert 'pilot_xds_push_time_bucket{le="1e+06",type="cds"} 1.0' in lines
    assert 'pilot_xds_push_time_bucket{le="+Inf",type="cds"} 2.0' in lines
    assert 'pilot_xds_push_time_count{type="cds"} 2.0' in lines
    assert "pilot_xds_send_time_count 1.0" in lines
    assert "_created" not in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["pilot_xds_push_time"].type == "histogram"


def test_gauges_by_label_and_alone() -> None:
    text = exposition(gauge("pilot_xds", "clients", {"1.28.0": 2}, "version"), gauge("g", "g", 1))
    assert 'pilot_xds{version="1.28.0"} 2.0' in text.splitlines()
    assert "g 1.0" in text.splitlines()


def test_bounds_are_written_as_gos_client_writes_them() -> None:
    written = [le(b) for b in (0.01, 0.5, 1, 30, 10_000, 1e6, 4e7, 1234567, 1e-5, float("inf"))]
    assert written == [
        "0.01", "0.5", "1", "30", "10000", "1e+06", "4e+07", "1.234567e+06", "1e-05", "+Inf"
    ]  # fmt: skip
