"""The Kubernetes serve benchmark runs small and measures what it says: both ``serve``
processes (files, and ``k8s://`` over the fake API server, a fake because no real
Kubernetes API server can run here) get ready, their proxies hold the same clusters, and
every Pod readiness flip reaches every proxy by an EDS-only push."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.run_all import SCRIPTS

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "kube_serve.py"


def test_it_prints_both_figures_with_eds_only_flips() -> None:
    argv = [
        "--services",
        "10",
        "--pods",
        "2",
        "--proxies",
        "10",
        "--flips",
        "1",
        "--starts",
        "1",
        "--settle",
        "0",
        "--tail",  # twice the servers' debounce: a full push the flip set off would show
        "0.2",
    ]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["benchmark"] for line in lines] == ["kube_serve_ready", "kube_serve_flip"]
    ready, flip = lines
    assert ready["pilothouse_seconds"] > 0 and ready["baseline_seconds"] > 0
    assert flip["flips"] == 2 and flip["problems"] == [] and flip["eds_only"]
    assert flip["full_pushes_during_flips"] == {"files": 0, "k8s": 0}
    assert flip["unconverged"] == {"files": 0, "k8s": 0}
    clusters = flip["clusters_per_proxy"]
    assert clusters["k8s"] == clusters["files"] > 0
    assert flip["pilothouse_last_ms"] > 0 and flip["target_met"]
    assert "kube_serve" in {script.name for script in SCRIPTS}
