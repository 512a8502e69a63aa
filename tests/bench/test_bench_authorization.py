"""The authorization benchmark runs small and measures what it says: a workload policy
pushes one proxy where the PeerAuthentication baseline pushes more."""

from __future__ import annotations

import json

import pytest

from bench.authorization_cost import main
from bench.run_all import SCRIPTS


def test_it_prints_both_figures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["authorization_cost.py", "--namespaces", "3", "--workloads", "2", "--runs", "1"]
    monkeypatch.setattr("sys.argv", argv)
    main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["benchmark"] for line in lines] == [
        "authorization_push_scope",
        "authorization_listener_build",
    ]
    scope = lines[0]
    assert scope["pilothouse_pushed"] == 1 and scope["target_met"]
    assert scope["baseline_pushed"] > scope["pilothouse_pushed"]
    assert lines[1]["pilothouse_us_per_listener"] > 0
    assert "authorization_cost" in {script.name for script in SCRIPTS}
