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
- **baseline** (the transport floor, ``bench/mcp_sync_floor.py``): the same N
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
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.child import Child, ChildFailed, CpuClock, Memory, ServeChild, ready
from bench.harness.figures import emit
from bench.mcp_sync_floor import FloorSync, sync_once
from bench.mcp_sync_mesh import write_mesh
from bench.mcp_sync_phase_child import PhaseRun, PhasesChild
from bench.mcp_sync_report import SinkRun, SizeRun, report

HERE = Path(__file__).resolve().parent
LOADED = re.compile(r" info serve config loaded events=(\d+)")
"""What ``serve`` logs once its initial load is ready: how many objects it took in."""


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
