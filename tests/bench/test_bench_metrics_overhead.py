"""bench/metrics_overhead.py on a tiny mesh: both changes measured, figures consistent."""

from __future__ import annotations

import json

import pytest

from bench.metrics_overhead import MetricWork, main


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


def test_both_sides_do_the_push_path_work_and_only_one_records_it() -> None:
    """What the benchmark's micro figure times: the recording side's histograms count
    every observation, the other side's none, and both sides take measurable time.
    (Which is faster is the benchmark's figure, not this test's: a timing comparison
    fails on a loaded machine.)"""
    work = {recording: MetricWork(recording) for recording in (True, False)}
    try:
        for one in work.values():
            one.sample(100)
            assert one.best > 0
        assert work[True].metrics.queue_time.count == 100
        assert work[True].metrics.convergence.count == 100
        assert work[False].metrics.queue_time.count == 0
        assert work[False].metrics.convergence.count == 0
    finally:
        for one in work.values():
            one.server.close()
