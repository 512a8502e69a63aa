"""Benchmark: what the cyclic garbage collector costs ``pilothouse serve``, per setting.

For each collector setting (``--thresholds``: ``default`` or ``T0:T1:T2``, each field
``PILOTHOUSE_GC_THRESHOLD0``..``2``, 0 for CPython's own), ``--rounds`` times, the order
of the settings flipped every round so that none always runs first: a fresh ``serve`` on
the push fan-out mesh (``harness/mesh.py``; admission control off, so that the connect
storm measures the server, not the limit), then

- **storm**: N simulated proxies connect at once and converge;
- **idle**: ``--idle`` seconds of nothing;
- **EDS** and **CDS**: ``--runs`` pushes each (a WorkloadEntry's address, a
  DestinationRule's limit), timed until every proxy ACKed.

The server runs with ``gc_stats/`` on its ``PYTHONPATH``, which times every collection
on the CPU clock per generation; each phase reports the collections and their CPU beside
the server's own CPU over the phase (its CPU-time clock, in nanoseconds; the pushes sum
several runs), and the collector's share of that CPU. RSS with no proxy and with N
converged gives memory per connection, and RSS a second after the pushes how much the
heap grew over them (garbage the collector has not freed yet included). The load
generator runs in this process with CPython's defaults on every side (tuning it would
flatter both).

Run: ``.venv/bin/python bench/gc_cost.py --thresholds default,50000:20:0 --rounds 2``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fanout_side import Limits, Side
from bench.harness import servers
from bench.harness.figures import emit, note
from bench.harness.fleet import connect
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed
from pilothouse.heap import collector_thresholds
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.settings import GcSettings

HOOK = Path(__file__).resolve().parent / "gc_stats"
PHASES = ("storm", "idle", "eds", "cds")
VARIABLES = ("PILOTHOUSE_GC_THRESHOLD0", "PILOTHOUSE_GC_THRESHOLD1", "PILOTHOUSE_GC_THRESHOLD2")


@dataclass(frozen=True)
class Options:
    proxies: int
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    thresholds: str
    rounds: int
    runs: int
    idle: float
    timeout: float
    settle: float


@dataclass
class Phase:
    """One phase of one round: the collector's work and the server's CPU over it."""

    collections: list[int]
    gc_ms: list[float]
    cpu_ms: float
    units: int
    """What the phase is divided by: proxies for the storm, pushes for EDS and CDS, 1 idle."""


@dataclass
class Outcome:
    """One setting's rounds."""

    name: str
    phases: dict[str, list[Phase]] = field(default_factory=dict)
    storm_seconds: list[float] = field(default_factory=list)
    rss_empty_mib: list[float] = field(default_factory=list)
    kib_per_connection: list[float] = field(default_factory=list)
    pushes_grew_mib: list[float] = field(default_factory=list)
    """RSS after the pushes minus RSS once the fleet had converged."""
    push_p99_ms: dict[str, list[float]] = field(default_factory=dict)


def environment(setting: str) -> dict[str, str]:
    values = ["0", "0", "0"] if setting == "default" else setting.split(":")
    if len(values) != 3:
        raise SystemExit(f"gc_cost: a setting is 'default' or T0:T1:T2, not {setting!r}")
    return dict(zip(VARIABLES, values, strict=True))


def read_stats(path: Path) -> dict[str, Any]:
    figures: dict[str, Any] = json.loads(path.read_text())
    return figures


async def fresh_stats(path: Path) -> dict[str, Any]:
    """The hook's totals written after now (it rewrites them every 50 ms)."""
    await asyncio.sleep(0.12)
    return read_stats(path)


def phase(before: dict[str, Any], after: dict[str, Any], cpu_s: float, units: int) -> Phase:
    return Phase(
        collections=[
            a - b for a, b in zip(after["collections"], before["collections"], strict=True)
        ],
        gc_ms=[(a - b) / 1e6 for a, b in zip(after["cpu_ns"], before["cpu_ns"], strict=True)],
        cpu_ms=cpu_s * 1000,
        units=units,
    )


async def one_round(
    options: Options, setting: str, mesh: FanoutMesh, work: Path, states: dict[str, int]
) -> Outcome:
    stats = work / f"gc-{setting.replace(':', '_')}.json"
    env = {
        **environment(setting),
        "PILOTHOUSE_XDS_ADMISSION_RATE": "0",
        "PILOTHOUSE_FILE_DEBOUNCE": "0.05",
        "PILOTHOUSE_DEBOUNCE_AFTER": "0.1",
        "BENCH_GC_STATS": str(stats),
        "PYTHONPATH": os.pathsep.join(filter(None, (str(HOOK), os.environ.get("PYTHONPATH")))),
    }
    outcome = Outcome(setting)
    async with contextlib.AsyncExitStack() as stack:
        server, target = await servers.serving_pilothouse(
            stack, mesh.root, work / f"serve-{setting}.log", env
        )
        limits = Limits(options.timeout, 0.3, options.settle)

        def fleet(address: str, app: str = "app") -> ProxyFleet:
            return connect(
                address,
                options.proxies,
                mesh.namespace_names,
                streams_per_channel=options.streams_per_channel,
                app=app,
            )

        async def fire(kind: str, index: int) -> None:
            states[kind] = 1 - states.get(kind, 0)  # the mesh outlives each server
            mesh.set_state(kind, states[kind])

        side = Side(server, target, fire, fleet, limits)
        stack.push_async_callback(side.close)
        await asyncio.sleep(options.settle)
        outcome.rss_empty_mib.append(server.rss_kib() / 1024)
        before, cpu = await fresh_stats(stats), server.cpu_seconds()
        started = time.monotonic()
        await side.connect()  # converges, then settles, RSS, idle CPU over --settle
        outcome.storm_seconds.append(side.figures.connect_seconds)
        after = await fresh_stats(stats)
        # the storm's CPU: connect and converge only (settle and idle are measured apart)
        settle = time.monotonic() - started - side.figures.connect_seconds
        storm_cpu = server.cpu_seconds() - cpu - side.figures.idle_cpu_rate * settle
        storm = phase(before, after, storm_cpu, options.proxies)
        outcome.phases.setdefault("storm", []).append(storm)
        outcome.kib_per_connection.append(side.figures.per_connection(options.proxies))

        before, cpu = await fresh_stats(stats), server.cpu_seconds()
        await asyncio.sleep(options.idle)
        after = await fresh_stats(stats)
        idle = phase(before, after, server.cpu_seconds() - cpu, 1)
        outcome.phases.setdefault("idle", []).append(idle)

        for kind in ("eds", "cds"):
            before, cpu = await fresh_stats(stats), server.cpu_seconds()
            for index in range(options.runs):
                run = await side.push(kind, index, mesh.cluster(0))
                outcome.push_p99_ms.setdefault(kind, []).append(run.p99 * 1000)
                await asyncio.sleep(0.3)
            after = await fresh_stats(stats)
            pushed = phase(before, after, server.cpu_seconds() - cpu, options.runs)
            outcome.phases.setdefault(kind, []).append(pushed)
        await asyncio.sleep(options.settle)
        grew = server.rss_kib() - side.figures.rss_connected_kib
        outcome.pushes_grew_mib.append(grew / 1024)
        thresholds = read_stats(stats)["thresholds"]
        asked = [int(v) for v in environment(setting).values()]
        if thresholds != list(collector_thresholds(GcSettings(*asked))):
            raise RuntimeError(f"{setting}: the server runs with {thresholds}")
        note(f"gc_cost: {setting} done (thresholds {thresholds})")
    return outcome


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def cds_cpu(outcome: Outcome) -> float:
    return median([r.cpu_ms / r.units for r in outcome.phases.get("cds", [])])


def summary(outcome: Outcome, base: Outcome, options: Options) -> dict[str, Any]:
    ours, theirs = cds_cpu(outcome), cds_cpu(base)
    group: dict[str, Any] = {
        "benchmark": f"gc_cost: collector thresholds {outcome.name} ({options.proxies} proxies)",
        "baseline": f"thresholds {base.name}, a server of its own in the same run, interleaved",
        "ratio_to_baseline": round(theirs / ours, 2) if ours > 0 else None,
        "ratio_definition": "baseline's server CPU per CDS push ÷ this setting's",
        "rounds": len(outcome.storm_seconds),
        "storm_seconds": round(median(outcome.storm_seconds), 2),
        "rss_no_proxies_mib": round(median(outcome.rss_empty_mib), 1),
        "kib_per_connection": round(median(outcome.kib_per_connection), 1),
        "rss_growth_over_pushes_mib": round(median(outcome.pushes_grew_mib), 1),
    }
    for name in PHASES:
        rounds = outcome.phases.get(name, [])
        if not rounds:
            continue
        unit = {"storm": "per_connection", "idle": f"per_{options.idle:g}_s"}.get(name, "per_push")
        per = [r.units for r in rounds]
        for generation in range(3):
            group[f"{name}_gen{generation}_collections_{unit}"] = round(
                median([r.collections[generation] / u for r, u in zip(rounds, per, strict=True)]), 2
            )
            group[f"{name}_gen{generation}_gc_ms_{unit}"] = round(
                median([r.gc_ms[generation] / u for r, u in zip(rounds, per, strict=True)]), 3
            )
        group[f"{name}_server_cpu_ms_{unit}"] = round(
            median([r.cpu_ms / u for r, u in zip(rounds, per, strict=True)]), 2
        )
        group[f"{name}_gc_share_of_cpu"] = round(
            median([sum(r.gc_ms) / r.cpu_ms for r in rounds if r.cpu_ms > 0]), 3
        )
    for kind, p99 in outcome.push_p99_ms.items():
        group[f"{kind}_p99_ms"] = round(median(p99), 1)
    return group


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument("--proxies", type=int, default=1000)
    parser.add_argument("--thresholds", default="default,50000:20:0")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="pushes per kind per round")
    parser.add_argument("--idle", type=float, default=5.0, help="idle seconds measured")
    parser.add_argument("--timeout", type=float, default=90.0)
    parser.add_argument(
        "--settle", type=float, default=2.0, help="quiet seconds after start and convergence"
    )
    return parsed(parser, Options, argv)


async def run(options: Options) -> None:
    settings = [s.strip() for s in options.thresholds.split(",") if s.strip()]
    for setting in settings:
        environment(setting)  # a malformed one fails before anything starts
    outcomes = {s: Outcome(s) for s in settings}
    servers.raise_open_file_limit()
    with tempfile.TemporaryDirectory(prefix="gc-cost-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        states: dict[str, int] = {}
        for index in range(options.rounds):
            order = settings if index % 2 == 0 else settings[::-1]
            for setting in order:
                done = await one_round(options, setting, mesh, work, states)
                mine = outcomes[setting]
                for name, rounds in done.phases.items():
                    mine.phases.setdefault(name, []).extend(rounds)
                for kind, p99 in done.push_p99_ms.items():
                    mine.push_p99_ms.setdefault(kind, []).extend(p99)
                mine.storm_seconds += done.storm_seconds
                mine.rss_empty_mib += done.rss_empty_mib
                mine.kib_per_connection += done.kib_per_connection
                mine.pushes_grew_mib += done.pushes_grew_mib
    base = outcomes.get("default", outcomes[settings[0]])
    emit(summary(outcomes[s], base, options) for s in settings)


if __name__ == "__main__":
    asyncio.run(run(parse_options()))
