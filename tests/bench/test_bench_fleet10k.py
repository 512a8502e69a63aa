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
from bench.fleet10k import CHANGES, _replay


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
