"""Every fleet benchmark script of bench/ run whole on a tiny input: it exits 0 and prints
one JSON figure group per line, each naming its benchmark, its baseline and its ratio.

Here are the scripts no other test runs end to end: push_fanout and fleet10k run under
test_bench_fanout_curve_run.py, kube_serve under test_bench_kube_serve.py, generation_cost,
push_cost, metrics_overhead, authorization_cost and mcp_encode in process in their own
files. Not run whole by any test: rest_sovereign (it needs sovereign's own virtualenv),
etcd_replicas (an etcd), tree_compare (a second tree) and mypyc_trial (a 40 s build;
test_bench_mypyc_trial.py tests its parts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SMALL_MESH = ("--services", "5", "--namespaces", "2")
SHORT_SETTLE = ("--settle", "0.2")
"""The quiet waits a smoke run need not sit through (a figure over 0.2 s is still a figure)."""
GC_COST = ("--proxies", "10", "--rounds", "1", "--runs", "1", "--idle", "0.2", "--thresholds")
CHURN = ("--sizes", "10", "--duration", "1", "--rate", "10", "--workers", "2")

SCRIPTS: dict[str, tuple[tuple[str, ...], int]] = {
    "connect_storm": (("--sizes", "10,20", "--runs", "1", *SHORT_SETTLE, *SMALL_MESH), 2),
    "admission_storm": (("--proxies", "10", "--runs", "1", "--waits", "1", *SMALL_MESH), 1),
    "endpoint_churn": ((*CHURN, *SHORT_SETTLE, *SMALL_MESH), 1),
    "memory_slope": (("--steps", "0,5,50,100", *SHORT_SETTLE, *SMALL_MESH), 1),
    "workers_fanout": (("--proxies", "10", "--services", "3", "--runs", "1", *SHORT_SETTLE), 1),
    "config_load": (("--services", "20", "--runs", "1"), 1),
    "worker_cost": (("--workers", "2", "--runs", "1", *SHORT_SETTLE, *SMALL_MESH), 1),
    "analysis_cost": (("--sizes", "20,40", "--runs", "1"), 1),
    "kube_registry": (("--services", "10", "--pods", "2", "--runs", "1", "--flips", "2"), 2),
    "kube_source": (("--services", "10", "--runs", "1"), 1),
    "mcp_sync": (
        ("--sizes", "50", "--floor-runs", "1", "--profile-size", "50", "--no-warm"),
        1,
    ),
    "gc_cost": (
        (*GC_COST, "default,5000:0:0", *SHORT_SETTLE, *SMALL_MESH),
        2,
    ),
}


def run_script(name: str, argv: tuple[str, ...]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_script_prints_its_figures(name: str) -> None:
    argv, groups = SCRIPTS[name]
    results = run_script(name, argv)
    assert len(results) == groups
    for result in results:
        assert result["benchmark"].startswith(name.split("_")[0])
        assert "error" not in result
        assert result["baseline"]
        assert "ratio_to_baseline" in result
