"""bench/metrics_overhead.py on a tiny mesh: both changes measured, figures consistent."""

from __future__ import annotations

import json

import pytest

from bench.metrics_overhead import main, metric_work_us


def test_it_prints_one_line_per_change(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["metrics_overhead.py", "--services", "3", "--proxies", "4", "--rounds", "2"]
    monkeypatch.setattr("sys.argv", [*argv, "--work-samples", "2"])
    main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["benchmark"].split(":")[0] for line in lines] == ["metrics_overhead"] * 2
    eds, cds = lines
    assert eds["responses_per_round"] == 4  # one EDS response per proxy
    assert cds["responses_per_round"] >= 4
    assert all(line["ratio_to_baseline"] > 0 and "warning" not in line for line in lines)
    assert eds["recording_cost_us_per_response"] == cds["recording_cost_us_per_response"]


def test_recording_does_more_work_than_not_recording() -> None:
    work = metric_work_us(samples=3, repetitions=2_000)
    assert work[True] > work[False] > 0
