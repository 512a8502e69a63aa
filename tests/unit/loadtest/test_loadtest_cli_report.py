"""The load report: the mergeable histogram behind its percentiles, how the figures of several
processes add up, the JSON object and the text table, and when a run counts as ok."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.loadtest.histogram import LatencyHistogram, bucket_of, bucket_value
from pilothouse.loadtest.outcome import (
    ChangeOutcome,
    ShareResult,
    ShareStatus,
    Traffic,
    combine,
)
from pilothouse.loadtest.report import build_report, render_text, size
from pilothouse.loadtest.scenarios import (
    CHANGES_BEGIN,
    CHANGES_MADE,
    CONNECTED,
    END,
    START,
    RunRecord,
)
from pilothouse.loadtest.server_process import ServerRecord, ServerSample
from pilothouse.loadtest.spec import LoadSpec, Scenario, Trigger
from pilothouse.loadtest.triggers import Fired

durations = st.lists(
    st.floats(min_value=1e-5, max_value=100.0, allow_nan=False), min_size=1, max_size=300
)


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def histogram(*values: float) -> LatencyHistogram:
    made = LatencyHistogram()
    made.extend(values)
    return made


# -- the histogram -------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(durations, st.sampled_from([1, 10, 50, 90, 99, 99.9]))
def test_percentiles_are_within_one_percent_of_the_exact_ones(
    values: list[float], q: float
) -> None:
    made = histogram(*values)
    exact = nearest_rank(values, q)
    assert made.percentile(q) == pytest.approx(exact, rel=0.01)
    assert made.count == len(values)
    assert made.minimum == min(values)
    assert made.maximum == max(values)
    assert made.percentile(0) == min(values)
    assert made.percentile(100) == max(values)


@settings(max_examples=150, deadline=None)
@given(durations, durations)
def test_merging_equals_recording_everything_in_one(left: list[float], right: list[float]) -> None:
    merged = histogram(*left)
    merged.merge(histogram(*right))
    together = histogram(*left, *right)
    assert merged.buckets == together.buckets
    assert merged.count == together.count
    assert merged.total == pytest.approx(together.total)
    assert (merged.minimum, merged.maximum) == (together.minimum, together.maximum)
    for q in (50, 90, 99):
        assert merged.percentile(q) == together.percentile(q)


@settings(max_examples=100, deadline=None)
@given(durations)
def test_histogram_survives_json(values: list[float]) -> None:
    made = histogram(*values)
    copy = LatencyHistogram.from_json(json.loads(json.dumps(made.to_json())))
    assert copy.buckets == made.buckets
    assert copy.summary() == made.summary()


def test_buckets_are_one_percent_wide() -> None:
    for value in (1e-5, 0.0123, 0.5, 3.0, 250.0):
        middle = bucket_value(bucket_of(value))
        assert abs(middle - value) / value < 0.006
    assert bucket_of(0.0) == bucket_of(1e-6) == 0
    # Samples 2 % apart never share a bucket.
    assert bucket_of(1.0) != bucket_of(1.02)


def test_negative_durations_count_as_zero_and_empty_histograms_have_no_summary() -> None:
    made = LatencyHistogram()
    assert made.summary() is None
    with pytest.raises(ValueError, match="empty"):
        made.percentile(50)
    made.add(-0.002)
    assert made.minimum == 0.0
    summary = made.summary()
    assert summary is not None and summary.count == 1
    with pytest.raises(ValueError, match="outside"):
        made.percentile(101)


def test_a_histogram_whose_counts_do_not_add_up_is_refused() -> None:
    data = histogram(0.1, 0.2).to_json()
    data["count"] = 3
    with pytest.raises(ValueError, match="do not add up"):
        LatencyHistogram.from_json(data)


# -- statuses and results travel as JSON ----------------------------------------


def test_statuses_combine_over_processes() -> None:
    one = ShareStatus(5, connected=5, converged=4, armed=2, pending=1, activity=10,
                      stream_failures=1, traffic=Traffic(10, 1000, 9, 1, 20))  # fmt: skip
    two = ShareStatus(3, connected=2, converged=3, armed=1, pending=2, activity=7,
                      traffic=Traffic(6, 600, 6, 0, 12))  # fmt: skip
    assert ShareStatus.from_json(json.loads(json.dumps(one.to_json()))) == one
    total = combine([one, two])
    assert total == ShareStatus(
        8, connected=7, converged=7, armed=1, pending=3, activity=17, stream_failures=1,
        traffic=Traffic(16, 1600, 15, 1, 32),
    )  # fmt: skip


NO_TRAFFIC = Traffic()


def result(
    proxies: int,
    connect: list[float],
    changes: list[list[float]],
    *,
    missed: int = 0,
    connected_traffic: Traffic = NO_TRAFFIC,
    end_traffic: Traffic = NO_TRAFFIC,
    last_converged_at: float | None = 101.0,
    examples: tuple[str, ...] = (),
) -> ShareResult:
    outcomes = []
    every = LatencyHistogram()
    for index, times in enumerate(changes):
        every.extend(times)
        outcomes.append(
            ChangeOutcome(index, 200.0 + index, len(times), proxies - len(times), histogram(*times))
        )
    return ShareResult(
        proxies=proxies,
        converged=len(connect),
        connect=histogram(*connect),
        last_converged_at=last_converged_at,
        changes=tuple(outcomes),
        change_times=every,
        marks=MappingProxyType({CONNECTED: connected_traffic, END: end_traffic}),
        stream_failures=1,
        reconnects=2,
        error_examples=examples,
    )


def test_share_results_survive_json() -> None:
    made = result(3, [0.1, 0.2, 0.3], [[0.5, 0.6, 0.7]], end_traffic=Traffic(9, 900, 9, 0, 9),
                  examples=("UNAVAILABLE: gone",))  # fmt: skip
    copy = ShareResult.from_json(json.loads(json.dumps(made.to_json())))
    assert copy.to_json() == made.to_json()
    assert copy.changes[0].histogram is not None
    assert copy.changes[0].histogram.summary() == made.changes[0].histogram.summary()  # type: ignore[union-attr]


# -- the report ------------------------------------------------------------------


def push_record() -> RunRecord:
    spec = LoadSpec(
        server="127.0.0.1:15010", proxies=5, processes=2, scenario=Scenario.PUSH, repeat=2,
        trigger=Trigger(file="/tmp/f.yaml", content="x: {n}"),
    )  # fmt: skip
    record = RunRecord(spec)
    record.marks = {START: 100.0, CONNECTED: 102.0, END: 106.0}
    record.fired = [Fired(1, 200.0, 0.001), Fired(2, 201.0, 0.003)]
    record.results = [
        result(3, [0.1, 0.2, 0.3], [[0.5, 0.6, 0.7], [0.4, 0.5, 0.6]],
               connected_traffic=Traffic(12, 12_000, 12, 0, 24),
               end_traffic=Traffic(18, 14_000, 18, 0, 30), last_converged_at=101.5),
        result(2, [0.15, 0.25], [[0.8, 0.9], [0.3, 0.35]],
               connected_traffic=Traffic(8, 8_000, 8, 0, 16),
               end_traffic=Traffic(12, 9_000, 12, 0, 20), last_converged_at=101.2,
               examples=("UNAVAILABLE: x",)),
    ]  # fmt: skip
    return record


def test_push_report_adds_up_both_processes() -> None:
    report = build_report(push_record())
    assert report["ok"] is True
    assert (report["scenario"], report["proxies"], report["processes"]) == ("push", 5, 2)
    assert report["transport"] == "SotW"
    assert report["trigger"] == "write /tmp/f.yaml"
    connect = report["connect"]
    assert (connect["converged"], connect["unconverged"]) == (5, 0)
    assert connect["seconds"]["count"] == 5
    assert connect["seconds"]["min"] == 0.1
    assert connect["seconds"]["max"] == 0.3
    assert connect["seconds"]["p50"] == pytest.approx(0.2, rel=0.01)
    assert connect["wallSeconds"] == pytest.approx(1.5)
    assert connect["traffic"]["responses"] == 20
    assert connect["traffic"]["pushesPerSecond"] == pytest.approx(10.0)
    assert connect["traffic"]["bytesPerSecond"] == pytest.approx(10_000.0)
    changes = report["changes"]
    assert (changes["made"], changes["failed"], changes["reached"], changes["missed"]) == (
        2, 0, 10, 0,
    )  # fmt: skip
    assert changes["seconds"]["count"] == 10
    assert changes["seconds"]["max"] == 0.9
    assert changes["seconds"]["p99"] == pytest.approx(0.9, rel=0.01)
    first, second = changes["perChange"]
    assert (first["number"], first["reached"], first["seconds"]["max"]) == (1, 5, 0.9)
    assert (second["number"], second["seconds"]["min"]) == (2, 0.3)
    assert changes["triggerSeconds"]["max"] == 0.003
    assert changes["ratePerSecond"] is None  # a rate is a churn figure
    assert changes["traffic"]["responses"] == 10
    assert changes["traffic"]["receivedBytes"] == 3_000
    assert changes["traffic"]["seconds"] == 4.0
    assert report["traffic"]["responses"] == 30
    assert report["errors"] == {
        "nacks": 0, "streamFailures": 2, "reconnects": 4, "triggerFailures": 0,
        "examples": ["UNAVAILABLE: x"],
    }  # fmt: skip
    assert report["serverProcess"] is None
    json.dumps(report)  # one JSON object, every value serialisable


def test_missed_changes_failed_triggers_nacks_and_stragglers_fail_the_run() -> None:
    record = push_record()
    assert build_report(record)["ok"]
    missed = push_record()
    missed.results[1] = result(2, [0.15, 0.25], [[0.8], [0.3, 0.35]])
    report = build_report(missed)
    assert not report["ok"]
    assert (report["changes"]["reached"], report["changes"]["missed"]) == (9, 1)
    assert "1 (proxy, change) pairs missed" in render_text(report)

    failed = push_record()
    failed.fired.append(Fired(3, 202.0, 0.5, "the trigger command exited with status 1"))
    report = build_report(failed)
    assert not report["ok"]
    assert (report["changes"]["made"], report["changes"]["failed"]) == (2, 1)
    assert report["errors"]["triggerFailures"] == 1
    assert report["errors"]["examples"][0] == ("change 3: the trigger command exited with status 1")

    nacked = push_record()
    nacked.results[0] = replace(
        nacked.results[0],
        marks=MappingProxyType({CONNECTED: Traffic(), END: Traffic(5, 10, 3, 2, 5)}),
    )
    assert build_report(nacked)["errors"]["nacks"] == 2
    assert not build_report(nacked)["ok"]

    straggler = push_record()
    straggler.results[0] = result(3, [0.1, 0.2], [[0.5, 0.6, 0.7], [0.4, 0.5, 0.6]])
    report = build_report(straggler)
    assert report["connect"]["unconverged"] == 1
    assert report["connect"]["wallSeconds"] is None
    assert "1 proxies never converged" in render_text(report)

    interrupted = push_record()
    interrupted.interrupted = True
    assert not build_report(interrupted)["ok"]
    assert render_text(build_report(interrupted)).endswith("result: interrupted\n")


def test_churn_rate_is_over_the_window_changes_were_made_in() -> None:
    record = push_record()
    record.spec = replace(record.spec, scenario=Scenario.CHURN, repeat=1, rate=1.0)
    record.marks.update({CHANGES_BEGIN: 102.5, CHANGES_MADE: 104.5})
    report = build_report(record)
    assert report["changes"]["ratePerSecond"] == pytest.approx(1.0)
    assert "changes made: 2 (1.00/s)" in render_text(report)


def test_connect_report_has_no_changes_and_reports_the_server() -> None:
    record = push_record()
    record.spec = replace(record.spec, scenario=Scenario.CONNECT, trigger=Trigger())
    record.fired = []
    record.marks[END] = record.marks[CONNECTED]
    server = ServerRecord("/proc/42")
    server.mark(START, ServerSample(100 * 2**20, 10.0))
    server.note(ServerSample(180 * 2**20, 10.5))
    server.mark(CONNECTED, ServerSample(150 * 2**20, 11.0))
    server.mark(END, ServerSample(150 * 2**20, 11.0))
    report = build_report(record, server=server, server_pid=42)
    assert report["changes"] is None
    assert report["trigger"] is None
    process = report["serverProcess"]
    assert process["pid"] == 42
    assert process["rssBytes"] == {
        "start": 100 * 2**20, "connected": 150 * 2**20, "end": 150 * 2**20, "peak": 180 * 2**20,
    }  # fmt: skip
    assert process["cpuSeconds"] == {"connect": 1.0, "total": 1.0}
    assert process["cpuPercent"]["connect"] == pytest.approx(50.0)
    text = render_text(report)
    assert (
        "server (pid 42, /proc/42): RSS 100.0 MiB at start, 150.0 MiB at end, 180.0 MiB peak"
    ) in text
    assert "CPU 50% connect" in text
    assert "changes" not in text
    assert text.endswith("result: ok, every proxy converged\n")


def test_text_table_shows_percentiles_in_milliseconds() -> None:
    text = render_text(build_report(push_record()))
    lines = text.splitlines()
    assert lines[0] == (
        "pilothouse loadtest: push, 5 sidecar proxies (SotW, 2 processes) against "
        "127.0.0.1:15010, 6.0s"
    )
    header = next(line for line in lines if line.startswith("convergence"))
    assert header.split() == ["convergence", "n", "p50", "p90", "p99", "max", "missed"]
    connect = next(line for line in lines if line.startswith("connect "))
    assert connect.split()[1] == "5"
    assert connect.split()[-2:] == ["300.0ms", "0"]
    changes = next(line for line in lines if line.startswith("changes (2)"))
    cells = changes.split()
    assert cells[2] == "10"
    assert cells[-2:] == ["900.0ms", "0"]
    assert any(line.startswith("  change 1") for line in lines)
    assert "errors: 0 NACKs, 2 failed streams, 4 reconnects, 0 failed triggers" in text
    assert "  UNAVAILABLE: x" in lines
    assert text.endswith("result: ok, every proxy converged and reached every change\n")


def test_sizes_are_readable() -> None:
    assert size(512) == "512 B"
    assert size(2048) == "2.0 KiB"
    assert size(3 * 2**20) == "3.0 MiB"
    assert size(None) == "-"


def test_each_push_change_reports_the_server_cpu_from_its_trigger_until_reached() -> None:
    server = ServerRecord("/proc/42")
    samples = {
        START: 10.0, CONNECTED: 11.0, "change-1": 11.5, "change-1-reached": 13.0,
        "change-2": 13.25, "change-2-reached": 13.75, END: 14.0,
    }  # fmt: skip
    for name, cpu in samples.items():
        server.mark(name, ServerSample(2**20, cpu))
    report = build_report(push_record(), server=server, server_pid=42)
    per_change = report["changes"]["perChange"]
    assert [change["serverCpuSeconds"] for change in per_change] == [1.5, 0.5]
    assert report["serverProcess"]["cpuSeconds"]["changes"] == 3.0


def test_a_change_without_server_samples_reports_no_cpu() -> None:
    report = build_report(push_record())
    assert all("serverCpuSeconds" not in change for change in report["changes"]["perChange"])
