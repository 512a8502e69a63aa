"""The benchmark charts (bench/plots.py): any curve's keys become axes with units, series of
one unit share a chart, and every result with a curve gets a PNG named after its script."""

from __future__ import annotations

from pathlib import Path

from bench.plots import (
    by_unit,
    chart_path,
    curve_keys,
    draw_all,
    has_curve,
    measure_of,
    split_unit,
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
