"""Benchmark: push fan-out with ``serve --workers 1`` against ``--workers 2``, in one run.

The generated fan-out mesh (``harness/mesh.py``: ``--services`` ServiceEntries with
DestinationRules, all visible to every proxy) is served by ``pilothouse serve
--workers 1``, then by ``--workers 2`` (each started fresh, on ports 0). N simulated
proxies (``ProxyFleet``, a few streams per HTTP/2 connection so that the kernel spreads
connections over the workers) connect and converge; then, ``--runs`` times, one
DestinationRule file is rewritten and the time from the write to each proxy holding
the new cluster is recorded. Reported: medians over the runs of the p50 and of the
last proxy's time. The proxies run in this one process, on the same machine as the
servers: with few cores the client is part of what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit
from bench.harness.fleet import holds_new, start_converged
from bench.harness.mesh import FanoutMesh
from bench.harness.process import ServerProcess
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities

CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
ENVIRONMENT = {
    "PILOTHOUSE_FILE_DEBOUNCE": "0.05",
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.05",
    "PILOTHOUSE_DRAIN_SECONDS": "1",
    "PILOTHOUSE_XDS_ADMISSION_RATE": "0",
}


class Toggle:
    """The DestinationRule that changes, flipped between its two states on every run
    (across both sides, so that every run really changes it)."""

    def __init__(self, mesh: FanoutMesh) -> None:
        self.mesh = mesh
        self.state = 0

    def flip(self) -> None:
        self.state = 1 - self.state
        self.mesh.set_state("cds", self.state)


async def side(workers: int, toggle: Toggle, args: argparse.Namespace, log: Path) -> dict[str, Any]:
    mesh = toggle.mesh
    server = ServerProcess(
        f"serve --workers {workers}",
        [sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(mesh.root),
         "--workers", str(workers), "--xds-address", "127.0.0.1:0",
         "--admin-address", "127.0.0.1:0", "--ctrlz-address", "off", "--log-level", "info"],
        log, ENVIRONMENT,
    )  # fmt: skip
    try:
        found = await server.wait_for_line(r"xDS listening on \S+:(\d+)", 60)
        deadline = time.monotonic() + 60
        while server.output().count(" config loaded ") < workers:
            if time.monotonic() > deadline:
                raise TimeoutError("the workers never loaded their config")
            await asyncio.sleep(0.05)
        fleet = ProxyFleet(
            f"127.0.0.1:{found.group(1)}",
            fleet_identities(args.proxies, namespaces=mesh.namespace_names),
            streams_per_channel=args.streams_per_channel,
            seed=1,
        )
        try:
            connect = await start_converged(fleet, 120)
            await asyncio.sleep(1.0)
            p50s, lasts = [], []
            for _ in range(args.runs):
                p50, last = await timed_change(fleet, toggle)
                p50s.append(p50)
                lasts.append(last)
                await asyncio.sleep(0.5)
        finally:
            await fleet.close()
        return {
            "connect_s": round(connect.wall, 3),
            "push_p50_s": round(statistics.median(p50s), 4),
            "push_last_s": round(statistics.median(lasts), 4),
        }
    finally:
        server.stop()


async def timed_change(fleet: ProxyFleet, toggle: Toggle) -> tuple[float, float]:
    """Rewrite service 0's DestinationRule; (p50, last) seconds until proxies hold it."""
    updated = holds_new(fleet, CDS, toggle.mesh.cluster(0))
    start = time.monotonic()
    toggle.flip()
    report = await fleet.wait_converged(updated, timeout=60, since=start)
    if not report.converged:
        raise RuntimeError(f"{len(report.unconverged)} proxies missed the push")
    return report.p50, max(report.durations)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proxies", type=int, default=500)
    parser.add_argument("--services", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--streams-per-channel", type=int, default=5)
    args = parser.parse_args()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="workers-fanout-") as scratch:
        folder = Path(scratch)
        mesh = FanoutMesh(folder / "mesh", args.services, namespaces=5, endpoints=1)
        mesh.write()
        toggle = Toggle(mesh)
        one = await side(1, toggle, args, folder / "serve-1.log")
        two = await side(2, toggle, args, folder / "serve-2.log")
    emit(
        [
            {
                "benchmark": "workers_fanout",
                "proxies": args.proxies,
                "services_per_proxy": args.services,
                "runs": args.runs,
                "streams_per_connection": args.streams_per_channel,
                "baseline": "pilothouse serve --workers 1, same run",
                "baseline_push_p50_s": one["push_p50_s"],
                "baseline_push_last_s": one["push_last_s"],
                "baseline_connect_s": one["connect_s"],
                "workers_2_push_p50_s": two["push_p50_s"],
                "workers_2_push_last_s": two["push_last_s"],
                "workers_2_connect_s": two["connect_s"],
                "ratio_to_baseline": round(one["push_last_s"] / two["push_last_s"], 2),
                "ratio_definition": "last proxy's push time with 1 worker ÷ with 2 workers "
                "(above 1: two workers push faster)",
                "target": "none set by the issues (the proxies share the machine's cores)",
            }
        ]
    )
    print(f"done in {time.monotonic() - began:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
