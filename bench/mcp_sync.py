"""Benchmark: a full MCP-over-xDS sync of N ServiceEntries from one pilothouse to another.

For each size (default 10,000 and 100,000), in one run:

- **pilothouse**: the source is ``pilothouse serve --role config-server`` over a
  directory of N ServiceEntries (100 files); once its ``/ready`` passes, the sink
  ``pilothouse serve --config-source xds://SOURCE`` starts. The sync time (the
  issue's "encode, send and apply") runs from the moment the sink's upstream stream
  opens (the source logs ``proxy connected`` when the stream's first request arrives)
  until the sink logs its upstream synced: every kind answered, decoded, validated and
  applied to its store. Also recorded: the time until the sink's ``/ready`` turns 200,
  which adds the ServiceEntry registry and the first PushContext; the same from the
  sink's process start, next to a sink started against an empty source (the start-up floor); a
  second sink against the same, already-warm source; and VmRSS / VmHWM (peak) of
  both processes after the sync.
- **baseline** (the transport floor, ``bench/mcp_sync_floor.py``, with the mesh): the same N
  objects as bare protobuf, serialised by a minimal grpc.aio server in its own
  process, sent on one stream and parsed with ``ParseFromString`` (best of 3).
- **phases** (``bench/mcp_sync_phases.py``): the same work in one process, phase by
  phase (encode, assemble, parse, decode, store, index), with time in the garbage
  collector; then the 10,000 case again under cProfile (report on stderr). Each runs
  in a child process with a time limit, so a phase that does not scale is cut off
  and reported as such instead of stalling the benchmark. The phases run while the
  source process loads its files (which is not measured), never next to a sink.

The whole run keeps to ``--budget`` seconds (default 1700, under ``run_all``'s 30
minutes): the source's load and the warm sink are given only what is left, and a
size that runs out says how far it got.

Prints one JSON object per size. Targets (the issue): 10k ≤ 1 s; 100k ≤ 10 s and
≤ 1 GiB resident on either side. Every process started here is stopped (SIGTERM to
its process group, then SIGKILL), also on failure; all sockets are on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import re
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.child import Child, ChildFailed, CpuClock, Memory, ServeChild, ready
from bench.harness.figures import emit
from bench.mcp_sync_floor import FloorSync, sync_once, write_mesh
from bench.mcp_sync_phases import PHASES, SOURCE_PHASES, PhaseRun, PhasesChild

HERE = Path(__file__).resolve().parent
LOADED = re.compile(r" info serve config loaded events=(\d+)")
"""What ``serve`` logs once its initial load is ready: how many objects it took in."""


# -- the figures of one size -------------------------------------------------------------

GIB_MIB: Final = 1024.0
TARGET_SECONDS: Final = {10_000: 1.0, 100_000: 10.0}
MEMORY_TARGET_FROM: Final = 100_000
"""The ≤ 1 GiB target applies from this size on."""


def span(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else round(end - start, 3)


@dataclass(frozen=True, slots=True)
class SinkRun:
    """One sink's sync against the source, in wall-clock seconds (None: not reached)."""

    started: float
    opened: float | None
    """When the source logged the sink's stream (its first request arrived)."""
    synced: float | None
    """When the sink logged its upstream synced: every kind answered, decoded, validated
    and applied to its store (the ACK of the last one goes out right after)."""
    xds_ready: float | None
    ready: float | None
    """When the benchmark first saw the sink's /ready answer 200."""
    memory: Memory | None
    stored: int
    """Objects the sink logged as loaded at ready (0 if it never got there)."""
    problem: str = ""
    sink_cpu: float | None = None
    """CPU seconds the sink process used during the sync (stream open → synced)."""
    source_cpu: float | None = None
    """CPU seconds the source process used during the same span."""

    @property
    def sync(self) -> float | None:
        """Encode, send and apply: the stream opens → every kind applied and ACKed."""
        return span(self.opened, self.synced)

    @property
    def to_ready(self) -> float | None:
        """The stream opens → /ready, which adds the registry and the first PushContext."""
        return span(self.opened, self.ready)


@dataclass(frozen=True, slots=True)
class SizeRun:
    """Everything measured for one size."""

    count: int
    empty_sink_start: float
    floor: FloorSync
    floor_memory: Memory
    source_load: float | None
    source_problem: str
    source_stored: int
    source_memory: Memory | None
    cold: SinkRun | None
    warm: SinkRun | None
    phases: PhaseRun


def report(run: SizeRun, sink_timeout: float) -> dict[str, Any]:
    count, cold, phases, floor = run.count, run.cold, run.phases, run.floor
    sync = cold.sync if cold else None
    if sync is not None:
        shown_sync: Any = sync
    elif cold is not None:
        shown_sync = f"> {sink_timeout:.0f} s after the sink started (timeout)"
    else:
        shown_sync = "not measured: the source never became ready"
    out: dict[str, Any] = {
        "benchmark": f"mcp_sync: {count} ServiceEntries, pilothouse to pilothouse (MCP over xDS)",
        "baseline": "transport floor (bench/mcp_sync_floor.py): the same objects as bare protobuf, "
        "serialised by a minimal grpc.aio server process, one stream, ParseFromString each",
        "objects": count,
        "pilothouse_sync_seconds": shown_sync,
        "sync_definition": "encode, send and apply: the sink's upstream stream opens (the "
        "source logs it) → the sink has applied every kind to its store and logs its upstream "
        "synced (each kind decoded, validated, stored, ACKed)",
    }
    if cold is not None:
        out |= {
            "stream_open_to_sink_ready_seconds": cold.to_ready,
            "synced_to_ready_seconds (registry, PushContext)": span(cold.synced, cold.xds_ready),
            "sink_start_to_ready_seconds": span(cold.started, cold.ready),
        }
    out |= {
        "empty_sink_start_to_ready_seconds": run.empty_sink_start,
        "warm_source_sync_seconds": run.warm.sync if run.warm else None,
        "sync_cpu_seconds (sink, source; cold, warm)": cpu_text(cold, run.warm),
        "floor_seconds": round(floor.seconds, 4),
        "response_mib_pilothouse": (
            round(phases.response_bytes / 2**20, 1) if phases.response_bytes else None
        ),
        "response_mib_floor": round(floor.response_bytes / 2**20, 1),
        "source_rss_mib": run.source_memory.rss_mib if run.source_memory else None,
        "source_peak_rss_mib": run.source_memory.peak_mib if run.source_memory else None,
        "sink_rss_mib": cold.memory.rss_mib if cold and cold.memory else None,
        "sink_peak_rss_mib": cold.memory.peak_mib if cold and cold.memory else None,
        "floor_server_rss_mib": run.floor_memory.rss_mib,
        "memory_note": "each side's RSS includes any process it started (pilothouse "
        "starts none today); peaks are summed per process",
        "source_load_seconds (files to /ready, not part of the sync)": (
            round(run.source_load, 1) if run.source_load is not None else run.source_problem
        ),
        "phase_ms (in-process)": phases.summary(),
        "phase_source_us_per_object": phases.per_object_us(SOURCE_PHASES, count),
        "phase_sink_us_per_object": phases.per_object_us(PHASES[len(SOURCE_PHASES) :], count),
        "phase_gc_ms": phases.gc_summary(),
        "ratio_to_baseline": round(floor.seconds / sync, 3) if sync else None,
        "ratio_definition": "floor seconds ÷ pilothouse sync seconds (1 = as fast as the floor)",
    }
    if run.source_problem:
        out["source_progress"] = f"{run.source_stored} of {count} objects loaded"
    if cold is not None and cold.problem:
        out["sink_problem"] = cold.problem
        out["sink_objects_loaded"] = f"{cold.stored} of {count}"
        out["sink_memory_note"] = "sink RSS read when it was stopped, before it finished"
    if phases.where:
        out["profile_where (cProfile of the phases, share of time)"] = "; ".join(phases.where)
    target = TARGET_SECONDS.get(count)
    if target is not None:
        out |= verdict(count, target, sync, run.source_memory, cold)
    return out


def cpu_text(cold: SinkRun | None, warm: SinkRun | None) -> str | None:
    """The CPU both processes used during the cold and the warm sync: on a shared machine
    the wall-clock sync includes waiting for a core, this does not."""
    parts = [
        f"{name} {run.sink_cpu}, {run.source_cpu}"
        for name, run in (("cold", cold), ("warm", warm))
        if run is not None and run.sink_cpu is not None
    ]
    return "; ".join(parts) or None


def verdict(
    count: int, target: float, sync: float | None, source: Memory | None, cold: SinkRun | None
) -> dict[str, str]:
    seconds_met = sync is not None and sync <= target
    text = f"≤ {target:g} s"
    memory_met = True
    if count >= MEMORY_TARGET_FROM:
        text += " and ≤ 1 GiB on either side"
        peaks = [m.peak_mib for m in (source, cold.memory if cold else None) if m is not None]
        memory_met = len(peaks) == 2 and max(peaks) <= GIB_MIB
    return {"target": text, "target_met": "yes" if seconds_met and memory_met else "no"}


# -- the run -----------------------------------------------------------------------------


def loaded_objects(output: str) -> int:
    found = LOADED.search(output)
    return int(found.group(1)) if found else 0


def source(stack: ExitStack, workdir: Path, mesh: Path, name: str) -> ServeChild:
    """The config-server source; xds at debug so that it logs each stream it accepts."""
    args = ("--role", "config-server", "--config", str(mesh))
    process = ServeChild(name, workdir, *args, log_level="default:info,xds:debug")
    stack.callback(process.stop)
    return process


def sink_run(workdir: Path, name: str, upstream: ServeChild, timeout: float) -> SinkRun:
    """Start a sink against ``upstream``, wait for its /ready, measure, stop it."""
    sink = ServeChild(name, workdir, "--config-source", f"xds://127.0.0.1:{upstream.xds_port}")
    began = sink.started
    clock = CpuClock([sink, upstream])
    ready_at: float | None = None
    problem = ""
    memory: Memory | None = None
    try:
        try:
            ready_at = sink.serve_ready(timeout)
        except ChildFailed as failure:
            problem = str(failure).splitlines()[0]
        clock.stop()
        if sink.alive():
            memory = sink.memory()
        opened = upstream.first_time(r" debug xds proxy connected ", began)
        synced = sink.first_time(r" info sources\.xds upstream \S+ synced", began)
        xds_ready = sink.first_time(r" info xds xds ready", began)
        stored = loaded_objects(sink.output())
        return SinkRun(
            began,
            opened,
            synced,
            xds_ready,
            ready_at,
            memory,
            stored,
            problem,
            sink_cpu=clock.used(sink, opened, synced),
            source_cpu=clock.used(upstream, opened, synced),
        )
    finally:
        clock.stop()
        sink.stop()


def floor(workdir: Path, count: int, runs: int) -> tuple[FloorSync, Memory]:
    argv = [sys.executable, str(HERE / "mcp_sync_floor.py"), "--count", str(count)]
    child = Child("floor", argv, workdir / "floor.log")
    try:
        port = int(child.wait_for_line(r"floor listening on (\d+)", 120 + count / 500).group(1))
        syncs = [asyncio.run(sync_once(port)) for _ in range(runs)]
        assert all(s.objects == count for s in syncs), syncs
        return min(syncs, key=lambda s: s.seconds), child.memory()
    finally:
        child.stop()


def empty_baseline(workdir: Path, timeout: float) -> float:
    """Seconds from a sink's process start to its /ready against a source with no config."""
    (workdir / "empty").mkdir(exist_ok=True)
    with ExitStack() as stack:
        upstream = source(stack, workdir, workdir / "empty", "empty-source")
        upstream.serve_ready(60)
        run = sink_run(workdir, "empty-sink", upstream, timeout)
    if run.ready is None:
        raise ChildFailed(f"the empty sink did not become ready: {run.problem}")
    return round(run.ready - run.started, 3)


def load_source(
    upstream: ServeChild, phases_child: PhasesChild, timeout: float, phases_timeout: float
) -> tuple[float | None, str, PhaseRun]:
    """Wait for the source's /ready while the phases run; (load seconds or None, problem,
    phases). The phases are collected (or cut off) before this returns."""
    deadline = time.monotonic() + timeout
    phases: PhaseRun | None = None
    loaded: float | None = None
    problem = ""
    while loaded is None:
        if phases is None and phases_child.due(phases_timeout):
            phases = phases_child.collect(phases_timeout)
        if ready(upstream.admin_port):
            loaded = time.time() - upstream.started
            break
        try:
            upstream.check(deadline, "/ready", timeout)
        except ChildFailed as failure:
            problem = str(failure).splitlines()[0]
            break
        time.sleep(0.1)
    if phases is None:
        phases = phases_child.collect(phases_timeout)
    return loaded, problem, phases


def one_size(
    count: int, workdir: Path, args: argparse.Namespace, empty: float, deadline: float
) -> SizeRun:
    mesh = workdir / "mesh"
    write_mesh(mesh, count)
    best, floor_memory = floor(workdir, count, args.floor_runs)
    cold = warm = None
    source_memory: Memory | None = None
    with ExitStack() as stack:
        phases_child = PhasesChild(workdir, count)
        stack.callback(phases_child.stop)
        upstream = source(stack, workdir, mesh, "source")
        left = deadline - time.monotonic() - args.sink_timeout - 30
        loaded, problem, phases = load_source(
            upstream, phases_child, max(min(args.source_timeout, left), 1.0), args.phases_timeout
        )
        stored = loaded_objects(upstream.output())
        if loaded is not None:
            cold = sink_run(workdir, "sink", upstream, args.sink_timeout)
            room = deadline - time.monotonic() > args.sink_timeout + 30
            if args.warm and cold.ready is not None and room:
                warm = sink_run(workdir, "sink-warm", upstream, args.sink_timeout)
        if upstream.alive():
            source_memory = upstream.memory()
    if count == args.profile_size and deadline - time.monotonic() > 120:
        limit = min(args.phases_timeout * 3, deadline - time.monotonic() - 60)
        profiled = PhasesChild(workdir, count, profile=True).collect(limit)
        phases = dataclasses.replace(phases, where=profiled.where)
        print(profiled.text, file=sys.stderr)
    return SizeRun(count, empty, best, floor_memory, loaded, problem, stored, source_memory,
                   cold, warm, phases)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--budget", type=float, default=1700.0, help="seconds for the whole run")
    parser.add_argument("--sink-timeout", type=float, default=180.0)
    parser.add_argument("--source-timeout", type=float, default=1500.0)
    parser.add_argument("--floor-runs", type=int, default=3)
    parser.add_argument("--profile-size", type=int, default=10_000)
    parser.add_argument("--phases-timeout", type=float, default=300.0)
    parser.add_argument("--no-warm", dest="warm", action="store_false")
    parser.add_argument("--keep", type=Path, help="write mesh and logs here and keep them")
    args = parser.parse_args()
    deadline = time.monotonic() + args.budget
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    with ExitStack() as scratch:
        root = args.keep or Path(scratch.enter_context(tempfile.TemporaryDirectory("-mcp-sync")))
        root.mkdir(parents=True, exist_ok=True)
        empty = empty_baseline(root, 60)
        for count in sizes:
            workdir = root / str(count)
            workdir.mkdir()
            began = time.monotonic()
            run = one_size(count, workdir, args, empty, deadline)
            emit([report(run, args.sink_timeout)])
            print(f"{count}: {time.monotonic() - began:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
