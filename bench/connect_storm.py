"""Benchmark: thousands of sidecars connect at once, against the transport floor.

N simulated SotW sidecars (default 2,000, and 500 and 1,000 for the scaling
curve) start their ADS streams at the same instant against ``pilothouse serve``
just started on the push fan-out mesh (``harness/mesh.py``: 100 ServiceEntries,
each with a DestinationRule and WorkloadEntries, all visible to every proxy;
each proxy asks for and gets 100 clusters, 100 load assignments, its listeners
and routes). The storm lasts until every proxy has converged (every type
ACKed, every name it asked for held) and is timed per proxy and as a whole;
errors (stream failures, NACKs, proxies that never converged), the server's
peak RSS and its CPU time are recorded.

The baseline, in the same run, is the transport floor (``harness/floor.py``):
a bare grpc.aio ADS server, started the same way, handed the very resource
bytes pilothouse served, taking the same storm from the same fleet code. The
two servers alternate (pilothouse storm, then the floor's, for each size, for
each of ``--runs`` rounds) and every storm meets a freshly started server; the
medians of the runs are reported. Ratio = floor seconds ÷ pilothouse seconds.
The issue's target: all 2,000 converged within 10 s.

Run: ``.venv/bin/python bench/connect_storm.py`` (``--sizes 500,1000,2000
--runs 3``); one JSON line per fleet size on stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import servers
from bench.harness.figures import emit, note
from bench.harness.fleet import connect
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed, sizes
from bench.harness.rounds import alternate
from bench.harness.storm import StormRun, storm, summarize_storms
from bench.storm_report import StormShape, StormSize, figure_groups

SETTLE = 1.0
"""Seconds a freshly started server is left alone before the storm."""


@dataclass(frozen=True)
class Options:
    sizes: tuple[int, ...]
    runs: int
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    timeout: float
    target: float


class Storms:
    """Storms against freshly started servers; the floor serves what pilothouse served."""

    def __init__(self, options: Options, mesh: FanoutMesh, work: Path) -> None:
        self.options, self.mesh, self.work = options, mesh, work
        self.floor_load: list[Any] = []
        self.reference: tuple[tuple[str, int], ...] = ()
        """What each proxy held after the first pilothouse storm."""
        self._count = 0

    async def run(self, side: str, proxies: int) -> StormRun:
        self._count += 1
        log = self.work / f"{side}-{self._count}.log"
        async with contextlib.AsyncExitStack() as stack:
            if side == "pilothouse":
                server = servers.start_pilothouse(self.mesh.root, log)
                stack.callback(server.stop)
                target = await servers.pilothouse_target(server)
            else:
                if not self.floor_load:
                    raise RuntimeError("the floor has nothing to serve: run pilothouse first")
                server = servers.start_floor(log)
                stack.callback(server.stop)
                target = await servers.floor_target(server)
                control = servers.FloorControl(target)
                stack.push_async_callback(control.close)
                await control.load(self.floor_load)
            await asyncio.sleep(SETTLE)
            fleet = connect(
                target,
                proxies,
                self.mesh.namespace_names,
                streams_per_channel=self.options.streams_per_channel,
            )
            stack.push_async_callback(fleet.close)
            run = await storm(fleet, server, self.options.timeout)
            if side == "pilothouse" and not self.floor_load and fleet.proxies[0].settled():
                self.floor_load = servers.floor_load_requests(fleet.proxies[0])
                self.reference = run.held
        note(
            f"{side} {proxies}: {run.seconds:.2f}s p99 {run.percentile(99):.2f}s "
            f"unconverged {run.unconverged} failures {run.stream_failures} "
            f"peak {run.peak_rss_kib / 1024:.0f} MiB cpu {run.cpu_seconds:.1f}s "
            f"held {run.held} odd {run.odd_proxies}"
        )
        return run


async def run(options: Options) -> None:
    began = time.monotonic()
    note(f"open file limit {servers.raise_open_file_limit()}")
    with tempfile.TemporaryDirectory(prefix="connect-storm-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        storms = Storms(options, mesh, work)
        sides = {
            f"{side} {n}": (lambda _, side=side, n=n: storms.run(side, n))
            for n in options.sizes
            for side in ("pilothouse", "floor")
        }
        runs = await alternate(options.runs, sides)
    sizes = [
        StormSize(
            summarize_storms(runs[f"pilothouse {n}"]), summarize_storms(runs[f"floor {n}"])
        )
        for n in options.sizes
    ]
    shape = StormShape(
        options.services, options.runs, options.streams_per_channel, options.target,
        storms.reference,
    )  # fmt: skip
    emit(figure_groups(shape, sizes))
    note(f"done in {time.monotonic() - began:.0f}s")


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument(
        "--sizes", type=sizes, default=(500, 1000, 2000), help="fleet sizes, comma-separated"
    )
    parser.add_argument("--runs", type=int, default=3, help="storms per server and size")
    parser.add_argument("--timeout", type=float, default=60.0, help="longest storm, seconds")
    parser.add_argument("--target", type=float, default=10.0, help="target seconds")
    options = parsed(parser, Options, argv)
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    return options


def main() -> None:
    asyncio.run(run(parse_options()))


if __name__ == "__main__":
    main()
