"""Benchmark: a steady stream of endpoint changes to a connected fleet, against the transport floor.

N simulated SotW sidecars (default 1,000, and 250 and 500 for the scaling
curve) are connected to ``pilothouse serve`` on the push fan-out mesh
(``harness/mesh.py``: 100 ServiceEntries with WorkloadEntries, all visible to
every proxy). Then, for ``--duration`` seconds, ``--rate`` events a second
each move one WorkloadEntry to a new address by rewriting its file, services
in turn (``churn_events.py``). For every event the time from its own file
write until every proxy has ACKed a ClusterLoadAssignment holding the new
address (or a later one of the same endpoint) is recorded, however many
events one push carried (``churn_ledger.py``); p50/p90/p99 over events (the
slowest proxy of each) and over every (event, proxy) are reported, with EDS
responses and bytes a second received by the fleet, errors, and the server's
CPU. pilothouse is given ``PILOTHOUSE_FILE_DEBOUNCE``,
``PILOTHOUSE_DEBOUNCE_AFTER`` and ``PILOTHOUSE_DEBOUNCE_MAX``: at 50 events a
second there is never 100 ms of quiet, so without a short ``DEBOUNCE_MAX``
(istiod's default is 10 s) every batch would wait 10 s. Figures beyond
debounce subtract the file debounce and that push window.

The baseline, in the same run, is the transport floor (``harness/floor.py``)
with its own fleet of N, making the same kind of events at the same rate and
pushing the same ClusterLoadAssignment bytes (pilothouse's, with the address
replaced), batched by pilothouse's debounce rules (``churn_floor.py``). For
each fleet size pilothouse's run comes first, then the floor's. Target: event
p99 ≤ 1 s.

With ``--workers N`` (N > 1) a third side runs after those two at each size:
``serve --workers N`` on a copy of the mesh of its own (so the single-process server
sees none of its events), the same fleet size and the same churn; its figures are the
``pilothouse_workers_N_*`` fields (CPU: every worker's). The kernel spreads the fleet's
channels over the workers (SO_REUSEPORT), not always evenly.

Run: ``.venv/bin/python bench/endpoint_churn.py`` (``--sizes 250,500,1000
--rate 50 --duration 20``); one JSON line per fleet size on stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.churn_events import ChurnEvent, ChurnSchedule, write_event
from bench.churn_floor import FloorBatcher, FloorPusher, Template, completions_from_release
from bench.churn_ledger import ChurnLedger
from bench.churn_report import ChurnShape, ChurnSize, figure_groups
from bench.churn_runs import ChurnPlan, ChurnRun, churn
from bench.churn_watchlog import config_updates, watch_latencies
from bench.harness.figures import emit, note
from bench.harness.fleet import connect, start_converged
from bench.harness.mesh import FanoutMesh, endpoint_address
from bench.harness.options import fleet_parser, parsed, sizes
from bench.harness.process import ServerProcess
from bench.harness.rounds import QUANTILES, alternate, percentiles
from bench.harness.servers import (
    FloorControl,
    floor_load_requests,
    floor_target,
    idle_cpu_rate,
    pilothouse_target,
    raise_open_file_limit,
    start_floor,
    start_pilothouse,
)
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.protocol.type_urls import EDS

SETTLE = 1.0
IDLE_SAMPLE = 1.0


@dataclass(frozen=True)
class Options:
    sizes: tuple[int, ...]
    runs: int
    rate: float
    duration: float
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    file_debounce: float
    debounce_after: float
    debounce_max: float
    connect_timeout: float
    timeout: float
    gate: float
    target: float
    workers: int = 1


def _nothing(event: ChurnEvent) -> None:
    """The floor's events are not written anywhere: the batcher gets them."""


def _three(values: tuple[float, ...]) -> tuple[float, float, float]:
    first, second, third = values
    return first, second, third


class Churns:
    """Both servers, their fleets in turn, and every run's figures."""

    def __init__(
        self,
        options: Options,
        shape: ChurnShape,
        mesh: FanoutMesh,
        ours: ServerProcess,
        ours_target: str,
        floor: ServerProcess,
        control: FloorControl,
        floor_address: str,
    ) -> None:
        """``ours``/``ours_target``: the single-process server, on ``mesh``."""
        self.options = options
        self.shape = shape
        self.mesh = mesh
        self.ours = ours
        self.ours_target = ours_target
        self.floor = floor
        self.control = control
        self.floor_address = floor_address
        self.schedule = ChurnSchedule(mesh.services)
        self.plan = ChurnPlan(options.rate, options.duration, options.timeout)
        self.service_of = {mesh.cluster(s): s for s in range(mesh.services)}
        self.templates: dict[int, Template] = {}
        self.runs: dict[tuple[str, int], list[ChurnRun]] = {}

    async def _connect(
        self, target: str, proxies: int, stack: contextlib.AsyncExitStack
    ) -> ProxyFleet:
        fleet = connect(
            target,
            proxies,
            self.mesh.namespace_names,
            streams_per_channel=self.options.streams_per_channel,
        )
        stack.push_async_callback(fleet.close)
        await start_converged(fleet, self.options.connect_timeout, target)
        await asyncio.sleep(SETTLE)
        return fleet

    async def _record_floor(self, fleet: ProxyFleet) -> None:
        """Load the floor with what pilothouse served before any event, and keep each
        service's load assignment as the template of the floor's pushes."""
        probe = fleet.proxies[0]
        held = probe.holds(EDS)
        for service in range(self.mesh.services):
            name = self.mesh.cluster(service)
            self.templates[service] = Template(
                name, held[name].body, endpoint_address(service, 0, 0)
            )
        await self.control.load(floor_load_requests(probe))

    def _ledger(self, fleet: ProxyFleet) -> ChurnLedger:
        return ChurnLedger(len(fleet.proxies), self.mesh.services)

    async def pilothouse(self, proxies: int) -> ChurnRun:
        return await self.pilothouse_on(self.ours, self.ours_target, self.mesh, proxies)

    async def pilothouse_on(
        self,
        server: ServerProcess,
        target: str,
        mesh: FanoutMesh,
        proxies: int,
        side: str = "pilothouse",
    ) -> ChurnRun:
        """One churn run of a pilothouse server serving ``mesh`` (where events are written)."""
        async with contextlib.AsyncExitStack() as stack:
            fleet = await self._connect(target, proxies, stack)
            if not self.templates:
                await self._record_floor(fleet)
            idle = await idle_cpu_rate(server, IDLE_SAMPLE)
            offset = len(server.output())

            def write(event: ChurnEvent) -> None:
                write_event(mesh, event)

            ledger = self._ledger(fleet)
            run, events = await churn(
                fleet,
                server,
                self.plan,
                self.schedule,
                write,
                ledger,
                self.service_of,
                idle_cpu_rate=idle,
            )
        watch = watch_latencies(events, config_updates(server.output(), offset))
        window = self.shape.push_window
        beyond = [
            completion - seen - window
            for completion, seen in zip(ledger.completions(), watch, strict=True)
            if completion is not None and seen is not None
        ]
        run = replace(
            run,
            watch=tuple(seen for seen in watch if seen is not None),
            beyond_measured=_three(percentiles(beyond, QUANTILES)) if beyond else None,
        )
        return self._keep(side, run)

    async def floor_run(self, proxies: int) -> ChurnRun:
        async with contextlib.AsyncExitStack() as stack:
            fleet = await self._connect(self.floor_address, proxies, stack)
            idle = await idle_cpu_rate(self.floor, IDLE_SAMPLE)
            ledger = self._ledger(fleet)
            batcher = FloorBatcher(self.options.debounce_after, self.options.debounce_max)
            pusher = FloorPusher(
                batcher, ledger, self.templates, self.control.apply, self.options.gate
            )
            pushing = asyncio.get_running_loop().create_task(pusher.run())

            async def stop_pushing() -> None:
                pusher.finish()
                pushing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pushing

            stack.push_async_callback(stop_pushing)
            run, _ = await churn(
                fleet,
                self.floor,
                self.plan,
                self.schedule,
                _nothing,
                ledger,
                self.service_of,
                idle_cpu_rate=idle,
                deliver=batcher.add,
                events_done=pusher.finish,
            )
            if pushing.done():
                pushing.result()
        from_release = completions_from_release(ledger, pusher.released)
        run = replace(
            run,
            floor_pushes=pusher.pushes,
            floor_gate_timeouts=pusher.gate_timeouts,
            from_release=_three(percentiles(from_release, QUANTILES)) if from_release else None,
        )
        return self._keep("floor", run)

    def _keep(self, side: str, run: ChurnRun) -> ChurnRun:
        self.runs.setdefault((side, run.proxies), []).append(run)
        note(
            f"{side} {run.proxies}: {run.events} events at {run.rate:.1f}/s, event p50 "
            f"{run.completion[0] * 1000:.0f} ms p99 {run.completion[2] * 1000:.0f} ms, missed "
            f"{run.missed}, {run.responses_per_second:.0f} EDS responses/s, cpu "
            f"{run.cpu_cores:.2f} cores"
        )
        return run

    async def workers_run(self, work: Path, proxies: int) -> ChurnRun:
        """The same churn against ``serve --workers N``, started for this run on a copy
        of the mesh of its own, and stopped after it."""
        options = self.options
        mesh = FanoutMesh(
            work / f"mesh-workers-{proxies}",
            options.services,
            options.namespaces,
            options.endpoints,
        )
        mesh.write()
        server = start_pilothouse(
            mesh.root,
            work / f"pilothouse-workers-{proxies}.log",
            env=pilothouse_environment(options),
            workers=options.workers,
        )
        try:
            target = await pilothouse_target(server, options.workers)
            return await self.pilothouse_on(server, target, mesh, proxies, WORKERS_SIDE)
        finally:
            server.stop()

    def sizes(self) -> list[ChurnSize]:
        return [
            ChurnSize(
                tuple(self.runs[("pilothouse", n)]),
                tuple(self.runs[("floor", n)]),
                tuple(self.runs.get((WORKERS_SIDE, n), ())),
                self.options.workers,
            )
            for n in self.options.sizes
        ]


WORKERS_SIDE = "pilothouse_workers"


def pilothouse_environment(options: Options) -> dict[str, str]:
    return {
        "PILOTHOUSE_FILE_DEBOUNCE": str(options.file_debounce),
        "PILOTHOUSE_DEBOUNCE_AFTER": str(options.debounce_after),
        "PILOTHOUSE_DEBOUNCE_MAX": str(options.debounce_max),
    }


async def run(options: Options) -> None:
    began = time.monotonic()
    shape = ChurnShape(
        services=options.services,
        rate=options.rate,
        duration=options.duration,
        file_debounce=options.file_debounce,
        debounce_after=options.debounce_after,
        debounce_max=options.debounce_max,
        streams_per_channel=options.streams_per_channel,
        target_p99=options.target,
    )
    note(f"open file limit {raise_open_file_limit()}")
    with tempfile.TemporaryDirectory(prefix="endpoint-churn-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        async with contextlib.AsyncExitStack() as stack:
            ours = start_pilothouse(
                mesh.root, work / "pilothouse.log", env=pilothouse_environment(options)
            )
            stack.callback(ours.stop)
            floor = start_floor(work / "floor.log")
            stack.callback(floor.stop)
            ours_target = await pilothouse_target(ours)
            floor_address = await floor_target(floor)
            control = FloorControl(floor_address)
            stack.push_async_callback(control.close)
            churns = Churns(options, shape, mesh, ours, ours_target, floor, control, floor_address)
            sides: dict[str, Callable[[int], Awaitable[ChurnRun]]] = {}
            for n in options.sizes:
                sides[f"pilothouse {n}"] = lambda _, n=n: churns.pilothouse(n)
                sides[f"floor {n}"] = lambda _, n=n: churns.floor_run(n)
                if options.workers > 1:
                    sides[f"workers {n}"] = lambda _, n=n: churns.workers_run(work, n)
            await alternate(options.runs, sides)
    emit(figure_groups(shape, churns.sizes()))
    note(f"done in {time.monotonic() - began:.0f}s")


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument(
        "--sizes", type=sizes, default=(250, 500, 1000), help="fleet sizes, comma-separated"
    )
    parser.add_argument("--runs", type=int, default=1, help="churn runs per server and size")
    parser.add_argument("--rate", type=float, default=50.0, help="events per second")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of events")
    parser.add_argument("--file-debounce", type=float, default=0.05)
    parser.add_argument("--debounce-after", type=float, default=0.1)
    parser.add_argument(
        "--debounce-max",
        type=float,
        default=0.1,
        help="PILOTHOUSE_DEBOUNCE_MAX: under steady churn, how long a batch waits",
    )
    parser.add_argument("--connect-timeout", type=float, default=90.0)
    parser.add_argument(
        "--timeout", type=float, default=45.0, help="wait after the last event, seconds"
    )
    parser.add_argument(
        "--gate",
        type=float,
        default=5.0,
        help="floor: longest a batch waits for the previous one to reach every proxy",
    )
    parser.add_argument("--target", type=float, default=1.0, help="target event p99, seconds")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="also churn `serve --workers N` (N > 1) at each size, after the other two",
    )
    options = parsed(parser, Options, argv)
    if options.runs < 1 or options.rate <= 0 or options.duration <= 0 or options.workers < 1:
        parser.error("--runs, --rate, --duration and --workers must be positive")
    return options


def main() -> None:
    asyncio.run(run(parse_options()))


if __name__ == "__main__":
    main()
