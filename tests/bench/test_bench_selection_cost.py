"""bench/selection_cost.py run whole on a tiny fleet, comparing this tree with itself: it
prints one figure group per change, each with its baseline and its ratio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_script_compares_two_trees_push_by_push() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "selection_cost.py"),
            *("--old-src", str(ROOT / "src"), "--pairs", "1"),
            *("--proxies", "8", "--services", "4", "--rounds", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    groups = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [g["benchmark"] for g in groups] == [
        "selection_cost_unrelated",
        "selection_cost_telemetry_edit",
    ]
    for group in groups:
        assert group["baseline"] and group["ratio_to_baseline"] > 0
        assert len(group["baseline_us_per_proxy"]) == len(group["pilothouse_us_per_proxy"]) == 1
