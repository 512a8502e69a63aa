"""bench/cds_messages.py: its figures from a measurement, and the script run whole on a
real Envoy (SotW only, to keep it short): a CDS change costs two responses, a removal or
an endpoint move one, beside istiod's three."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.cds_messages import CHANGES, ISTIOD_PER_CDS_CHANGE, figures
from bench.run_all import SCRIPTS
from tests.e2e.harness.envoy import envoy_binary

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_figures_put_each_change_beside_istiods_count() -> None:
    found = {
        "cluster added": {"CDS": 1, "EDS": 1},
        "cluster changed": {"CDS": 1, "EDS": 2},
        "cluster removed": {"CDS": 1},
        "endpoints moved": {"EDS": 1},
    }
    result = figures({"sotw": found})
    rows = {row["change"]: row for row in result["curve"]}
    assert list(rows) == list(CHANGES)
    assert rows["cluster changed"]["pilothouse_sotw_messages"] == 3
    assert rows["cluster changed"]["pilothouse_sotw_types"] == "1 CDS + 2 EDS"
    assert rows["cluster added"]["istiod_messages"] == ISTIOD_PER_CDS_CHANGE
    assert rows["endpoints moved"]["istiod_messages"] is None
    assert result["pilothouse_messages_per_cds_change"] == 3  # the worst CDS change
    assert result["target_met"] == "no" and result["ratio_to_baseline"] == 1.0
    assert "cds_messages" in {script.name for script in SCRIPTS}


def test_the_script_counts_a_real_envoys_responses() -> None:
    assert envoy_binary().is_file()
    done = subprocess.run(
        [sys.executable, str(BENCH / "cds_messages.py"), "--transports", "sotw"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert result["baseline"] and result["ratio_to_baseline"] == 1.5
    rows = {row["change"]: row["pilothouse_sotw_messages"] for row in result["curve"]}
    assert rows == {
        "cluster added": 2,
        "cluster changed": 2,
        "cluster removed": 1,
        "endpoints moved": 1,
    }
