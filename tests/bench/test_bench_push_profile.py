"""The push-profile benchmark run small (20 in-process proxies, no gRPC): each change gets
its µs per response and the stages' shares of the server's profiled time, which add up
to less than the whole and leave the rest to the loop and the planning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.run_all import SCRIPTS

BENCH = Path(__file__).resolve().parents[2] / "bench"
STAGES = ("workers", "plan", "generate", "respond", "queue_response", "writer")


def test_each_change_gets_its_stages_shares() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "push_profile.py"), "--proxies", "20", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [line["benchmark"].split(":")[1].split()[0] for line in lines] == ["EDS", "CDS"]
    for line in lines:
        shares = [line[f"share_{stage}"] for stage in STAGES]
        assert all(0 < share < 1 for share in shares), shares
        assert abs(sum(shares) + line["share_rest"] - 1) < 0.01
        assert 0 < line["ratio_to_baseline"] <= 1
        assert line["pilothouse_us_per_response"] > 0
    assert lines[1]["responses_per_round"] == 2 * lines[0]["responses_per_round"] == 40
    assert "push_profile" in {script.name for script in SCRIPTS}
