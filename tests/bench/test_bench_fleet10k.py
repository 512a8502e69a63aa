"""bench/fleet10k.py's floor replay: a trigger writing change N to the FIFO hands the floor
change N's recorded resources, as often as it is written, and nothing else; and its row's
verdict, issue #17's replay target, from made-up load generator reports."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

# the script imports its neighbours by bare name, as it does when run from bench/
from bench.fanout_side import Recording
from bench.fleet10k import CHANGES, NOT_JUDGED, Options, TreeSample, _replay, figures


async def test_each_number_written_pushes_that_change(tmp_path: Path) -> None:
    recording = Recording(
        sent={kind: [[discovery_pb2.Resource(name=f"{kind}-resource")]] for kind in CHANGES}
    )
    applied: list[Any] = []
    arrived = asyncio.Event()

    async def apply(request: Any) -> None:
        applied.append(list(request.resources))
        if len(applied) == 3:
            arrived.set()

    fifo = tmp_path / "changes"
    os.mkfifo(fifo)
    replay = asyncio.create_task(_replay(fifo, recording, apply))
    await asyncio.sleep(0.05)
    for text in ("2\n", "1\n2\n"):  # as the trigger's echo writes them: whole lines
        descriptor = os.open(fifo, os.O_WRONLY)
        os.write(descriptor, text.encode())
        os.close(descriptor)  # the writer goes away between triggers
    await asyncio.wait_for(arrived.wait(), 10)
    replay.cancel()
    await asyncio.gather(replay, return_exceptions=True)
    assert [names[0].name for names in applied] == ["eds-resource", "cds-resource", "eds-resource"]


def load_report(cds_p99: float, eds_spread: float, unconverged: int = 0) -> dict[str, Any]:
    """What ``pilothouse loadtest`` reports, cut to what fleet10k reads."""
    per_change = [
        {"number": 1, "seconds": {"p50": 1.0, "p99": cds_p99, "min": 0.5, "max": cds_p99},
         "serverCpuSeconds": 2.0, "missed": 0},
        {"number": 2, "seconds": {"p50": 1.0, "p99": 2.0, "min": 0.5, "max": 0.5 + eds_spread},
         "serverCpuSeconds": 1.0, "missed": 0},
    ]  # fmt: skip
    return {
        "connect": {"converged": 10_000 - unconverged, "unconverged": unconverged},
        "traffic": {"responses": 70_000},
        "changes": {"perChange": per_change, "traffic": {"responses": 30_000}},
        "types": ["CDS", "EDS"],
        "elapsedSeconds": 60.0,
        "errors": {},
        "serverProcess": {"rssBytes": {"peak": 2**29, "start": 2**26, "connected": 2**28}},
    }


OPTIONS = Options(10_000, 2, 250, 20, 2, 2, 60.0, 600.0, "CDS,EDS,LDS,RDS", True)


def judge(ours: dict[str, Any], floor: dict[str, Any] | None, **shape: Any) -> dict[str, Any]:
    options = Options(**{**OPTIONS.__dict__, **shape})
    base = None if floor is None else {"report": floor, "cpu": 40.0, "held": None}
    return figures(options, ours, 40.0, TreeSample(2**20, 17, 2), base)


def test_the_row_judges_the_full_push_p99_against_the_floors_replay() -> None:
    met = judge(load_report(3.0, 2.0), load_report(2.5, 1.0))
    assert met["cds_push_p99_times_floor"] == 1.2
    assert met["target"] == (
        "[17] the 10,000-proxy fleet's full-push p99 ≤ 1.5× the floor's replay in the same run"
    )
    assert met["target_met"] == "met"
    assert met["eds_spread_ratio_floor_to_pilothouse"] == 0.5  # context: push_fanout judges it
    assert "≤ 3 s" not in str(met) and "1 GiB" not in str(met)
    missed = judge(load_report(4.0, 2.0), load_report(2.0, 1.0))
    assert missed["target_met"] == "missed by 0.50× (1.33× the target)"
    stalled = judge(load_report(3.0, 2.0, unconverged=3), load_report(2.5, 1.0))
    assert stalled["target_met"] == "missed: 3 proxies never converged"


def test_without_a_floor_or_at_another_size_nothing_is_judged() -> None:
    alone = judge(load_report(3.0, 2.0), None)
    assert alone["target"].startswith("none (--no-baseline")
    smaller = judge(load_report(3.0, 2.0), load_report(2.5, 1.0), proxies=5000)
    assert (smaller["target"], smaller["target_met"]) == (NOT_JUDGED, "—")
