"""Benchmark: push fan-out with ``serve --workers 1`` against ``--workers 2``, in one run.

The generated fan-out mesh (``harness/mesh.py``: ``--services`` ServiceEntries with
DestinationRules, all visible to every proxy) is served by ``pilothouse serve
--workers 1``, then by ``--workers 2`` (each started fresh, on ports 0). N simulated
proxies (a few streams per HTTP/2 connection so that the kernel spreads connections over
the workers) connect and converge; then, ``--runs`` times, one DestinationRule file is
rewritten (flipped between its two states across both sides, so every run is a change)
and the time from the write to each proxy holding the new cluster is recorded.
Reported: medians over the runs of the p50 and of the last proxy's time. The proxies run
in this one process, on the same machine as the servers: with few cores the client is
part of what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from itertools import count
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit
from bench.harness.fleet import converged_fleet, holds_new
from bench.harness.mesh import FanoutMesh
from bench.harness.servers import serving_pilothouse
from pilothouse.protocol.type_urls import CDS

ENVIRONMENT = {
    "PILOTHOUSE_FILE_DEBOUNCE": "0.05",
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.05",
    "PILOTHOUSE_XDS_ADMISSION_RATE": "0",
}


async def side(
    workers: int, mesh: FanoutMesh, flips: count[int], args: argparse.Namespace, log: Path
) -> dict[str, Any]:
    """Connect the fleet to ``serve --workers N`` and time ``--runs`` DestinationRule flips."""
    async with contextlib.AsyncExitStack() as stack:
        _, target = await serving_pilothouse(stack, mesh.root, log, ENVIRONMENT, workers)
        began = time.monotonic()
        fleet = await converged_fleet(
            stack, target, args.proxies, mesh.namespace_names,
            streams_per_channel=args.streams_per_channel, timeout=120,
        )  # fmt: skip
        connect = time.monotonic() - began
        await asyncio.sleep(args.settle)
        p50s, lasts = [], []
        for _ in range(args.runs):
            updated = holds_new(fleet, CDS, mesh.cluster(0))
            start = time.monotonic()
            mesh.set_state("cds", next(flips) % 2)
            report = await fleet.wait_converged(updated, timeout=60, since=start)
            if not report.converged:
                raise RuntimeError(f"{len(report.unconverged)} proxies missed the push")
            p50s.append(report.p50)
            lasts.append(max(report.durations))
            await asyncio.sleep(args.settle / 2)
    return {
        "connect_s": round(connect, 3),
        "push_p50_s": round(statistics.median(p50s), 4),
        "push_last_s": round(statistics.median(lasts), 4),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proxies", type=int, default=500)
    parser.add_argument("--services", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--streams-per-channel", type=int, default=5)
    parser.add_argument(
        "--settle",
        type=float,
        default=1.0,
        help="seconds the fleet is left alone once converged (half that after each push)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="workers-fanout-") as scratch:
        folder = Path(scratch)
        mesh = FanoutMesh(folder / "mesh", args.services, namespaces=5, endpoints=1)
        mesh.write()
        flips = count(1)
        one = await side(1, mesh, flips, args, folder / "serve-1.log")
        two = await side(2, mesh, flips, args, folder / "serve-2.log")
    emit(
        [
            {
                "benchmark": "workers_fanout",
                "proxies": args.proxies,
                "services_per_proxy": args.services,
                "runs": args.runs,
                "streams_per_connection": args.streams_per_channel,
                "baseline": "pilothouse serve --workers 1, same run",
                **{f"baseline_{key}": value for key, value in one.items()},
                **{f"workers_2_{key}": value for key, value in two.items()},
                "ratio_to_baseline": round(one["push_last_s"] / two["push_last_s"], 2),
                "ratio_definition": "last proxy's push time with 1 worker ÷ with 2 workers "
                "(above 1: two workers push faster)",
                "target": "none set by the issues (the proxies share the machine's cores)",
            }
        ]
    )


if __name__ == "__main__":
    asyncio.run(main())
