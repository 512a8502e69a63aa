"""The connect storm figures as the JSON objects ``run_all.py`` records, one per fleet size.

Ratios are floor ÷ pilothouse seconds: 1.0 means pilothouse converges a storm
as fast as the bare transport does. The largest size carries the issue's
target (every proxy converged within ``target`` seconds) and the scaling curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.harness.figures import mib as _mib
from bench.harness.figures import ratio
from bench.harness.figures import s as _s
from bench.harness.storm import StormSummary

BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server serving the "
    "same pre-encoded resource bytes to the same N SotW streams, started the same way"
)


@dataclass(frozen=True)
class StormShape:
    """What the report says about the benchmark's set-up."""

    services: int
    runs: int
    streams_per_channel: int
    target_seconds: float
    held: tuple[tuple[str, int], ...]
    """What each proxy held after the first pilothouse storm: the reference for every run."""


@dataclass(frozen=True)
class StormSize:
    """Both servers' storms at one fleet size."""

    ours: StormSummary
    floor: StormSummary

    @property
    def proxies(self) -> int:
        return self.ours.proxies


def _errors(summary: StormSummary, reference: tuple[tuple[str, int], ...]) -> str:
    text = (
        f"unconverged {summary.unconverged} (worst run), stream failures "
        f"{summary.stream_failures}, NACKs {summary.nacks} (all runs)"
    )
    other = summary.runs_holding_other_than(reference)
    if other or summary.odd_proxies:
        text += (
            f"; runs whose proxies hold other resource counts than the first storm: {other}, "
            f"proxies holding other counts than the rest of their run: {summary.odd_proxies}"
        )
    if summary.error_examples:
        text += "; e.g. " + " | ".join(summary.error_examples)
    return text


def verdict(
    summary: StormSummary, target: float, reference: tuple[tuple[str, int], ...] | None = None
) -> str:
    """``yes``, or ``no`` with how far the median storm is from the target."""
    if not summary.converged_every_run:
        return f"no: {summary.unconverged} proxies never converged"
    if reference is not None and summary.runs_holding_other_than(reference):
        return "no: a storm ended with proxies holding other resources than the first"
    if summary.seconds <= target:
        return "yes"
    over = summary.seconds - target
    return f"no: missed by {over:.2f} s ({summary.seconds / target:.2f}× the target)"


def curve(sizes: Sequence[StormSize]) -> list[dict[str, Any]]:
    return [
        {
            "proxies": size.proxies,
            "pilothouse_s": _s(size.ours.seconds),
            "floor_s": _s(size.floor.seconds),
            "ratio": ratio(size.floor.seconds, size.ours.seconds),
            "pilothouse_p99_s": _s(size.ours.percentile(99)),
            "floor_p99_s": _s(size.floor.percentile(99)),
            "pilothouse_peak_rss_mib": _mib(size.ours.peak_rss_kib),
            "pilothouse_cpu_s": _s(size.ours.cpu_seconds),
        }
        for size in sorted(sizes, key=lambda s: s.proxies)
    ]


def size_group(shape: StormShape, size: StormSize) -> dict[str, Any]:
    ours, floor = size.ours, size.floor
    n = size.proxies
    return {
        "benchmark": f"connect_storm: {n} SotW sidecars connect at once and converge",
        "baseline": BASELINE,
        "services_per_proxy": f"{shape.services} (CDS, EDS, LDS, RDS each)",
        "runs": f"{len(ours.runs)} per server, alternating, each against a freshly started "
        "server (medians of the runs)",
        "streams_per_connection": shape.streams_per_channel,
        "converged_definition": "every type ACKed and every name asked for held",
        "resources_per_proxy": ", ".join(f"{name} {count}" for name, count in shape.held),
        "pilothouse_s": _s(ours.seconds),
        "floor_s": _s(floor.seconds),
        "pilothouse_runs_s": [_s(run.seconds) for run in ours.runs],
        "floor_runs_s": [_s(run.seconds) for run in floor.runs],
        "pilothouse_per_proxy_p50_s": _s(ours.percentile(50)),
        "pilothouse_per_proxy_p90_s": _s(ours.percentile(90)),
        "pilothouse_per_proxy_p99_s": _s(ours.percentile(99)),
        "floor_per_proxy_p50_s": _s(floor.percentile(50)),
        "floor_per_proxy_p90_s": _s(floor.percentile(90)),
        "floor_per_proxy_p99_s": _s(floor.percentile(99)),
        "pilothouse_errors": _errors(ours, shape.held),
        "floor_errors": _errors(floor, shape.held),
        "pilothouse_server_rss_before_mib": _mib(ours.rss_before_kib),
        "pilothouse_server_peak_rss_mib": _mib(ours.peak_rss_kib),
        "floor_server_rss_before_mib": _mib(floor.rss_before_kib),
        "floor_server_peak_rss_mib": _mib(floor.peak_rss_kib),
        "pilothouse_server_cpu_s": _s(ours.cpu_seconds),
        "floor_server_cpu_s": _s(floor.cpu_seconds),
        "pilothouse_server_cpu_ms_per_proxy": round(1000 * ours.cpu_seconds / n, 2),
        "floor_server_cpu_ms_per_proxy": round(1000 * floor.cpu_seconds / n, 2),
        "load_generator_cpu_cores_pilothouse_storm": round(
            ours.load_generator_cpu_seconds / ours.seconds, 2
        ),
        "load_generator_cpu_cores_floor_storm": round(
            floor.load_generator_cpu_seconds / floor.seconds, 2
        ),
        "ratio_to_baseline": ratio(floor.seconds, ours.seconds),
        "ratio_definition": "floor seconds ÷ pilothouse seconds (1 = as fast as the floor)",
        "target": f"all {n} converged ≤ {shape.target_seconds:g} s",
        "target_met": verdict(ours, shape.target_seconds, shape.held),
    }


def figure_groups(shape: StormShape, sizes: Sequence[StormSize]) -> list[dict[str, Any]]:
    """One group per size, smallest first; the largest also carries the scaling curve."""
    ordered = sorted(sizes, key=lambda s: s.proxies)
    groups = [size_group(shape, size) for size in ordered]
    if groups:
        groups[-1]["curve"] = curve(ordered)
    return groups
