"""bench/push_fanout.py's figures (its figure tables, harness/push.py), from made-up runs: the
fan-out spread of a push beside its p99, issue #17's targets on the rows at 1,000 proxies
(CPU per message, EDS spread, KiB per connection), and the floor named for what it is with
``--workers 2``."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pytest

from bench.fanout_side import ServerFigures
from bench.harness.push import PushRun
from bench.push_fanout import NOT_JUDGED, figure_groups


@dataclass(frozen=True)
class Shape:
    proxies: int = 1000
    services: int = 100
    runs: int = 3
    delta: bool = False
    file_debounce: float = 0.05
    debounce_after: float = 0.1
    workers: int = 1


def push(first: float, last: float, cpu: float = 0.5, messages: int = 11) -> PushRun:
    """A run whose proxies got the push between ``first`` and ``last`` seconds, costing
    the server ``cpu`` seconds for ``messages`` responses."""
    middle = [first + (last - first) * i / 10 for i in range(1, 10)]
    return PushRun(
        durations=(first, *middle, last),
        unconverged=0,
        cpu_seconds=cpu,
        window=last + 0.3,
        responses={"ClusterLoadAssignment": messages},
        received={"ClusterLoadAssignment": 500 * messages},
    )


def test_the_spread_is_the_last_proxys_time_minus_the_firsts_median_over_runs() -> None:
    runs = [push(0.2, 0.7), push(0.3, 1.3), push(0.25, 0.85)]
    assert runs[0].spread == pytest.approx(0.5)
    assert statistics.median(r.spread for r in runs) == pytest.approx(0.6)  # of 0.5, 1.0, 0.6


def figures(
    first: float,
    last: float,
    connections: list[int] | None = None,
    cpu: float = 0.5,
    messages: int = 11,
    rss_connected_kib: int = 150_000,
) -> ServerFigures:
    pushes = [push(first, last, cpu, messages)]
    return ServerFigures(
        "server", 5.0, 80_000, rss_connected_kib, runs={"eds": pushes, "cds": pushes},
        connections=connections or [],
    )  # fmt: skip


def test_the_spread_group_judges_the_eds_target_at_1000_proxies() -> None:
    ours = figures(0.2, 0.8, connections=[10, 10])  # spread 600 ms
    floor = figures(0.05, 0.35, connections=[11, 9])  # spread 300 ms
    groups = figure_groups(Shape(), ours, floor)
    eds = next(g for g in groups if g["benchmark"].startswith("push_fanout: EDS change"))
    assert (eds["pilothouse_spread_ms"], eds["floor_spread_ms"]) == (600.0, 300.0)
    assert eds["spread_ratio_floor_to_pilothouse"] == 0.5
    spread = next(g for g in groups if "fan-out spread" in g["benchmark"])
    assert spread["benchmark"] == (
        "push_fanout: fan-out spread, last − first proxy (SotW, 1000 proxies)"
    )
    assert spread["ratio_to_baseline"] == 0.5
    assert spread["target"] == (
        "[17] EDS spread ≥ 0.8 of the floor's (floor's spread ÷ pilothouse's), 1,000 proxies"
    )
    assert spread["target_met"] == "missed by 0.30 (0.62× the target)"
    assert spread[spread["headline"]] == 600.0
    connect = next(g for g in groups if "connect and converge" in g["benchmark"])
    assert connect["pilothouse_connections_per_process"] == "10 / 10"
    assert connect["floor_connections_per_process"] == "11 / 9"


def test_elsewhere_no_target_is_judged() -> None:
    for shape in (Shape(proxies=500), Shape(workers=2), Shape(delta=True)):
        groups = figure_groups(shape, figures(0.2, 0.8), figures(0.1, 0.2))
        judged = [g for g in groups if "connect and converge" not in g["benchmark"]]
        assert len(judged) == 4
        assert {g["target"] for g in judged} == {NOT_JUDGED}
        assert {g["target_met"] for g in judged} == {"—"}


def test_the_cpu_per_message_is_judged_against_issue_17s_target() -> None:
    # pilothouse: 0.5 s for 11 messages; the floor: 0.4 s for 10 messages (1.136×: met)
    groups = figure_groups(Shape(), figures(0.2, 0.8), figures(0.1, 0.4, cpu=0.4, messages=10))
    eds = next(g for g in groups if g["benchmark"].startswith("push_fanout: EDS change"))
    assert (eds["pilothouse_messages_per_push"], eds["floor_messages_per_push"]) == (11, 10)
    assert eds["pilothouse_server_cpu_us_per_message"] == round(0.5e6 / 11, 1)
    assert eds["floor_server_cpu_us_per_message"] == 40_000.0
    assert eds["cpu_per_message_times_floor"] == 1.14
    assert eds["target"] == "[17] server CPU per message ≤ 1.2× the floor's, EDS, 1,000 proxies"
    assert eds["target_met"] == "met"
    # 0.75 s for 10 messages against the floor's 0.5 s for 10: 1.5×, 0.30× over
    groups = figure_groups(
        Shape(), figures(0.2, 0.8, cpu=0.75, messages=10), figures(0.1, 0.4, messages=10)
    )
    cds = next(g for g in groups if g["benchmark"].startswith("push_fanout: CDS change"))
    assert cds["target"].endswith("CDS, 1,000 proxies")
    assert cds["target_met"] == "missed by 0.30× (1.25× the target)"
    assert "p99" not in cds["target"] and "ratio ≥" not in cds["target"]
    # a push cheaper than a clock tick on one side makes no ratio (and no verdict from it)
    groups = figure_groups(Shape(), figures(0.2, 0.8, cpu=0.0), figures(0.1, 0.4))
    eds = next(g for g in groups if g["benchmark"].startswith("push_fanout: EDS change"))
    assert "cpu_per_message_times_floor" not in eds
    assert eds["target_met"].startswith("not measured")


def test_the_rss_per_connection_is_judged_against_80_kib() -> None:
    # (150,000 − 80,000) KiB over 1,000 connections: 70 KiB, met; 90,000 KiB more: 90 KiB
    lean = figure_groups(Shape(), figures(0.2, 0.8), figures(0.1, 0.4))
    memory = next(g for g in lean if "RSS per idle connection" in g["benchmark"])
    assert memory["target"].startswith("[17] ≤ 80 KiB per connection")
    assert memory["target_met"] == "met"
    fat = figure_groups(Shape(), figures(0.2, 0.8, rss_connected_kib=170_000), figures(0.1, 0.4))
    memory = next(g for g in fat if "RSS per idle connection" in g["benchmark"])
    assert memory["target_met"] == "missed by 10.0 KiB (1.12× the target)"


def test_with_two_workers_the_titles_and_the_baseline_say_so() -> None:
    groups = figure_groups(Shape(workers=2), figures(0.2, 0.8), figures(0.1, 0.4))
    assert all("serve --workers 2" in g["benchmark"] for g in groups)
    assert all("in 2 processes sharing the port with SO_REUSEPORT" in g["baseline"] for g in groups)
    single = figure_groups(Shape(), figures(0.2, 0.8), figures(0.1, 0.4))
    assert not any("processes" in g["baseline"] for g in single)
