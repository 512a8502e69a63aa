"""The scaling benchmarks' figures: memory per proxy (bench/memory_slope.py) and CPU per push,
RSS per connection, p99 and spread by fleet size and worker count (bench/fanout_curve.py), from
made-up measurements."""

from __future__ import annotations

from typing import Any

# fanout_curve imports its neighbours by bare name, as it does when run from bench/
from bench.fanout_curve import (
    cpu_ratios,
    cpu_verdict,
    fanout_point,
    fleet_point,
    report,
    spread_rows,
)
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


def fanout_groups(proxies: int, eds_cpu_ms: float, cds_cpu_ms: float) -> list[dict[str, Any]]:
    """What push_fanout prints, cut to the figures the curve reads."""
    return [
        {
            "benchmark": f"push_fanout: EDS change to every proxy (SotW, {proxies} proxies)",
            "pilothouse_p99_beyond_debounce_ms": 400.0,
            "floor_p99_ms": 200.0,
            "pilothouse_spread_ms": 300.0,
            "floor_spread_ms": 150.0,
            "pilothouse_server_cpu_ms_per_push": eds_cpu_ms,
            "floor_server_cpu_ms_per_push": 300.0,
        },
        {
            "benchmark": f"push_fanout: CDS change to every proxy (SotW, {proxies} proxies)",
            "pilothouse_p99_beyond_debounce_ms": 900.0,
            "floor_p99_ms": 450.0,
            "pilothouse_spread_ms": 500.0,
            "floor_spread_ms": 400.0,
            "pilothouse_server_cpu_ms_per_push": cds_cpu_ms,
            "floor_server_cpu_ms_per_push": 600.0,
        },
        {"benchmark": "push_fanout: fan-out spread, last − first proxy (SotW, 1000 proxies)"},
        {
            "benchmark": "push_fanout: server RSS per idle connection (SotW)",
            "pilothouse_kib_per_connection": 70.0,
            "floor_kib_per_connection": 50.0,
        },
        {
            "benchmark": f"push_fanout: {proxies} proxies connect and converge (SotW)",
            "pilothouse_connections_per_process": "51 / 49",
            "floor_connections_per_process": "50 / 50",
        },
    ]


def test_a_fanout_point_takes_cpu_per_proxy_p99_spread_rss_and_connections() -> None:
    found = fanout_point(1000, 2, fanout_groups(1000, 450.0, 1200.0))
    assert found == {
        "proxies": 1000,
        "workers": 2,
        "pilothouse_eds_cpu_us_per_proxy": 450.0,
        "floor_eds_cpu_us_per_proxy": 300.0,
        "pilothouse_eds_p99_ms": 400.0,
        "floor_eds_p99_ms": 200.0,
        "pilothouse_eds_spread_ms": 300.0,
        "floor_eds_spread_ms": 150.0,
        "pilothouse_cds_cpu_us_per_proxy": 1200.0,
        "floor_cds_cpu_us_per_proxy": 600.0,
        "pilothouse_cds_p99_ms": 900.0,
        "floor_cds_p99_ms": 450.0,
        "pilothouse_cds_spread_ms": 500.0,
        "floor_cds_spread_ms": 400.0,
        "pilothouse_kib_per_connection": 70.0,
        "floor_kib_per_connection": 50.0,
        "pilothouse_connections": "51 / 49",
        "floor_connections": "50 / 50",
    }


def test_a_fleet10k_point_reads_its_per_change_figures_and_leaves_out_what_is_missing() -> None:
    result = {
        "eds_server_cpu_us_per_proxy": 500.0,
        "floor_eds_server_cpu_us_per_proxy": 250.0,
        "cds_server_cpu_us_per_proxy": None,  # not sampled: not made up
        "eds_push_seconds": {"p50": 2.0, "p99": 6.3684, "max": 6.4},
        "floor_eds_push_seconds": {"p50": 2.0, "p99": 3.2, "max": 3.3},
        "eds_spread_ms": 6300.0,
        "floor_eds_spread_ms": 3100.0,
        "server_kib_per_connection": 60.5,
        "floor_kib_per_connection": 45.0,
        "server_connections_per_process": [21, 19],
    }
    found = fleet_point(10_000, 2, result)
    assert found["pilothouse_eds_cpu_us_per_proxy"] == 500.0
    assert found["floor_eds_cpu_us_per_proxy"] == 250.0
    assert "pilothouse_cds_cpu_us_per_proxy" not in found
    assert "pilothouse_cds_p99_ms" not in found
    assert (found["pilothouse_eds_p99_ms"], found["floor_eds_p99_ms"]) == (6368.4, 3200.0)
    assert (found["pilothouse_eds_spread_ms"], found["floor_eds_spread_ms"]) == (6300.0, 3100.0)
    assert found["pilothouse_kib_per_connection"] == 60.5
    assert found["pilothouse_connections"] == "21 / 19"
    assert "floor_connections" not in found


def curve() -> list[dict[str, Any]]:
    return [
        fanout_point(250, 1, fanout_groups(250, 100.0, 200.0)),
        fanout_point(250, 2, fanout_groups(250, 100.0, 200.0)),
        fanout_point(1000, 1, fanout_groups(1000, 360.0, 700.0)),
        fanout_point(1000, 2, fanout_groups(1000, 600.0, 700.0)),
    ]


def test_the_curve_reports_the_worst_cpu_ratio_and_where_the_target_is_missed() -> None:
    result = report(curve(), runs=3)
    assert result["pilothouse_cpu_per_push_worst_times_floor"] == 2.0
    assert result["ratio_to_baseline"] == 0.5
    assert "EDS at 1000 proxies, 2 workers" in result["ratio_definition"]
    # 250 proxies are far above 1.3× too, but the target is at 1,000 and 2,000 only
    assert result["target_met"] == "no: CPU per push up to 2.00× the floor's (EDS 1000 w2 2.00×)"
    assert result["curve_series"] == "workers"
    assert [(p["proxies"], p["workers"]) for p in result["curve"]] == [
        (250, 1), (250, 2), (1000, 1), (1000, 2),
    ]  # fmt: skip
    assert "SotW, 250 to 1000 proxies, serve --workers 1 and 2" in result["benchmark"]


def test_cpu_within_the_target_is_met() -> None:
    assert cpu_verdict({("eds", 1000, 1): 0.8, ("cds", 2000, 2): 0.77, ("eds", 250, 1): 0.1}) == (
        "yes"
    )
    assert cpu_verdict({("eds", 250, 1): 0.8}).startswith("not judged")


def test_the_spread_target_gets_one_row_per_worker_count_at_1000_proxies() -> None:
    points = curve()
    points[3]["floor_eds_spread_ms"] = 240.0  # 2 workers: 240 / 300 = 0.8
    rows = spread_rows(points)
    assert [row["benchmark"] for row in rows] == [
        "fanout_curve: EDS fan-out spread at 1000 proxies (SotW, serve --workers 1)",
        "fanout_curve: EDS fan-out spread at 1000 proxies (SotW, serve --workers 2)",
    ]
    assert rows[0]["ratio_to_baseline"] == 0.5
    assert rows[0]["target"] == "EDS spread ≥ 0.8 of the floor's at 1,000 proxies"
    assert rows[0]["target_met"] == "no (ratio 0.5: missed by 0.30)"
    assert rows[1]["target_met"] == "yes"
    assert "2 processes sharing the port with SO_REUSEPORT" in rows[1]["baseline"]
    assert rows[0]["headline"] in rows[0]


def test_cpu_below_a_clock_tick_makes_no_ratio() -> None:
    tiny = fanout_point(10, 2, fanout_groups(10, 0.0, 20.0))
    tiny["floor_cds_cpu_us_per_proxy"] = 0.0
    assert cpu_ratios([tiny]) == {}
    assert "ratio_to_baseline" not in report([tiny, tiny], runs=1)
