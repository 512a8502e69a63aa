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
medians of the runs are reported, one JSON line per fleet size, the largest with
the scaling curve. Ratio = floor seconds ÷ pilothouse seconds. Issue #17's target, on
the 1,000-proxy row (``harness/targets.py``): the server's CPU at most 1.5 ms per
connection, every proxy converged. (The storm's time is judged by ``admission_storm``,
at the admission defaults.)

Run: ``.venv/bin/python bench/connect_storm.py`` (``--sizes 500,1000,2000 --runs 3``).
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
from bench.harness.figures import Row, emit, mib, note, per_side, ratio, s
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed, sizes
from bench.harness.rounds import alternate
from bench.harness.storm import SETTLE, STORM_ROWS, StormRun, median_of, median_seconds, storm_on
from bench.harness.targets import judged

SIDES = ("pilothouse", "floor")
NOT_JUDGED = "none here (issue #17 judges the connect CPU of 1,000 proxies)"
BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server serving the "
    "same pre-encoded resource bytes to the same N SotW streams, started the same way"
)
Held = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Options:
    sizes: tuple[int, ...]
    runs: int
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    timeout: float
    settle: float = SETTLE


class Storms:
    """Storms against freshly started servers; the floor serves what pilothouse served."""

    def __init__(self, options: Options, mesh: FanoutMesh, work: Path) -> None:
        self.options, self.mesh, self.work = options, mesh, work
        self.floor_load: list[Any] = []
        self.reference: Held = ()
        """What each proxy held after the first pilothouse storm."""
        self._count = 0

    async def run(self, side: str, proxies: int) -> StormRun:
        self._count += 1
        log = self.work / f"{side}-{self._count}.log"
        async with contextlib.AsyncExitStack() as stack:
            if side == "pilothouse":
                server, target = await servers.serving_pilothouse(stack, self.mesh.root, log)
            elif not self.floor_load:
                raise RuntimeError("the floor has nothing to serve: run pilothouse first")
            else:
                server, target, control = await servers.serving_floor(stack, log)
                await control.load(self.floor_load)
            run, fleet = await storm_on(
                stack, server, target, proxies, self.mesh.namespace_names,
                streams_per_channel=self.options.streams_per_channel, timeout=self.options.timeout,
                settle=self.options.settle,
            )  # fmt: skip
            if side == "pilothouse" and not self.floor_load and fleet.proxies[0].settled():
                self.floor_load = servers.floor_load_requests(fleet.proxies[0])
                self.reference = run.held
        note(
            f"{side} {proxies}: {run.seconds:.2f}s p99 {run.percentile(99):.2f}s unconverged "
            f"{run.unconverged} failures {run.stream_failures} peak {mib(run.peak_rss_kib)} MiB "
            f"cpu {run.cpu_seconds:.1f}s held {run.held} odd {run.odd_proxies}"
        )
        return run


def _other(runs: Sequence[StormRun], reference: Held) -> int:
    """Runs whose proxies mostly hold other resource counts than ``reference``."""
    return sum(1 for run in runs if run.held != reference)


def errors(runs: Sequence[StormRun], reference: Held) -> str:
    unconverged = max(run.unconverged for run in runs)
    text = (
        f"unconverged {unconverged} (worst run), stream failures "
        f"{sum(r.stream_failures for r in runs)}, NACKs {sum(r.nacks for r in runs)} (all runs)"
    )
    other, odd = _other(runs, reference), max(run.odd_proxies for run in runs)
    if other or odd:
        text += (
            f"; runs whose proxies hold other resource counts than the first storm: {other}, "
            f"proxies holding other counts than the rest of their run: {odd}"
        )
    examples = list(dict.fromkeys(e for run in runs for e in run.error_examples))[:3]
    return text + ("; e.g. " + " | ".join(examples) if examples else "")


def converged(runs: Sequence[StormRun], reference: Held | None = None) -> str:
    """``yes``, or ``no`` saying which storm did not end with every proxy holding what
    the first storm's proxies held."""
    unconverged = max(run.unconverged for run in runs)
    if unconverged:
        return f"no: {unconverged} proxies never converged"
    if reference is not None and _other(runs, reference):
        return "no: a storm ended with proxies holding other resources than the first"
    return "yes"


def size_rows(reference: Held, proxies: int) -> tuple[Row, ...]:
    """``STORM_ROWS`` and what the connect storm adds to them."""
    return (
        *STORM_ROWS,
        ("{side}_per_proxy_p90_s", lambda runs: s(median_of(runs, lambda r: r.percentile(90)))),
        ("{side}_errors", lambda runs: errors(runs, reference)),
        ("{side}_unconverged_worst_run", lambda runs: max(run.unconverged for run in runs)),
        (
            "{side}_server_cpu_ms_per_proxy",
            lambda runs: round(1000 * median_of(runs, lambda r: r.cpu_seconds) / proxies, 2),
        ),
        (
            "load_generator_cpu_cores_{side}_storm",
            lambda runs: round(
                median_of(runs, lambda r: r.load_generator_cpu_seconds) / median_seconds(runs), 2
            ),
        ),
    )


def size_group(options: Options, reference: Held, runs: dict[str, list[StormRun]]) -> Any:
    ours, floor = runs["pilothouse"], runs["floor"]
    n = ours[0].proxies
    group = {
        "benchmark": f"connect_storm: {n} SotW sidecars connect at once and converge",
        "baseline": BASELINE,
        "services_per_proxy": f"{options.services} (CDS, EDS, LDS, RDS each)",
        "runs": f"{len(ours)} per server, alternating, each against a freshly started "
        "server (medians of the runs)",
        "streams_per_connection": options.streams_per_channel,
        "converged_definition": "every type ACKed and every name asked for held",
        "resources_per_proxy": ", ".join(f"{name} {count}" for name, count in reference),
        **per_side(size_rows(reference, n), runs),
        "ratio_to_baseline": ratio(median_seconds(floor), median_seconds(ours)),
        "headline": "pilothouse_server_cpu_ms_per_proxy",
        "ratio_definition": "floor seconds ÷ pilothouse seconds (1 = as fast as the floor)",
        "pilothouse_all_converged": converged(ours, reference),
    }
    return group | judged("connect_storm", group, NOT_JUDGED)


def figure_groups(
    options: Options, reference: Held, sizes: Sequence[dict[str, list[StormRun]]]
) -> list[dict[str, Any]]:
    """One group per size, smallest first; the largest also carries the scaling curve."""
    ordered = sorted(sizes, key=lambda size: size["pilothouse"][0].proxies)
    groups = [size_group(options, reference, size) for size in ordered]
    curve = {"pilothouse_s": "pilothouse_s", "floor_s": "floor_s", "ratio": "ratio_to_baseline"}
    curve |= {f"{side}_p99_s": f"{side}_per_proxy_p99_s" for side in SIDES}
    curve |= {"pilothouse_peak_rss_mib": "pilothouse_server_peak_rss_mib"}
    curve |= {"pilothouse_cpu_s": "pilothouse_server_cpu_s"}
    if groups:
        groups[-1]["curve"] = [
            {"proxies": size["pilothouse"][0].proxies} | {k: g[v] for k, v in curve.items()}
            for g, size in zip(groups, ordered, strict=True)
        ]
    return groups


async def run(options: Options) -> None:
    note(f"open file limit {servers.raise_open_file_limit()}")
    with tempfile.TemporaryDirectory(prefix="connect-storm-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        storms = Storms(options, mesh, work)
        sides = {
            f"{side} {n}": (lambda _, side=side, n=n: storms.run(side, n))
            for n in options.sizes
            for side in SIDES
        }
        runs = await alternate(options.runs, sides)
    by_size = [{side: runs[f"{side} {n}"] for side in SIDES} for n in options.sizes]
    emit(figure_groups(options, storms.reference, by_size))


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument(
        "--sizes", type=sizes, default=(500, 1000, 2000), help="fleet sizes, comma-separated"
    )
    parser.add_argument("--runs", type=int, default=3, help="storms per server and size")
    parser.add_argument("--timeout", type=float, default=60.0, help="longest storm, seconds")
    parser.add_argument(
        "--settle", type=float, default=SETTLE, help="seconds a new server is left alone first"
    )
    options = parsed(parser, Options, argv)
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    return options


if __name__ == "__main__":
    asyncio.run(run(parse_options()))
