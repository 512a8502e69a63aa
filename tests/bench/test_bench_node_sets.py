"""The node-sets benchmark run whole on 20 nodes: a real serve, 20 simulated agents per
mode. Per-node sets are smaller than everything, and the Pod change reaches one agent
with per-node sets and every agent in the baseline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_per_node_sets_reach_one_agent_and_everything_reaches_all() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "node_sets.py"), "--nodes", "20", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    per_node, everything, summary = lines
    assert per_node["benchmark"] == "node_sets: per-node"
    assert everything["benchmark"] == "node_sets: everything"
    assert per_node["change_agents_reached"] == 1
    assert everything["change_agents_reached"] == 20
    assert per_node["initial_sync_bytes"] * 5 < everything["initial_sync_bytes"]
    assert 0 < per_node["change_bytes"] < everything["change_bytes"]
    assert summary["benchmark"] == "node_sets" and summary["target_met"] is True
    assert summary["baseline"] and 0 < summary["ratio_to_baseline"] < 1
