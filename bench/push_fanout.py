"""Benchmark: pushing a config change to N connected proxies, against the transport floor.

N simulated proxies (default 1,000, SotW; ``--delta`` for delta) connect to
``pilothouse serve`` running in its own process on a generated mesh (100
ServiceEntries with DestinationRules and WorkloadEntries in 10 namespaces, all
visible to every proxy: each proxy holds 100 clusters and 100 load assignments).
Then, ``--runs`` times each:

- EDS change: one WorkloadEntry file is rewritten with a new address;
- CDS change: one DestinationRule file changes its connection-pool limit;

and the time from the file write to each proxy's ACK of the new resource is
recorded (p50, p99, last; the median of the runs is reported). "Beyond debounce"
subtracts the file-watch and push debounce the server is given
(``PILOTHOUSE_FILE_DEBOUNCE``, ``PILOTHOUSE_DEBOUNCE_AFTER``). The server's CPU
per push (idle rate subtracted) and its RSS per idle connection (RSS with N
converged proxies minus RSS with none, over N; with ``--slope`` also from N to 2N)
come from /proc.

In the same run the same fleet code connects another N streams to the
transport floor (``harness/floor.py``, a bare grpc.aio ADS server), which is
handed the very resource bytes pilothouse sent and pushes the same changes on a
control call. Both servers run side by side and their runs alternate (pilothouse
run i, then the floor's replay of it), so that both see the same machine. Ratios
are floor ÷ pilothouse: 1 means as fast (or as lean) as the floor; the target is
at least 0.5. Each push's fan-out spread (last proxy's ACK time − first's) is
reported beside its p99, with the issue's target for the EDS spread at 1,000
proxies (at least 0.7 of the floor's).

``--workers N`` runs ``serve --workers N`` against a floor in N processes sharing
its port (``SO_REUSEPORT``, ``harness/floor.py --processes N``), each loaded and
pushed through its own control port: the same process count on both sides. CPU
and RSS are then the whole process tree's (pilothouse: the supervisor, which only
polls its workers, and every worker), and the connections each process holds are
reported (the kernel spreads HTTP/2 connections, not streams: use a small
``--streams-per-channel`` so that there are enough connections to spread).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fanout_report import figure_groups
from bench.fanout_side import SETTLE, TRIGGERS, FileWrites, Limits, Recording, Side
from bench.harness import servers
from bench.harness.figures import emit, note
from bench.harness.fleet import connect
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed
from bench.harness.process import Profiler
from bench.harness.push import summarize_runs
from pilothouse.loadtest.fleet import ProxyFleet

PAUSE = 0.5


@dataclass(frozen=True)
class Options:
    proxies: int
    services: int
    namespaces: int
    endpoints: int
    runs: int
    delta: bool
    streams_per_channel: int
    file_debounce: float
    debounce_after: float
    slope: bool
    timeout: float
    tail: float
    profile: Path | None
    workers: int


async def compare(
    options: Options, mesh: FanoutMesh, work: Path, stack: contextlib.AsyncExitStack
) -> tuple[Side, Side]:
    """Start both servers, connect a fleet to each, and alternate their timed pushes."""

    def fleet(target: str, app: str = "app") -> ProxyFleet:
        return connect(
            target,
            options.proxies,
            mesh.namespace_names,
            streams_per_channel=options.streams_per_channel,
            delta=options.delta,
            app=app,
        )

    limits = Limits(options.timeout, options.tail)
    env = {
        "PILOTHOUSE_FILE_DEBOUNCE": str(options.file_debounce),
        "PILOTHOUSE_DEBOUNCE_AFTER": str(options.debounce_after),
    }
    log = work / "pilothouse.log"
    ours_process = servers.start_pilothouse(mesh.root, log, env, options.workers)
    stack.callback(ours_process.stop)
    floor_process = servers.start_floor(work / "floor.log", options.workers, control=True)
    stack.callback(floor_process.stop)
    ours_target = await servers.pilothouse_target(ours_process, options.workers)
    floor_target, controls = await servers.floor_controls(floor_process, options.workers)
    control = servers.FloorControl(controls)
    stack.push_async_callback(control.close)
    apply = control.apply
    recording = Recording()
    writes = FileWrites(ours_process)

    async def fire_ours(kind: str, index: int) -> None:
        writes.note(kind)
        mesh.set_state(kind, (index + 1) % 2)

    async def fire_floor(kind: str, index: int) -> None:
        await apply(recording.push_request(kind, index))

    await asyncio.sleep(SETTLE)
    ours = Side(ours_process, ours_target, fire_ours, fleet, limits)
    stack.push_async_callback(ours.close)
    await ours.connect()
    recording.record_initial(ours.probe)
    for request in recording.load_requests():
        await apply(request)
    floor = Side(floor_process, floor_target, fire_floor, fleet, limits)
    stack.push_async_callback(floor.close)
    await floor.connect()

    for kind in TRIGGERS:
        if options.profile is not None:
            for side in (ours, floor):
                side.profiler = Profiler(side.server, options.profile)
                side.profiler.start(kind)
            await asyncio.sleep(1.0)
        for index in range(options.runs):
            mark = time.monotonic()
            await ours.push(kind, index, mesh.cluster(0))
            recording.record(kind, ours.probe, mark)
            await asyncio.sleep(PAUSE)
            await floor.push(kind, index, mesh.cluster(0))
            await asyncio.sleep(PAUSE)
        for side in (ours, floor):
            side.figures.pushes[kind] = summarize_runs(side.figures.runs[kind])
            if side.profiler is not None:
                side.profiler.stop()
    ours.figures.watch_latency = writes.latencies()
    for side, target in ((ours, ours_target), (floor, floor_target)):
        side.figures.connections = side.server.connections(int(target.rsplit(":", 1)[1]))
    if options.slope:
        for side in (ours, floor):
            await side.double("more")
    return ours, floor


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument("--proxies", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="pushes timed per trigger")
    parser.add_argument("--delta", action="store_true", help="delta xDS instead of SotW")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="serve --workers N, against the floor in N processes sharing its port",
    )
    parser.add_argument("--file-debounce", type=float, default=0.05)
    parser.add_argument("--debounce-after", type=float, default=0.1)
    parser.add_argument(
        "--slope",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure RSS with 2N proxies",
    )
    parser.add_argument("--timeout", type=float, default=90.0, help="per wait, seconds")
    parser.add_argument("--tail", type=float, default=0.3, help="quiet seconds that end a push")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="record py-spy collapsed stacks of each server's pushes into DIR (slows them)",
    )
    options = parsed(parser, Options, argv)
    if options.workers < 1:
        parser.error("--workers must be at least 1")
    return options


async def run(options: Options) -> None:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="push-fanout-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        async with contextlib.AsyncExitStack() as stack:
            ours, floor = await compare(options, mesh, work, stack)
    emit(figure_groups(options, ours.figures, floor.figures))
    note(f"done in {time.monotonic() - began:.0f}s")


def main() -> None:
    asyncio.run(run(parse_options()))


if __name__ == "__main__":
    main()
