"""bench/push_fanout.py's figures (its figure tables, harness/push.py), from made-up runs: the
fan-out spread of a push beside its p99, the spread's target at 1,000 proxies, and the floor
named for what it is with ``--workers 2``."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pytest

from bench.fanout_side import ServerFigures
from bench.harness.push import PushRun
from bench.push_fanout import cpu_target, figure_groups, spread_verdict


@dataclass(frozen=True)
class Shape:
    proxies: int = 1000
    services: int = 100
    runs: int = 3
    delta: bool = False
    file_debounce: float = 0.05
    debounce_after: float = 0.1
    workers: int = 1


def push(first: float, last: float) -> PushRun:
    """A run whose proxies got the push between ``first`` and ``last`` seconds."""
    middle = [first + (last - first) * i / 10 for i in range(1, 10)]
    return PushRun(
        durations=(first, *middle, last),
        unconverged=0,
        cpu_seconds=0.5,
        window=last + 0.3,
        responses={"ClusterLoadAssignment": 11},
        received={"ClusterLoadAssignment": 5500},
    )


def test_the_spread_is_the_last_proxys_time_minus_the_firsts_median_over_runs() -> None:
    runs = [push(0.2, 0.7), push(0.3, 1.3), push(0.25, 0.85)]
    assert runs[0].spread == pytest.approx(0.5)
    assert statistics.median(r.spread for r in runs) == pytest.approx(0.6)  # of 0.5, 1.0, 0.6


def figures(first: float, last: float, connections: list[int] | None = None) -> ServerFigures:
    pushes = [push(first, last)]
    return ServerFigures(
        "server", 5.0, 80_000, 150_000, runs={"eds": pushes, "cds": pushes},
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
    assert spread["target"] == "EDS spread ≥ 0.8 of the floor's at 1,000 proxies"
    assert spread["target_met"] == "no (ratio 0.5: missed by 0.30)"
    assert spread[spread["headline"]] == 600.0
    connect = next(g for g in groups if "connect and converge" in g["benchmark"])
    assert connect["pilothouse_connections_per_process"] == "10 / 10"
    assert connect["floor_connections_per_process"] == "11 / 9"


def test_elsewhere_the_spread_is_reported_but_not_judged() -> None:
    groups = figure_groups(Shape(proxies=500), figures(0.2, 0.8), figures(0.1, 0.2))
    spread = next(g for g in groups if "fan-out spread" in g["benchmark"])
    assert spread["target_met"] == "not judged here (500 proxies)"
    assert spread_verdict(0.8) == "yes"
    assert spread_verdict(0.7) == "no (ratio 0.7: missed by 0.10)"


def test_the_cpu_per_push_is_judged_against_issue_17s_target() -> None:
    groups = figure_groups(Shape(), figures(0.2, 0.8), figures(0.1, 0.4))
    eds = next(g for g in groups if g["benchmark"].startswith("push_fanout: EDS change"))
    assert eds["cpu_times_floor"] == 1.0 and eds["cpu_target_met"] == "yes"
    assert eds["cpu_target"] == "server CPU per push ≤ 1.2× the floor's (issue #17)"
    assert cpu_target(0.6, 0.5)["cpu_target_met"] == "yes"
    assert cpu_target(0.75, 0.5)["cpu_target_met"] == "no: 1.5× the floor's, missed by 0.30×"
    assert cpu_target(0.75, 0.0)["cpu_times_floor"] is None


def test_with_two_workers_the_titles_and_the_baseline_say_so() -> None:
    groups = figure_groups(Shape(workers=2), figures(0.2, 0.8), figures(0.1, 0.4))
    assert all("serve --workers 2" in g["benchmark"] for g in groups)
    assert all("in 2 processes sharing the port with SO_REUSEPORT" in g["baseline"] for g in groups)
    single = figure_groups(Shape(), figures(0.2, 0.8), figures(0.1, 0.4))
    assert not any("processes" in g["baseline"] for g in single)
