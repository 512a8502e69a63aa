"""The benchmark charts (bench/plots.py): any curve's keys become axes with units, series of
one unit share a chart, and every result with a curve gets a PNG named after its script."""

from __future__ import annotations

from pathlib import Path

from bench.plots import (
    by_measure,
    by_unit,
    chart_path,
    curve_keys,
    draw_all,
    has_curve,
    measure_of,
    points_of,
    series_values,
    split_unit,
    wide_x,
    y_label,
)

STORM = [
    {"proxies": 500, "pilothouse_s": 3.1, "floor_s": 1.2},
    {"proxies": 1000, "pilothouse_s": 6.0, "floor_s": None, "note": "slow"},
]


def test_units_come_from_key_suffixes() -> None:
    assert split_unit("pilothouse_rss_mib") == ("pilothouse_rss", "MiB")
    assert split_unit("floor_s") == ("floor", "s")
    assert split_unit("pilothouse_p99_ms") == ("pilothouse_p99", "ms")
    assert split_unit("load_seconds") == ("load", "s")
    assert split_unit("objects_per_second") == ("objects", "per second")
    assert split_unit("proxies") == ("proxies", "")


def test_the_first_key_is_x_and_numeric_keys_are_series() -> None:
    assert curve_keys(STORM) == ("proxies", ["pilothouse_s", "floor_s"])


def test_series_of_one_unit_share_a_chart() -> None:
    series = ["pilothouse_p99_ms", "floor_p99_ms", "pilothouse_rss_mib"]
    assert by_unit(series) == {
        "ms": ["pilothouse_p99_ms", "floor_p99_ms"],
        "MiB": ["pilothouse_rss_mib"],
    }
    assert measure_of("floor_p99_ms") == measure_of("pilothouse_p99_ms") == "p99"
    assert y_label(["pilothouse_rss_mib", "floor_rss_mib"]) == "rss (MiB)"
    assert y_label(["pilothouse_eds_p99_ms", "floor_cds_p99_ms"]) == "ms"


def test_only_lists_of_points_with_a_number_are_curves() -> None:
    assert has_curve({"curve": STORM})
    assert not has_curve({"curve": []})
    assert not has_curve({"curve": "0, 500"})
    assert not has_curve({"curve": [{"proxies": 1, "note": "x"}]})
    assert not has_curve({})


def test_chart_names_follow_the_script() -> None:
    assert chart_path(Path("/r"), "memory_slope", 0) == Path("/r/BENCHMARKS-memory.png")
    assert chart_path(Path("/r"), "connect_storm", 1) == Path("/r/BENCHMARKS-storm-2.png")
    assert chart_path(Path("/r"), "new_bench", 0) == Path("/r/BENCHMARKS-new_bench.png")


def test_every_result_with_a_curve_is_drawn(tmp_path: Path) -> None:
    results = {
        "connect_storm": [
            {"benchmark": "connect_storm: 1k", "curve": STORM},
            {"benchmark": "connect_storm: no curve"},
        ],
        "endpoint_churn": [
            {
                "benchmark": "endpoint_churn",
                "curve": [
                    {"proxies": 100, "pilothouse_p99_ms": 40.0, "floor_p99_ms": 9.0, "rss_mib": 80},
                    {
                        "proxies": 200,
                        "pilothouse_p99_ms": 70.0,
                        "floor_p99_ms": 12.0,
                        "rss_mib": 90,
                    },
                ],
            }
        ],
        "config_load": [{"benchmark": "config_load", "error": "exited with 1"}],
    }
    drawn = draw_all(results, tmp_path)
    assert drawn == {
        "connect_storm: 1k": tmp_path / "BENCHMARKS-storm.png",
        "endpoint_churn": tmp_path / "BENCHMARKS-churn.png",
    }
    for path in drawn.values():
        assert path.read_bytes().startswith(b"\x89PNG")


WORKERS_CURVE = [
    {"proxies": n, "workers": w, "pilothouse_eds_cpu_us_per_proxy": 300.0 * w,
     "floor_eds_cpu_us_per_proxy": 200.0, "pilothouse_eds_p99_ms": n / 2,
     "floor_eds_p99_ms": n / 4, "pilothouse_kib_per_connection": 70.0,
     "pilothouse_connections": "5"}
    for n in (250, 10_000) for w in (1, 2)
]  # fmt: skip


def test_a_series_key_is_no_series_and_each_measure_gets_its_own_chart() -> None:
    x_key, series = curve_keys(WORKERS_CURVE, "workers")
    assert x_key == "proxies" and "workers" not in series
    assert "workers" in curve_keys(WORKERS_CURVE)[1]  # without a series key it is a number
    assert by_measure(series) == {
        "eds_cpu|µs per proxy": ["pilothouse_eds_cpu_us_per_proxy", "floor_eds_cpu_us_per_proxy"],
        "eds_p99|ms": ["pilothouse_eds_p99_ms", "floor_eds_p99_ms"],
        "|KiB per connection": ["pilothouse_kib_per_connection"],
    }
    assert y_label(["pilothouse_kib_per_connection"]) == "KiB per connection"
    assert series_values(WORKERS_CURVE, "workers") == [1, 2]
    two = points_of(WORKERS_CURVE, "proxies", "pilothouse_eds_cpu_us_per_proxy", ("workers", 2))
    assert two == ([250, 10_000], [600.0, 600.0])
    assert wide_x([250, 10_000]) and not wide_x([0, 10_000]) and not wide_x([250, 2000])


def test_a_curve_with_a_series_key_is_drawn(tmp_path: Path) -> None:
    results = {"fanout_curve": [{"benchmark": "curve", "curve_series": "workers",
                                 "curve": WORKERS_CURVE}]}  # fmt: skip
    drawn = draw_all(results, tmp_path)
    assert drawn == {"curve": tmp_path / "BENCHMARKS-fanout.png"}
    assert drawn["curve"].read_bytes().startswith(b"\x89PNG")
