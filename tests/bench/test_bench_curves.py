"""The scaling benchmarks' figures: memory per proxy (bench/memory_slope.py) and CPU per
message, RSS per connection, p99 and spread by fleet size and worker count
(bench/fanout_curve.py, which holds issue #17's CPU targets at 2,000 and 5,000 proxies), from
made-up measurements."""

from __future__ import annotations

from typing import Any

# fanout_curve imports its neighbours by bare name, as it does when run from bench/
from bench.fanout_curve import SIZES, cpu_ratios, fanout_point, fleet_point, report
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


def test_memory_report_slope_and_curve() -> None:
    result = memory_report(memory_points(80), services=100)
    assert result["pilothouse_kib_per_proxy_1000_to_2000"] == 80.0
    assert result["floor_kib_per_proxy_1000_to_2000"] == 40.0
    assert result["ratio_to_baseline"] == 0.5
    assert result["headline"] in result
    assert result["curve"][0] == {"proxies": 0, "pilothouse_rss_mib": 60.0, "floor_rss_mib": 50.0}
    assert [p["proxies"] for p in result["curve"]] == [0, 500, 1000, 1500, 2000]


def test_memory_slope_judges_no_target_push_fanout_holds_issue_17s() -> None:
    result = memory_report(memory_points(120), services=100)
    assert result["target"] == "none here (issue #17's ≤ 80 KiB per connection is push_fanout's)"
    assert result["target_met"] == "—"


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
        fanout_point(2000, 1, fanout_groups(2000, 360.0, 700.0)),
        fanout_point(2000, 2, fanout_groups(2000, 1200.0, 700.0)),
        fleet_point(5000, 1, {
            "eds_server_cpu_us_per_proxy": 330.0, "floor_eds_server_cpu_us_per_proxy": 300.0,
            "cds_server_cpu_us_per_proxy": 900.0, "floor_cds_server_cpu_us_per_proxy": 600.0,
        }),
    ]  # fmt: skip


def test_the_curve_judges_cpu_per_message_at_2000_and_5000_proxies_with_one_worker() -> None:
    result = report(curve(), runs=3)
    # the worst judged point: CDS at 5,000 (900 / 600 = 1.5×); 2 workers and 250 proxies,
    # worse still, hold no target
    assert result["pilothouse_cpu_per_message_worst_times_floor"] == 1.5
    assert result["ratio_to_baseline"] == 0.67
    assert "CDS at 5000 proxies, 1 worker" in result["ratio_definition"]
    assert result["target"] == "; ".join(
        f"[17] server CPU per message ≤ 1.2× the floor's, {kind}, {n} proxies"
        for n in ("2,000", "5,000")
        for kind in ("EDS", "CDS")
    )
    # EDS 2,000 w1: 360 / 300 = 1.2 (met); CDS 2,000: 700 / 600 = 1.17 (met);
    # EDS 5,000: 330 / 300 = 1.1 (met); CDS 5,000: 1.5 (missed)
    assert result["target_met"] == "met; met; met; missed by 0.30× (1.25× the target)"
    assert result["curve_series"] == "workers"
    assert [(p["proxies"], p["workers"]) for p in result["curve"]] == [
        (250, 1), (250, 2), (2000, 1), (2000, 2), (5000, 1),
    ]  # fmt: skip
    assert "SotW, 250 to 5000 proxies, serve --workers 1 and 2" in result["benchmark"]
    assert 5000 in SIZES


def test_without_a_judged_point_the_targets_are_not_measured() -> None:
    result = report(curve()[:2], runs=3)
    assert "ratio_to_baseline" not in result
    assert result["target_met"].startswith("not measured")


def test_cpu_below_a_clock_tick_makes_no_ratio() -> None:
    tiny = fanout_point(10, 2, fanout_groups(10, 0.0, 20.0))
    tiny["floor_cds_cpu_us_per_proxy"] = 0.0
    assert cpu_ratios([tiny]) == {}
    assert "ratio_to_baseline" not in report([tiny, tiny], runs=1)
