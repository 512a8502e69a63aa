"""Benchmark: resident memory per connected proxy, as the fleet grows from 0 to 2,000.

``pilothouse serve`` runs in its own process on the push fan-out mesh
(``harness/mesh.py``: 100 ServiceEntries with DestinationRules and WorkloadEntries
in 10 namespaces, every service visible to every proxy). Simulated SotW sidecars
join it 500 at a time until 2,000 are connected; after each step, once every
proxy has converged and the server has had a moment to settle, the server's
VmRSS is read from /proc.

The baseline, in the same run, is the transport floor (``harness/floor.py``, a
bare grpc.aio ADS server in its own process) handed the very resource bytes
pilothouse served, and grown the same way; the two servers take turns at every
step so that both see the same machine.

The figure is the slope between 1,000 and 2,000 proxies (KiB per added proxy):
start-up and first-push costs are paid by then, so what is left is the cost of one
more connection. The ratio is floor KiB per proxy ÷ pilothouse KiB per proxy
(1 = as lean as the floor); the target is at most 100 KiB per proxy. One JSON
object is printed, with the whole ``curve``. The run is bounded by ``--budget``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import servers
from bench.harness.figures import emit, note
from bench.harness.fleet import start_converged
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed
from bench.harness.process import ServerProcess
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy

STEPS = (0, 500, 1000, 1500, 2000)
SLOPE_FROM = 1000
SLOPE_TO = 2000
KIB_TARGET = 100.0
SETTLE = 2.0
BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server holding the "
    "same number of streams with the same resource bytes"
)


@dataclass(frozen=True)
class Options:
    steps: tuple[int, ...]
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    timeout: float
    budget: float


@dataclass(frozen=True)
class Point:
    """Both servers' RSS with ``proxies`` connected and converged."""

    proxies: int
    pilothouse_kib: int
    floor_kib: int


@dataclass
class GrowingSide:
    """A server and the fleets connected to it so far (each step adds one fleet)."""

    server: ServerProcess
    target: str
    streams_per_channel: int
    namespaces: tuple[str, ...]
    timeout: float
    fleets: list[ProxyFleet] = field(default_factory=list)

    @property
    def connected(self) -> int:
        return sum(len(fleet.identities) for fleet in self.fleets)

    @property
    def probe(self) -> SimulatedProxy:
        return self.fleets[0].proxies[0]

    async def grow_to(self, proxies: int) -> int:
        """Connect more proxies until ``proxies`` are, wait for them, settle; VmRSS in KiB."""
        more = proxies - self.connected
        if more > 0:
            identities = fleet_identities(more, namespaces=self.namespaces, start=self.connected)
            fleet = ProxyFleet(
                self.target, identities, streams_per_channel=self.streams_per_channel
            )
            self.fleets.append(fleet)
            await start_converged(fleet, self.timeout, self.server.name)
        await asyncio.sleep(SETTLE)
        return self.server.rss_kib()

    async def close(self) -> None:
        for fleet in self.fleets:
            await fleet.close()


async def measure(
    options: Options, mesh: FanoutMesh, work: Path, stack: contextlib.AsyncExitStack
) -> list[Point]:
    """Grow both servers' fleets step by step, in turns; their RSS at every step."""
    ours_process = servers.start_pilothouse(mesh.root, work / "pilothouse.log")
    stack.callback(ours_process.stop)
    floor_process = servers.start_floor(work / "floor.log")
    stack.callback(floor_process.stop)
    ours_target = await servers.pilothouse_target(ours_process)
    floor_target = await servers.floor_target(floor_process)

    def side(server: ServerProcess, target: str) -> GrowingSide:
        return GrowingSide(
            server, target, options.streams_per_channel, mesh.namespace_names, options.timeout
        )

    ours = side(ours_process, ours_target)
    stack.push_async_callback(ours.close)
    floor = side(floor_process, floor_target)
    stack.push_async_callback(floor.close)
    control = servers.FloorControl(floor_target)
    stack.push_async_callback(control.close)

    ours_rss: dict[int, int] = {}
    floor_rss: dict[int, int] = {}
    for step in options.steps:
        ours_rss[step] = await ours.grow_to(step)
        note(f"pilothouse, {step} proxies: {ours_rss[step] / 1024:.1f} MiB")
        if not ours.connected:
            continue  # the floor has nothing to serve until pilothouse has served someone
        if not floor_rss:
            await control.load(servers.floor_load_requests(ours.probe))
        for behind in options.steps:
            if behind <= step and behind not in floor_rss:
                floor_rss[behind] = await floor.grow_to(behind)
                note(f"floor, {behind} proxies: {floor_rss[behind] / 1024:.1f} MiB")
    return [Point(step, ours_rss[step], floor_rss[step]) for step in options.steps]


def slope_kib(points: Sequence[Point], low: int, high: int, pick: str) -> float:
    """KiB per added proxy between ``low`` and ``high`` proxies, of ``pick``'s RSS."""
    by_count = {point.proxies: point for point in points}
    start, end = by_count[low], by_count[high]
    rise = getattr(end, f"{pick}_kib") - getattr(start, f"{pick}_kib")
    return float(rise) / (high - low)


def report(points: Sequence[Point], services: int) -> dict[str, Any]:
    """The JSON object ``run_all.py`` records."""
    ours = slope_kib(points, SLOPE_FROM, SLOPE_TO, "pilothouse")
    base = slope_kib(points, SLOPE_FROM, SLOPE_TO, "floor")
    first = points[0].proxies
    ratio = round(base / ours, 2) if ours > 0 else None
    missed = f"no (missed by {ours - KIB_TARGET:.1f} KiB per proxy)"
    met = "yes" if ours <= KIB_TARGET else missed
    span = f"{SLOPE_FROM}_to_{SLOPE_TO}"
    return {
        "benchmark": "memory_slope: server RSS per connected proxy (SotW sidecars)",
        "baseline": BASELINE,
        "headline": f"pilothouse_kib_per_proxy_{span}",
        "services_per_proxy": services,
        "proxies": ", ".join(str(point.proxies) for point in points),
        f"pilothouse_kib_per_proxy_{span}": round(ours, 1),
        f"floor_kib_per_proxy_{span}": round(base, 1),
        f"pilothouse_kib_per_proxy_{first}_to_{SLOPE_FROM}": round(
            slope_kib(points, first, SLOPE_FROM, "pilothouse"), 1
        ),
        f"floor_kib_per_proxy_{first}_to_{SLOPE_FROM}": round(
            slope_kib(points, first, SLOPE_FROM, "floor"), 1
        ),
        "ratio_to_baseline": ratio,
        "ratio_definition": (
            f"floor KiB per proxy ÷ pilothouse KiB per proxy, {SLOPE_FROM} to {SLOPE_TO} "
            "proxies (1 = as lean as the floor)"
        ),
        "target": f"≤ {KIB_TARGET:.0f} KiB per proxy ({SLOPE_FROM} to {SLOPE_TO} proxies)",
        "target_met": met,
        "curve": [
            {
                "proxies": point.proxies,
                "pilothouse_rss_mib": round(point.pilothouse_kib / 1024, 1),
                "floor_rss_mib": round(point.floor_kib / 1024, 1),
            }
            for point in points
        ],
    }


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument(
        "--steps",
        type=lambda text: tuple(sorted({int(step) for step in text.split(",")})),
        default=STEPS,
        help=f"proxy counts, comma-separated; must include {SLOPE_FROM} and {SLOPE_TO}",
    )
    parser.add_argument("--timeout", type=float, default=90.0, help="per wait, seconds")
    parser.add_argument("--budget", type=float, default=360.0, help="whole run, seconds")
    options = parsed(parser, Options, argv)
    if SLOPE_FROM not in options.steps or SLOPE_TO not in options.steps:
        parser.error(f"--steps must include {SLOPE_FROM} and {SLOPE_TO}")
    return options


async def run(options: Options) -> None:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memory-slope-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        async with contextlib.AsyncExitStack() as stack, asyncio.timeout(options.budget):
            points = await measure(options, mesh, work, stack)
    emit([report(points, options.services)])
    note(f"done in {time.monotonic() - began:.0f}s")


def main() -> None:
    asyncio.run(run(parse_options()))


if __name__ == "__main__":
    main()
