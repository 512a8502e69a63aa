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
(``PILOTHOUSE_FILE_DEBOUNCE``, ``PILOTHOUSE_DEBOUNCE_AFTER``): the file watch's is an
upper bound, as it yields once its step (at most half the debounce) passed without another
write, so a push to a handful of proxies can land a few ms "beyond" it below zero
(``pilothouse_p99_beyond_measured_debounce_ms`` subtracts the watch's share read from
the server's log instead). The server's CPU
per push (idle rate subtracted; read from the process's CPU-time clock in
nanoseconds, ``cpu_clock: "ns"``, or in 10 ms ticks where that clock cannot be read,
``"ticks"``) and its RSS per idle connection (RSS with N converged proxies minus RSS
with none, over N; with ``--slope`` also from N to 2N) come from /proc.

In the same run the same fleet code connects another N streams to the
transport floor (``harness/floor.py``, a bare grpc.aio ADS server), which is
handed the very resource bytes pilothouse sent and pushes the same changes on a
control call. Both servers run side by side and their runs alternate (pilothouse
run i, then the floor's replay of it), so that both see the same machine. Ratios
are floor ÷ pilothouse: 1 means as fast (or as lean) as the floor. Each push's
fan-out spread (last proxy's ACK time − first's) is reported beside its p99, and
the server's CPU per push and per message (the responses the fleet received) beside
the floor's. At 1,000 SotW proxies these rows hold issue #17's targets
(``harness/targets.py``): server CPU per message at most 1.2× the floor's for the
EDS and the CDS change, the EDS spread at least 0.8 of the floor's, and at most
80 KiB of RSS per idle connection. Each push's own figures (CPU, per message, first ACK,
spread, and the channels the last tenth of the proxies were on) go to stderr as it ends.

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
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fanout_side import SETTLE, TRIGGERS, FileWrites, Limits, Recording, ServerFigures, Side
from bench.harness import servers
from bench.harness.figures import Row, emit, medians, mib, ms, note, per_side, ratio
from bench.harness.fleet import connect
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed
from bench.harness.push import PushRun, responses
from bench.harness.targets import judged
from pilothouse.loadtest.cpu_time import worse
from pilothouse.loadtest.fleet import ProxyFleet

PAUSE = 0.5
THOUSAND = 1000
"""The fleet size at which the RSS row is judged (its name does not say the size)."""
BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server pushing "
    "the same pre-encoded resource bytes to the same N streams"
)
NOT_JUDGED = "none here (issue #17's targets are judged at 1,000 SotW proxies, one worker)"
SPREAD_DEFINITION = "(spread = last proxy's ACK time − first proxy's, one push; median of the runs)"


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
    workers: int
    settle: float


@dataclass
class Sides:
    """Both servers with their converged fleets, ready to push: pilothouse (``ours``) and the
    floor, which replays what ``recording`` holds of pilothouse's pushes."""

    ours: Side
    floor: Side
    recording: Recording
    writes: FileWrites


async def start_sides(
    options: Options, mesh: FanoutMesh, work: Path, stack: contextlib.AsyncExitStack
) -> Sides:
    """Start both servers and connect a fleet to each (both stopped when ``stack`` closes)."""

    def fleet(target: str, app: str = "app") -> ProxyFleet:
        return connect(
            target,
            options.proxies,
            mesh.namespace_names,
            streams_per_channel=options.streams_per_channel,
            delta=options.delta,
            app=app,
        )

    limits = Limits(options.timeout, options.tail, options.settle)
    env = {
        "PILOTHOUSE_FILE_DEBOUNCE": str(options.file_debounce),
        "PILOTHOUSE_DEBOUNCE_AFTER": str(options.debounce_after),
    }
    log = work / "pilothouse.log"
    # both start at once (neither is measured before both are up)
    (ours_process, ours_target), (floor_process, floor_target, control) = await asyncio.gather(
        servers.serving_pilothouse(stack, mesh.root, log, env, options.workers),
        servers.serving_floor(stack, work / "floor.log", options.workers, control=True),
    )
    apply = control.apply
    recording = Recording()
    writes = FileWrites(ours_process)

    async def fire_ours(kind: str, index: int) -> None:
        writes.note(kind)
        mesh.set_state(kind, (index + 1) % 2)

    async def fire_floor(kind: str, index: int) -> None:
        await apply(recording.push_request(kind, index))

    await asyncio.sleep(options.settle)
    ours = Side(ours_process, ours_target, fire_ours, fleet, limits)
    stack.push_async_callback(ours.close)
    await ours.connect()
    await control.load(servers.floor_load_requests(ours.probe))
    floor = Side(floor_process, floor_target, fire_floor, fleet, limits)
    stack.push_async_callback(floor.close)
    await floor.connect()
    return Sides(ours, floor, recording, writes)


async def push_both(sides: Sides, kind: str, index: int, cluster: str, pause: float) -> None:
    """pilothouse's push ``index`` of ``kind``, then the floor's replay of it, ``pause``
    seconds after each; each push's figures as a progress line."""
    mark = time.monotonic()
    mine = await sides.ours.push(kind, index, cluster)
    sides.recording.record(kind, sides.ours.probe, mark)
    await asyncio.sleep(pause)
    base = await sides.floor.push(kind, index, cluster)
    await asyncio.sleep(pause)
    channel = sides.ours.fleet.streams_per_channel
    for side, run in (("pilothouse", mine), ("floor", base)):
        note(f"{kind} push {index} {side}: {run.describe(channel)}")


async def compare(
    options: Options, mesh: FanoutMesh, work: Path, stack: contextlib.AsyncExitStack
) -> tuple[Side, Side]:
    """Start both servers, connect a fleet to each, and alternate their timed pushes."""
    sides = await start_sides(options, mesh, work, stack)
    ours, floor = sides.ours, sides.floor
    pause = min(PAUSE, options.settle)  # between one side's push and the other's
    for kind in TRIGGERS:
        for index in range(options.runs):
            await push_both(sides, kind, index, mesh.cluster(0), pause)
    ours.figures.watch_latency = sides.writes.latencies()
    for side in (ours, floor):
        side.figures.connections = side.server.connections(int(side.target.rsplit(":", 1)[1]))
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
        "--settle",
        type=float,
        default=SETTLE,
        help="seconds to wait once the servers are up and once a fleet converged, and to "
        f"measure idle CPU over (and, up to {PAUSE} s, between pushes)",
    )
    options = parsed(parser, Options, argv)
    if options.workers < 1:
        parser.error("--workers must be at least 1")
    return options


def baseline(workers: int) -> str:
    """The baseline's description for ``serve --workers N``: the floor in as many
    processes (the same process count is the fair comparison)."""
    if workers == 1:
        return BASELINE
    return BASELINE.replace(
        "a bare grpc.aio ADS server",
        f"a bare grpc.aio ADS server in {workers} processes sharing the port with "
        f"SO_REUSEPORT (as serve --workers {workers})",
    )


PUSH_ROWS: tuple[Row, ...] = (
    medians("{side}_p50_ms", lambda run: run.p50, ms),
    medians("{side}_p99_ms", lambda run: run.p99, ms),
    medians("{side}_last_ack_ms", lambda run: run.last, ms),
    medians("{side}_spread_ms", lambda run: run.spread, ms),
    medians("{side}_server_cpu_ms_per_push", lambda run: run.cpu_seconds, ms),
    ("responses_per_push_{side}", responses),
)


def _median(runs: list[PushRun], figure: Callable[[PushRun], float]) -> float:
    return float(statistics.median(map(figure, runs)))


def _messages(run: PushRun) -> float:
    return float(sum(run.responses.values()))


def cpu_per_message(mine: list[PushRun], base: list[PushRun]) -> dict[str, Any]:
    """Server CPU per message the fleet received (medians of the runs), both sides, and
    pilothouse's as a multiple of the floor's (issue #17's figure)."""
    figures: dict[str, Any] = {}
    per_message: dict[str, float] = {}
    for side, runs in (("pilothouse", mine), ("floor", base)):
        messages = _median(runs, _messages)
        figures[f"{side}_messages_per_push"] = round(messages)
        if messages:
            per_message[side] = _median(runs, lambda r: r.cpu_seconds) / messages
            figures[f"{side}_server_cpu_us_per_message"] = round(1e6 * per_message[side], 1)
    ours, floor = per_message.get("pilothouse"), per_message.get("floor")
    if ours and floor:  # both above a clock tick: a ratio, not a division by nothing
        figures["cpu_per_message_times_floor"] = round(ours / floor, 2)
    return figures


def _protocol(shape: Options) -> str:
    protocol = "delta" if shape.delta else "SotW"
    return protocol if shape.workers == 1 else f"{protocol}, serve --workers {shape.workers}"


def push_group(
    kind: str, title: str, shape: Options, ours: ServerFigures, floor: ServerFigures
) -> dict[str, Any]:
    mine, base = ours.runs[kind], floor.runs[kind]
    debounce = shape.file_debounce + shape.debounce_after
    beyond_p99 = _median(mine, lambda r: r.p99) - debounce
    p99_ratio = ratio(_median(base, lambda r: r.p99), beyond_p99)
    group: dict[str, Any] = {
        "benchmark": f"push_fanout: {title} ({_protocol(shape)}, {shape.proxies} proxies)",
        "baseline": baseline(shape.workers),
        "services_per_proxy": shape.services,
        "runs": f"{len(mine)} (median of the runs' figures)",
        "debounce_ms": f"{ms(debounce)} (file {ms(shape.file_debounce)} + push "
        f"{ms(shape.debounce_after)})",
        **per_side(PUSH_ROWS, {"pilothouse": mine, "floor": base}),
        "pilothouse_p50_beyond_debounce_ms": ms(_median(mine, lambda r: r.p50) - debounce),
        "pilothouse_p99_beyond_debounce_ms": ms(beyond_p99),
    }
    latencies = ours.watch_latency.get(kind, [])
    if len(latencies) == len(mine):
        # The file watcher's actual share, read from pilothouse's log (millisecond stamps):
        # p99 minus that and the push debounce is what the push itself took.
        group["pilothouse_file_to_config_event_ms"] = ms(statistics.median(latencies))
        group["pilothouse_p99_beyond_measured_debounce_ms"] = ms(
            statistics.median(
                r.p99 - w - shape.debounce_after for r, w in zip(mine, latencies, strict=True)
            )
        )
    group |= {
        "spread_ratio_floor_to_pilothouse": ratio(
            _median(base, lambda r: r.spread), _median(mine, lambda r: r.spread)
        ),
        "cpu_ratio_floor_to_pilothouse": ratio(
            _median(base, lambda r: r.cpu_seconds), _median(mine, lambda r: r.cpu_seconds)
        ),
        **cpu_per_message(mine, base),
        "cpu_clock": worse(ours.cpu_clock, floor.cpu_clock),
        "ratio_to_baseline": p99_ratio,
        "ratio_definition": "floor p99 ÷ pilothouse p99 beyond debounce (1 = as fast as the floor)",
    }
    return group | judged("push_fanout", group, NOT_JUDGED)


def memory_group(shape: Options, ours: ServerFigures, floor: ServerFigures) -> dict[str, Any]:
    n = shape.proxies
    sides = {"pilothouse": ours, "floor": floor}
    rows: list[Row] = [
        ("{side}_rss_no_proxies_mib", lambda side: mib(side.rss_empty_kib)),
        (f"{{side}}_rss_{n}_proxies_mib", lambda side: mib(side.rss_connected_kib)),
        ("{side}_kib_per_connection", lambda side: round(side.per_connection(n), 1)),
    ]
    if ours.rss_double_kib is not None and floor.rss_double_kib is not None:
        rows += [
            (f"{{side}}_rss_{2 * n}_proxies_mib", lambda side: mib(side.rss_double_kib)),
            (f"{{side}}_kib_per_connection_{n}_to_{2 * n}", lambda side: round(side.slope(n), 1)),
        ]
    group = {
        "benchmark": f"push_fanout: server RSS per idle connection ({_protocol(shape)})",
        "baseline": baseline(shape.workers),
        **per_side(rows, sides),
        "ratio_to_baseline": ratio(floor.per_connection(n), ours.per_connection(n)),
        "ratio_definition": "floor KiB per connection ÷ pilothouse KiB per connection",
    }
    if n != THOUSAND:
        return group | {"target": NOT_JUDGED, "target_met": "—"}
    return group | judged("push_fanout", group, NOT_JUDGED)


def connect_group(shape: Options, ours: ServerFigures, floor: ServerFigures) -> dict[str, Any]:
    rows: tuple[Row, ...] = (
        ("{side}_seconds", lambda side: round(side.connect_seconds, 2)),
        ("{side}_connections_per_process", lambda side: " / ".join(map(str, side.connections))),
    )
    return {
        "benchmark": f"push_fanout: {shape.proxies} proxies connect and converge "
        f"({_protocol(shape)})",
        "baseline": baseline(shape.workers),
        **{k: v or None for k, v in per_side(rows, {"pilothouse": ours, "floor": floor}).items()},
        "ratio_to_baseline": ratio(floor.connect_seconds, ours.connect_seconds),
        "ratio_definition": "floor seconds ÷ pilothouse seconds",
    }


def spread_group(shape: Options, ours: ServerFigures, floor: ServerFigures) -> dict[str, Any]:
    """The fan-out spread of both pushes, and the EDS spread's target."""
    group: dict[str, Any] = {
        "benchmark": f"push_fanout: fan-out spread, last − first proxy ({_protocol(shape)}, "
        f"{shape.proxies} proxies)",
        "baseline": baseline(shape.workers),
        "headline": "pilothouse_eds_spread_ms",
    }
    for kind in ("eds", "cds"):
        mine = _median(ours.runs[kind], lambda r: r.spread)
        base = _median(floor.runs[kind], lambda r: r.spread)
        group |= {f"pilothouse_{kind}_spread_ms": ms(mine), f"floor_{kind}_spread_ms": ms(base)}
        group[f"{kind}_spread_ratio_floor_to_pilothouse"] = ratio(base, mine)
    group |= {
        "ratio_to_baseline": group["eds_spread_ratio_floor_to_pilothouse"],
        "ratio_definition": f"EDS: floor spread ÷ pilothouse spread {SPREAD_DEFINITION}",
    }
    return group | judged("push_fanout", group, NOT_JUDGED)


def figure_groups(shape: Options, ours: ServerFigures, floor: ServerFigures) -> list[Any]:
    return [
        push_group("eds", "EDS change to every proxy", shape, ours, floor),
        push_group("cds", "CDS change to every proxy", shape, ours, floor),
        spread_group(shape, ours, floor),
        memory_group(shape, ours, floor),
        connect_group(shape, ours, floor),
    ]


async def run(options: Options) -> None:
    with tempfile.TemporaryDirectory(prefix="push-fanout-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        async with contextlib.AsyncExitStack() as stack:
            ours, floor = await compare(options, mesh, work, stack)
    emit(figure_groups(options, ours.figures, floor.figures))


if __name__ == "__main__":
    asyncio.run(run(parse_options()))
