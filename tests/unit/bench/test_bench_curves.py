"""The scaling benchmarks' figures: memory per proxy (bench/memory_slope.py) and push p99 by
fleet size (bench/fanout_curve.py), from made-up measurements."""

from __future__ import annotations

from bench.fanout_curve import point
from bench.fanout_curve import report as fanout_report
from bench.memory_slope import Point, slope_kib
from bench.memory_slope import report as memory_report

MIB = 1024


def test_memory_slope_is_kib_per_added_proxy() -> None:
    points = [Point(0, 60 * MIB, 50 * MIB), Point(1000, 160 * MIB, 100 * MIB)]
    assert slope_kib(points, 0, 1000, "pilothouse") == 100 * MIB / 1000
    assert slope_kib(points, 0, 1000, "floor") == 50 * MIB / 1000


def memory_points(ours_per_proxy: int) -> list[Point]:
    return [
        Point(n, 60 * MIB + ours_per_proxy * n, 50 * MIB + 40 * n)
        for n in (0, 500, 1000, 1500, 2000)
    ]


def test_memory_report_within_target() -> None:
    result = memory_report(memory_points(80), services=100)
    assert result["pilothouse_kib_per_proxy_1000_to_2000"] == 80.0
    assert result["floor_kib_per_proxy_1000_to_2000"] == 40.0
    assert result["ratio_to_baseline"] == 0.5
    assert result["target_met"] == "yes"
    assert result["headline"] in result
    assert result["curve"][0] == {"proxies": 0, "pilothouse_rss_mib": 60.0, "floor_rss_mib": 50.0}
    assert [p["proxies"] for p in result["curve"]] == [0, 500, 1000, 1500, 2000]


def test_memory_report_says_by_how_much_the_target_is_missed() -> None:
    result = memory_report(memory_points(120), services=100)
    assert result["target_met"] == "no (missed by 20.0 KiB per proxy)"


def fanout_groups(proxies: int, eds: float, cds: float) -> list[dict[str, object]]:
    return [
        {
            "benchmark": f"push_fanout: EDS change to every proxy (SotW, {proxies} proxies)",
            "pilothouse_p99_beyond_debounce_ms": eds,
            "floor_p99_ms": eds / 2,
        },
        {
            "benchmark": f"push_fanout: CDS change to every proxy (SotW, {proxies} proxies)",
            "pilothouse_p99_beyond_debounce_ms": cds,
            "floor_p99_ms": cds / 5,
        },
        {"benchmark": "push_fanout: server RSS per idle connection (SotW)"},
    ]


def test_fanout_curve_takes_each_sizes_p99_and_reports_the_worst_ratio() -> None:
    curve = [
        point(250, fanout_groups(250, 100.0, 500.0)),
        point(1000, fanout_groups(1000, 400.0, 3000.0)),
    ]
    assert curve[0] == {
        "proxies": 250,
        "pilothouse_eds_p99_ms": 100.0,
        "floor_eds_p99_ms": 50.0,
        "pilothouse_cds_p99_ms": 500.0,
        "floor_cds_p99_ms": 100.0,
    }
    result = fanout_report(curve, runs=3)
    assert result["pilothouse_eds_p99_growth_250_to_1000"] == 4.0
    assert result["pilothouse_cds_p99_growth_250_to_1000"] == 6.0
    assert result["ratio_to_baseline"] == 0.2
    assert "CDS at 250 proxies" in result["ratio_definition"]
    assert result["target_met"] == "no (lowest ratio 0.2)"
    assert result["curve"] == curve


def test_fanout_curve_point_carries_cpu_per_proxy_and_rss_per_connection() -> None:
    groups = fanout_groups(1000, 400.0, 3000.0)
    groups[0].update(pilothouse_server_cpu_ms_per_push=450.0, floor_server_cpu_ms_per_push=300.0)
    groups[2].update(pilothouse_kib_per_connection=70.0, floor_kib_per_connection=50.0)
    found = point(1000, groups)
    assert found["pilothouse_eds_cpu_us_per_proxy"] == 450.0
    assert found["floor_eds_cpu_us_per_proxy"] == 300.0
    assert "pilothouse_cds_cpu_us_per_proxy" not in found  # not measured: not made up
    assert (found["pilothouse_kib_per_connection"], found["floor_kib_per_connection"]) == (70, 50)
