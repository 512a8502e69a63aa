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
transport floor (``transport_floor.py``, a bare grpc.aio ADS server), which is
handed the very resource bytes pilothouse sent and pushes the same changes on a
control call. Both servers run side by side and their runs alternate (pilothouse
run i, then the floor's replay of it), so that both see the same machine. Ratios
are floor ÷ pilothouse: 1 means as fast (or as lean) as the floor; the target is
at least 0.5. Each push's fan-out spread (last proxy's ACK time − first's) is
reported beside its p99, with the issue's target for the EDS spread at 1,000
proxies (at least 0.7 of the floor's).

``--workers N`` runs ``serve --workers N`` against a floor in N processes sharing
its port (``SO_REUSEPORT``, ``transport_floor.py --processes N``), each loaded and
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
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from fanout_mesh import FanoutMesh
from fanout_process import Profiler, ServerProcess, floor_controls, workers_ready
from fanout_report import figure_groups
from fanout_runs import summarize_runs
from fanout_side import SETTLE, TRIGGERS, FileWrites, Limits, Recording, Side
from transport_floor import APPLY_METHOD

from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.identity import ProxyNode

HERE = Path(__file__).resolve().parent
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


def _serialize(message: Any) -> bytes:
    return bytes(message.SerializeToString())


def _raw(body: bytes) -> bytes:
    return body


def start_pilothouse(options: Options, mesh: FanoutMesh, work: Path) -> ServerProcess:
    return ServerProcess(
        "pilothouse",
        [
            sys.executable,
            "-m",
            "pilothouse.cli.main",
            "serve",
            "--config",
            str(mesh.root),
            "--xds-address",
            "127.0.0.1:0",
            "--admin-address",
            "127.0.0.1:0",
            "--workers",
            str(options.workers),
        ],
        work / "pilothouse.log",
        env={
            "PILOTHOUSE_FILE_DEBOUNCE": str(options.file_debounce),
            "PILOTHOUSE_DEBOUNCE_AFTER": str(options.debounce_after),
            "PILOTHOUSE_DRAIN_SECONDS": "1",
        },
    )


def start_floor(work: Path, processes: int = 1) -> ServerProcess:
    return ServerProcess(
        "transport floor",
        [
            sys.executable,
            str(HERE / "transport_floor.py"),
            "--address",
            "127.0.0.1:0",
            "--processes",
            str(processes),
            "--control-address",
            "127.0.0.1:0",
        ],
        work / "floor.log",
    )


async def compare(
    options: Options, mesh: FanoutMesh, work: Path, stack: contextlib.AsyncExitStack
) -> tuple[Side, Side]:
    """Start both servers, connect a fleet to each, and alternate their timed pushes."""

    def fleet(target: str, identities: list[ProxyNode]) -> ProxyFleet:
        return ProxyFleet(
            target,
            identities,
            delta=options.delta,
            streams_per_channel=options.streams_per_channel,
        )

    limits = Limits(options.timeout, options.tail)
    identities = fleet_identities(options.proxies, namespaces=mesh.namespace_names)
    ours_process = start_pilothouse(options, mesh, work)
    stack.callback(ours_process.stop)
    floor_process = start_floor(work, options.workers)
    stack.callback(floor_process.stop)
    found = await ours_process.wait_for_line(r"xDS listening on (\S+):(\d+)", 60)
    await workers_ready(ours_process, options.workers)
    ours_target = f"{found.group(1)}:{found.group(2)}"
    floor_target, controls = await floor_controls(floor_process, options.workers)
    applies = []
    for control in controls:
        channel = grpc.aio.insecure_channel(control)
        stack.push_async_callback(channel.close)
        applies.append(
            channel.unary_unary(
                APPLY_METHOD, request_serializer=_serialize, response_deserializer=_raw
            )
        )

    async def apply(request: Any) -> None:
        """Hand every floor process the request at once."""
        await asyncio.gather(*(each(request) for each in applies))

    recording = Recording()
    writes = FileWrites(ours_process)

    async def fire_ours(kind: str, index: int) -> None:
        writes.note(kind)
        mesh.set_state(kind, (index + 1) % 2)

    async def fire_floor(kind: str, index: int) -> None:
        await apply(recording.push_request(kind, index))

    await asyncio.sleep(SETTLE)
    ours = Side(ours_process, ours_target, fire_ours, fleet, identities, limits)
    stack.push_async_callback(ours.close)
    await ours.connect()
    recording.record_initial(ours.probe)
    for request in recording.load_requests():
        await apply(request)
    floor = Side(floor_process, floor_target, fire_floor, fleet, identities, limits)
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
        more = fleet_identities(options.proxies, namespaces=mesh.namespace_names, app="more")
        for side in (ours, floor):
            await side.double(more)
    return ours, floor


def parse_options() -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxies", type=int, default=1000)
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--endpoints", type=int, default=2, help="WorkloadEntries per service")
    parser.add_argument("--runs", type=int, default=5, help="pushes timed per trigger")
    parser.add_argument("--delta", action="store_true", help="delta xDS instead of SotW")
    parser.add_argument("--streams-per-channel", type=int, default=100)
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
    args = parser.parse_args()
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    return Options(
        proxies=args.proxies,
        services=args.services,
        namespaces=args.namespaces,
        endpoints=args.endpoints,
        runs=args.runs,
        delta=args.delta,
        streams_per_channel=args.streams_per_channel,
        file_debounce=args.file_debounce,
        debounce_after=args.debounce_after,
        slope=args.slope,
        timeout=args.timeout,
        tail=args.tail,
        profile=args.profile,
        workers=args.workers,
    )


async def run(options: Options) -> None:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="push-fanout-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        async with contextlib.AsyncExitStack() as stack:
            ours, floor = await compare(options, mesh, work, stack)
    for group in figure_groups(options, ours.figures, floor.figures):
        print(json.dumps(group), flush=True)
    print(f"done in {time.monotonic() - began:.0f}s", file=sys.stderr)


def main() -> None:
    asyncio.run(run(parse_options()))


if __name__ == "__main__":
    main()
