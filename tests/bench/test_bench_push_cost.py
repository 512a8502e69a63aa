"""bench/push_cost.py on a tiny mesh: every figure printed (EDS, CDS and RDS changes, the
CDS and RDS changes without the per-scope comparisons, the no-op ACK), both servers wrote for
each change."""

from __future__ import annotations

import json

import pytest

from bench.push_cost import main
from bench.run_all import SCRIPTS


def test_it_prints_push_and_ack_figures_against_the_floor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["push_cost.py", "--services", "3", "--proxies", "4", "--rounds", "2"]
    quick = ["--ack-repeats", "2", "--debounce", "0.01", "--quiet", "0.01"]
    monkeypatch.setattr("sys.argv", [*argv, *quick])
    main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["benchmark"].split(":")[0] for line in lines] == ["push_cost"] * 4
    eds, cds, rds, ack = lines
    assert "RDS change" in rds["benchmark"]
    for line in (eds, rds):
        assert line["responses_per_round_pilothouse"] == line["responses_per_round_floor"] == 4
    assert cds["responses_per_round_pilothouse"] >= 4 and cds["responses_per_round_floor"] >= 4
    for line in (eds, cds, rds):
        assert line["pilothouse_us_per_response"] > 0 and line["floor_us_per_response"] > 0
    assert ack["pilothouse_us_per_ack"] > 0
    assert ack["target_met"] == "yes" or ack["target_met"].startswith("no: missed by ")
    # the changes again without the per-scope comparisons: the same responses
    for line in (cds, rds):
        assert line["pilothouse_us_per_response_uncompared"] > 0
        assert line["responses_per_round_uncompared"] == line["responses_per_round_pilothouse"]
        assert len(line["uncompared_to_compared_per_round"]) == 2


def test_run_all_runs_it() -> None:
    assert "push_cost" in {script.name for script in SCRIPTS}
