"""The MCP sync benchmark's figures for one size, as the JSON object ``run_all`` records.

:class:`SinkRun` is what one sink process showed (wall-clock times read from the
two processes' logs, memory from ``/proc``); :class:`SizeRun` gathers everything
measured for one size; :func:`report` turns it into figures, the ratio to the
transport floor and the verdict against the issue's targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from bench.harness.child import Memory
from bench.mcp_sync_floor import FloorSync
from bench.mcp_sync_phase_child import PhaseRun
from bench.mcp_sync_phases import PHASES, SOURCE_PHASES

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
