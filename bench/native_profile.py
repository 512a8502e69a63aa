"""Benchmark: where the whole server process's CPU goes per message, pilothouse against the
floor, read with Linux ``perf`` (native code, the kernel and the interpreter alike).

push_fanout's setup in one run: ``pilothouse serve`` and the transport floor
(``harness/floor.py``) in their own processes, N SotW proxies of the load generator
(``pilothouse.loadtest``, in this process) connected to each, the floor handed the very
bytes pilothouse sent. For the EDS change, then the CDS change:

1. ``--pushes`` K pushes to each side alternating (pilothouse's, then the floor's replay of
   it) with no profiler attached: each side's server CPU per message;
2. K more alternating pushes with ``perf record -e cpu-clock -F 999 -g`` attached to both
   servers (a recording per server over the K pushes and the pauses between them): CPU per
   message again (so perf's own overhead shows: profiled ÷ unprofiled) and the samples.

Each side's profiled CPU per message (read from its CPU-time clock, idle rate subtracted)
is split by the share of its samples in each category (``harness/perf_profile.py``):
Python interpreter, GC, allocation, gRPC core, protobuf, kernel network / wait /
other, libc other, rest. A figure group per change gives both sides' µs per message by
category and pilothouse − floor per category; stderr gets a short table and each side's
largest leaf symbols. The load generator's own CPU per message (this process, during each
side's pushes) is reported beside them: a starved load generator reads late, which
changes how the server's writes batch.

Where ``perf`` is missing or may not record here the script prints one group saying so
(``skipped``) and exits 0; ``run_all.py`` runs it only where ``perf`` is on the PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fanout_side import SETTLE, TRIGGERS, Side
from bench.harness.figures import emit, note, ratio
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed
from bench.harness.perf_profile import (
    CATEGORIES,
    PerfRecording,
    PerfUnavailable,
    Tally,
    categories,
    perf_problem,
)
from bench.harness.push import PushRun
from bench.push_fanout import Options as FanoutOptions
from bench.push_fanout import Sides, start_sides
from pilothouse.loadtest.cpu_time import worse

PAUSE = 0.5
TOP_SYMBOLS = 12
NAME = "native_profile"
BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server pushing the same "
    "pre-encoded resource bytes to the same N streams, profiled in the same rounds"
)
TARGET = "none (where the server's CPU goes; push_fanout and fanout_curve hold the targets)"


@dataclass(frozen=True)
class Options:
    proxies: int
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    pushes: int
    frequency: int
    timeout: float
    settle: float


@dataclass
class Phase:
    """One side's pushes of one change in one phase (profiled or not)."""

    runs: list[PushRun]
    generator_cpu: float = 0.0
    """CPU seconds this process (the load generator) spent during the side's pushes."""

    @property
    def messages(self) -> int:
        return sum(sum(run.responses.values()) for run in self.runs)

    @property
    def cpu_per_message(self) -> float:
        return sum(run.cpu_seconds for run in self.runs) / self.messages if self.messages else 0.0

    @property
    def generator_per_message(self) -> float:
        return self.generator_cpu / self.messages if self.messages else 0.0


async def timed(side: Side, phase: Phase, kind: str, index: int, cluster: str) -> None:
    before = time.process_time()
    phase.runs.append(await side.push(kind, index, cluster))
    phase.generator_cpu += time.process_time() - before


async def alternate(
    sides: Sides, kind: str, first: int, pushes: int, cluster: str
) -> tuple[Phase, Phase]:
    """``pushes`` pushes of ``kind`` to each side in turn, pilothouse's first (the floor
    replays it), from run index ``first``; both sides' phases."""
    ours, floor = Phase([]), Phase([])
    for index in range(first, first + pushes):
        mark = time.monotonic()
        await timed(sides.ours, ours, kind, index, cluster)
        sides.recording.record(kind, sides.ours.probe, mark)
        await asyncio.sleep(PAUSE)
        await timed(sides.floor, floor, kind, index, cluster)
        await asyncio.sleep(PAUSE)
    return ours, floor


@dataclass
class Profiled:
    """One change: both sides unprofiled and profiled, and the profiles' samples."""

    kind: str
    plain: dict[str, Phase]
    profiled: dict[str, Phase]
    tallies: dict[str, Tally]


async def profile_change(
    sides: Sides, kind: str, cluster: str, options: Options, work: Path
) -> Profiled:
    """K pushes of ``kind`` per side unprofiled, then K with perf on both servers;
    ``cluster`` is the resource whose change ends a push."""
    plain = await alternate(sides, kind, 0, options.pushes, cluster)
    recordings = {
        name: PerfRecording(side.server.pid, work / f"{kind}-{name}.data", options.frequency)
        for name, side in (("pilothouse", sides.ours), ("floor", sides.floor))
    }
    await asyncio.sleep(1.0)  # perf attaches to every thread before the first push
    try:
        profiled = await alternate(sides, kind, options.pushes, options.pushes, cluster)
    finally:
        data = {name: recording.stop() for name, recording in recordings.items()}
    tallies = {name: categories(path) for name, path in data.items()}
    empty = [name for name, tally in tallies.items() if not tally.total]
    if empty:  # perf attached but saw nothing: no profile to split the CPU by
        raise PerfUnavailable(f"perf recorded no samples of {' or '.join(empty)}")
    return Profiled(
        kind,
        dict(zip(("pilothouse", "floor"), plain, strict=True)),
        dict(zip(("pilothouse", "floor"), profiled, strict=True)),
        tallies,
    )


def us(seconds: float) -> float:
    return round(seconds * 1e6, 1)


def group(result: Profiled, options: Options, clock: str) -> dict[str, Any]:
    title = "EDS" if result.kind == "eds" else "CDS"
    out: dict[str, Any] = {
        "benchmark": f"{NAME}: {title} change to every proxy, server CPU per message by "
        f"category (SotW, {options.proxies} proxies, perf -F {options.frequency})",
        "baseline": BASELINE,
        "pushes": f"{options.pushes} per side unprofiled, then {options.pushes} profiled",
        "cpu_clock": clock,
        "headline": "pilothouse_server_cpu_us_per_message",
    }
    for side in ("pilothouse", "floor"):
        plain, profiled = result.plain[side], result.profiled[side]
        out[f"{side}_messages_per_push"] = round(plain.messages / len(plain.runs))
        out[f"{side}_server_cpu_us_per_message"] = us(plain.cpu_per_message)
        out[f"{side}_profiled_server_cpu_us_per_message"] = us(profiled.cpu_per_message)
        out[f"{side}_perf_overhead"] = (
            round(profiled.cpu_per_message / plain.cpu_per_message, 2)
            if plain.cpu_per_message
            else None
        )
        out[f"{side}_samples"] = result.tallies[side].total
        out[f"{side}_load_generator_cpu_us_per_message"] = us(plain.generator_per_message)
        out[f"{side}_spread_ms"] = round(
            1e3 * statistics.median(run.spread for run in plain.runs), 1
        )
    for name in CATEGORIES:
        mine, base = (
            result.tallies[side].share(name) * result.profiled[side].cpu_per_message
            for side in ("pilothouse", "floor")
        )
        out[f"pilothouse_{name}_us"] = us(mine)
        out[f"floor_{name}_us"] = us(base)
        out[f"difference_{name}_us"] = us(mine - base)
    for side in ("pilothouse", "floor"):
        tally = result.tallies[side]
        out[f"{side}_rest_largest"] = ", ".join(
            f"{dso} {count / tally.total:.1%}" for dso, count in tally.rest.most_common(4)
        )
    return out | {
        "ratio_to_baseline": ratio(
            result.plain["floor"].cpu_per_message, result.plain["pilothouse"].cpu_per_message
        ),
        "ratio_definition": "floor ÷ pilothouse server CPU per message, unprofiled pushes",
        "target": TARGET,
        "target_met": "—",
    }


def table(figures: dict[str, Any], result: Profiled) -> str:
    """The figure group as a short text table, and each side's largest leaf symbols."""
    lines = [
        figures["benchmark"],
        f"{'µs per message':<16}{'pilothouse':>11}{'floor':>9}{'diff':>9}",
    ]
    for name in (*CATEGORIES, "server_cpu"):
        if name == "server_cpu":
            mine = figures["pilothouse_profiled_server_cpu_us_per_message"]
            base = figures["floor_profiled_server_cpu_us_per_message"]
            diff = round(mine - base, 1)
        else:
            mine, base = figures[f"pilothouse_{name}_us"], figures[f"floor_{name}_us"]
            diff = figures[f"difference_{name}_us"]
        lines.append(f"{name:<16}{mine:>11}{base:>9}{diff:>9}")
    for side in ("pilothouse", "floor"):
        tally = result.tallies[side]
        per_sample = result.profiled[side].cpu_per_message / tally.total if tally.total else 0.0
        lines.append(f"{side}'s largest leaf symbols (µs per message):")
        lines += [
            f"  {1e6 * per_sample * count:7.1f}  {symbol}"
            for symbol, count in tally.by_symbol.most_common(TOP_SYMBOLS)
        ]
    return "\n".join(lines)


def skipped(problem: str, options: Options) -> dict[str, Any]:
    return {
        "benchmark": f"{NAME}: server CPU per message by category (SotW, {options.proxies} "
        "proxies)",
        "baseline": BASELINE,
        "skipped": problem,
        "ratio_to_baseline": None,
        "target": TARGET,
        "target_met": "—",
    }


def fanout_options(options: Options) -> FanoutOptions:
    return FanoutOptions(
        proxies=options.proxies,
        services=options.services,
        namespaces=options.namespaces,
        endpoints=options.endpoints,
        runs=options.pushes,
        delta=False,
        streams_per_channel=options.streams_per_channel,
        file_debounce=0.05,
        debounce_after=0.1,
        slope=False,
        timeout=options.timeout,
        tail=0.3,
        workers=1,
        settle=options.settle,
    )


async def run(options: Options) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="native-profile-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        groups = []
        async with contextlib.AsyncExitStack() as stack:
            sides = await start_sides(fanout_options(options), mesh, work, stack)
            for kind in TRIGGERS:
                result = await profile_change(sides, kind, mesh.cluster(0), options, work)
                clock = worse(sides.ours.server.cpu_clock, sides.floor.server.cpu_clock)
                figures = group(result, options, clock)
                note(table(figures, result))
                groups.append(figures)
        return groups


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument("--proxies", type=int, default=1000)
    parser.add_argument("--pushes", type=int, default=5, help="pushes per side and phase")
    parser.add_argument("--frequency", type=int, default=999, help="perf samples per second")
    parser.add_argument("--timeout", type=float, default=120.0, help="per wait, seconds")
    parser.add_argument("--settle", type=float, default=SETTLE)
    return parsed(parser, Options, list(argv) if argv is not None else None)


def main(argv: Sequence[str] | None = None) -> None:
    options = parse_options(argv)
    problem = perf_problem()
    if problem is not None:
        note(f"{NAME}: skipped: {problem}")
        emit([skipped(problem, options)])
        return
    try:
        emit(asyncio.run(run(options)))
    except PerfUnavailable as failed:
        note(f"{NAME}: skipped: {failed}")
        emit([skipped(str(failed), options)])


if __name__ == "__main__":
    main()
