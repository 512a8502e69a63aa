"""bench/fleet10k.py's floor replay: a trigger writing change N to the FIFO hands the floor
change N's recorded resources, as often as it is written, and nothing else."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

# the script imports its neighbours by bare name, as it does when run from bench/
from bench.fanout_side import Recording
from bench.fleet10k import CHANGES, _replay, replay_target, spread_target


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


def test_the_full_push_p99_and_eds_spread_are_judged_against_the_floors_replay() -> None:
    assert replay_target(0.8) == {
        "cds_push_p99_times_floor": 1.25,
        "replay_target": "full push p99 ≤ 1.5× the floor's replay (issue #17)",
        "replay_target_met": "yes",
    }
    assert replay_target(0.5)["replay_target_met"] == "no: 2.0× the floor's, missed by 0.50×"
    assert replay_target(None)["replay_target_met"] == "unknown (no p99 on one side)"
    assert spread_target(2000.0, 1800.0)["eds_spread_target_met"] == "yes"
    assert spread_target(3000.0, 1800.0)["eds_spread_target_met"] == "no: 0.6, missed by 0.20"
    assert spread_target(None, 1800.0)["eds_spread_ratio_floor_to_pilothouse"] is None
