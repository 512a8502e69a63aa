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

The figure is the slope between 1,000 and 2,000 proxies (KiB per added proxy; from half
the largest ``--steps`` to the largest):
start-up and first-push costs are paid by then, so what is left is the cost of one
more connection. The ratio is floor KiB per proxy ÷ pilothouse KiB per proxy
(1 = as lean as the floor). No target is judged here: issue #17's "≤ 80 KiB per
connection" is ``push_fanout``'s, measured beside the floor in the same run. One JSON
object is printed, with the whole ``curve``. The run is bounded by ``--budget``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import servers
from bench.harness.figures import Row, emit, mib, note, per_side, ratio
from bench.harness.fleet import start_converged
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed
from bench.harness.process import ServerProcess
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities

STEPS = (0, 500, 1000, 1500, 2000)
NOT_JUDGED = "none here (issue #17's ≤ 80 KiB per connection is push_fanout's)"
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
    settle: float


@dataclass(frozen=True)
class Point:
    """Both servers' RSS with ``proxies`` connected and converged."""

    proxies: int
    pilothouse_kib: int
    floor_kib: int


async def grow(
    server: ServerProcess, fleets: list[ProxyFleet], target: str, proxies: int, options: Options
) -> int:
    """Connect one more fleet until ``proxies`` are connected, wait for it, settle; the
    server's VmRSS in KiB."""
    connected = sum(len(fleet.identities) for fleet in fleets)
    if proxies > connected:
        names = FanoutMesh(Path(), 1, options.namespaces, 1).namespace_names
        identities = fleet_identities(proxies - connected, namespaces=names, start=connected)
        fleets.append(
            ProxyFleet(target, identities, streams_per_channel=options.streams_per_channel)
        )
        await start_converged(fleets[-1], options.timeout, server.name)
    await asyncio.sleep(options.settle)
    return server.rss_kib()


async def measure(options: Options, mesh: FanoutMesh, work: Path) -> list[Point]:
    """Grow both servers' fleets step by step, in turns; their RSS at every step (the floor
    loaded, once pilothouse has served someone, with what pilothouse served)."""
    rss: dict[str, dict[int, int]] = {"pilothouse": {}, "floor": {}}
    fleets: dict[str, list[ProxyFleet]] = {"pilothouse": [], "floor": []}
    async with contextlib.AsyncExitStack() as stack:
        ours, ours_target = await servers.serving_pilothouse(stack, mesh.root, work / "ours.log")
        floor, floor_target, control = await servers.serving_floor(stack, work / "floor.log")

        async def close_fleets() -> None:
            for fleet in (fleet for side in fleets.values() for fleet in side):
                await fleet.close()

        stack.push_async_callback(close_fleets)
        for step in options.steps:
            rss["pilothouse"][step] = await grow(
                ours, fleets["pilothouse"], ours_target, step, options
            )
            note(f"pilothouse, {step} proxies: {mib(rss['pilothouse'][step])} MiB")
            if not fleets["pilothouse"]:
                continue  # the floor has nothing to serve until pilothouse has served someone
            if not rss["floor"]:
                await control.load(servers.floor_load_requests(fleets["pilothouse"][0].proxies[0]))
            for behind in (behind for behind in options.steps if behind <= step):
                if behind not in rss["floor"]:
                    rss["floor"][behind] = await grow(
                        floor, fleets["floor"], floor_target, behind, options
                    )
                    note(f"floor, {behind} proxies: {mib(rss['floor'][behind])} MiB")
    return [Point(step, rss["pilothouse"][step], rss["floor"][step]) for step in options.steps]


def slope_kib(points: Sequence[Point], low: int, high: int, pick: str) -> float:
    """KiB per added proxy between ``low`` and ``high`` proxies, of ``pick``'s RSS."""
    by_count = {point.proxies: point for point in points}
    rise = getattr(by_count[high], f"{pick}_kib") - getattr(by_count[low], f"{pick}_kib")
    return float(rise) / (high - low)


def _slope_row(points: Sequence[Point], low: int, high: int) -> Row:
    key = f"{{side}}_kib_per_proxy_{low}_to_{high}"
    return key, lambda side: round(slope_kib(points, low, high, side), 1)


def report(points: Sequence[Point], services: int) -> dict[str, Any]:
    """The JSON object ``run_all.py`` records."""
    high = points[-1].proxies  # the slope: from half the largest step to the largest
    low = high // 2
    ours = slope_kib(points, low, high, "pilothouse")
    first, span = points[0].proxies, f"{low}_to_{high}"
    sides = {"pilothouse": "pilothouse", "floor": "floor"}
    rows = (_slope_row(points, low, high), _slope_row(points, first, low))
    return {
        "benchmark": "memory_slope: server RSS per connected proxy (SotW sidecars)",
        "baseline": BASELINE,
        "headline": f"pilothouse_kib_per_proxy_{span}",
        "services_per_proxy": services,
        "proxies": ", ".join(str(point.proxies) for point in points),
        **per_side(rows, sides),
        "ratio_to_baseline": ratio(slope_kib(points, low, high, "floor"), ours)
        if ours > 0
        else None,
        "ratio_definition": (
            f"floor KiB per proxy ÷ pilothouse KiB per proxy, {low} to {high} "
            "proxies (1 = as lean as the floor)"
        ),
        "target": NOT_JUDGED,
        "target_met": "—",
        "curve": [
            {"proxies": point.proxies}
            | per_side(
                (("{side}_rss_mib", mib),),
                {"pilothouse": point.pilothouse_kib, "floor": point.floor_kib},
            )
            for point in points
        ],
    }


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument(
        "--steps",
        type=lambda text: tuple(sorted({int(step) for step in text.split(",")})),
        default=STEPS,
        help="proxy counts, comma-separated; the slope is read from half the largest to the"
        " largest, which must both be given (default: 1,000 to 2,000)",
    )
    parser.add_argument("--timeout", type=float, default=90.0, help="per wait, seconds")
    parser.add_argument("--budget", type=float, default=360.0, help="whole run, seconds")
    parser.add_argument(
        "--settle", type=float, default=SETTLE, help="wait after each step, seconds"
    )
    options = parsed(parser, Options, argv)
    if max(options.steps) // 2 not in options.steps:
        parser.error(f"--steps must include {max(options.steps) // 2}, half the largest step")
    return options


async def run(options: Options) -> None:
    with tempfile.TemporaryDirectory(prefix="memory-slope-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        async with asyncio.timeout(options.budget):
            points = await measure(options, mesh, work)
    emit([report(points, options.services)])


if __name__ == "__main__":
    asyncio.run(run(parse_options()))
