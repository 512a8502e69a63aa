"""bench/fanout_curve.py runs end to end on a tiny fleet with ``serve --workers 2``: one point
through push_fanout.py and one through fleet10k.py, each against a floor in two processes
sharing its port, every figure of the curve measured (none made up) and the connections
counted per process add up to the fleet's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.run_all import SCRIPTS

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "fanout_curve.py"
FIGURES = [
    f"{side}_{figure}"
    for side in ("pilothouse", "floor")
    for figure in (
        "eds_cpu_us_per_proxy", "cds_cpu_us_per_proxy", "eds_p99_ms", "cds_p99_ms",
        "eds_spread_ms", "cds_spread_ms", "kib_per_connection",
    )
]  # fmt: skip


def connections(text: str) -> int:
    return sum(int(count) for count in text.split(" / "))


def test_a_tiny_two_worker_curve_through_both_fleets() -> None:
    argv = ["--sizes", "12,20", "--workers", "2", "--fleet-from", "20", "--runs", "1",
            "--streams-per-channel", "3", "--settle", "0.2", "--tail", "0.1",
            "--quiet-for", "0.1"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert "250" not in result["benchmark"] and "12 to 20 proxies" in result["benchmark"]
    assert "serve --workers 2" in result["benchmark"]
    assert result["curve_series"] == "workers"
    small, large = result["curve"]
    assert (small["proxies"], small["workers"], large["proxies"], large["workers"]) == (
        12, 2, 20, 2,
    )  # fmt: skip
    for point in (small, large):
        missing = [figure for figure in FIGURES if figure not in point]
        assert not missing, f"{point['proxies']} proxies: no {missing}"
        # below --fleet-from pilothouse's p99 is beyond the configured debounce, whose
        # file-watch part is an upper bound (the watch yields after a quiet step of at most half
        # of it): at 12 proxies it can come out a few ms below zero, never a debounce
        assert point["pilothouse_eds_p99_ms"] > -50 and point["floor_cds_p99_ms"] > 0
    # push_fanout: 12 proxies, 3 streams per connection; fleet10k: one connection per
    # load generator process (2)
    assert connections(small["pilothouse_connections"]) == 4
    assert connections(small["floor_connections"]) == 4
    assert connections(large["pilothouse_connections"]) == 2
    assert "partial" not in result
    assert "fanout_curve" in {script.name for script in SCRIPTS}
