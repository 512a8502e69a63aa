"""bench/request_cost.py on a tiny mesh: a figure per phase of a CDS round's requests and
for the no-op ACK, this tree beside a baseline package (here the same one) in one run."""

from __future__ import annotations

import json

import pytest

from bench.request_cost import PHASES, main


def test_it_prints_a_figure_per_phase_against_the_baseline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["request_cost.py", "--services", "3", "--proxies", "4", "--rounds", "1"]
    monkeypatch.setattr("sys.argv", [*argv, "--debounce", "0.01", "--baseline", "pilothouse"])
    main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["benchmark"].split(" ")[1] for line in lines] == list(PHASES)
    for line in lines:
        assert line["pilothouse_us_per_request"] > 0 and line["baseline_us_per_request"] > 0
        assert len(line["old_to_new_per_round"]) == 1 and line["old_to_new"] > 0
