"""The REST discovery benchmark's figures: rounds per server reduced to medians, compared.

Each server is measured in several rounds, alternating with the other one, so both
see the same machine; every figure of a server is the median of its rounds' values.
The baseline is sovereign; ``ratio_to_baseline`` is pilothouse's requests per second
over sovereign's, and the target is a ratio of at least ``TARGET_RATIO``.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from bench.rest_load import LoadRound

TARGET_RATIO: Final = 20.0


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in 0..1) of ``values``; nan when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(math.ceil(fraction * len(ordered)), 1)
    return ordered[rank - 1]


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.median(finite) if finite else math.nan


def _round(value: float, digits: int) -> float | None:
    """Rounded for the JSON line; None (null) instead of nan."""
    return None if math.isnan(value) else round(value, digits)


@dataclass(frozen=True, slots=True)
class Summary:
    """One server's rounds of one kind, reduced to medians."""

    rounds: int
    requests_per_second: float
    megabytes_per_second: float
    p50_ms: float
    p99_ms: float
    cpu_ms_per_request: float
    """Server CPU (its whole process group) per good answer."""
    client_cpu_share: float
    """Client CPU seconds per wall second: near 1 means the client was the limit."""
    response_bytes: float
    good: int
    errors: Counter[str]


def summarise(rounds: Sequence[LoadRound]) -> Summary:
    errors: Counter[str] = Counter()
    for one in rounds:
        errors.update(one.errors)

    def per_round(measure: Any) -> float:
        return _median([measure(r) for r in rounds])

    return Summary(
        rounds=len(rounds),
        requests_per_second=per_round(lambda r: r.ok / r.seconds if r.seconds else math.nan),
        megabytes_per_second=per_round(
            lambda r: r.body_bytes / r.seconds / 1e6 if r.seconds else math.nan
        ),
        p50_ms=per_round(lambda r: percentile(r.latencies, 0.50) * 1000),
        p99_ms=per_round(lambda r: percentile(r.latencies, 0.99) * 1000),
        cpu_ms_per_request=per_round(lambda r: r.server_cpu / r.ok * 1000 if r.ok else math.nan),
        client_cpu_share=per_round(lambda r: r.client_cpu / r.seconds if r.seconds else math.nan),
        response_bytes=per_round(lambda r: r.body_bytes / r.ok if r.ok else math.nan),
        good=sum(r.ok for r in rounds),
        errors=errors,
    )


def ratio(ours: float, baseline: float) -> float:
    if math.isnan(ours) or math.isnan(baseline) or baseline <= 0:
        return math.nan
    return ours / baseline


def verdict(value: float, target: float = TARGET_RATIO) -> dict[str, Any]:
    """``target``, ``target_met`` and, when missed, by how much."""
    met = not math.isnan(value) and value >= target
    out: dict[str, Any] = {"target": f"ratio ≥ {target:g}×", "target_met": "yes" if met else "no"}
    if not met:
        if math.isnan(value):
            out["target_missed_by"] = "not measured"
        else:
            short = target - value
            out["target_missed_by"] = (
                f"{short:.1f}× short ({short / target:.0%} below the target; "
                f"pilothouse needs {target / value:.2f}× its throughput)"
            )
    return out


def _errors(summary: Summary) -> dict[str, int] | int:
    return dict(summary.errors) if summary.errors else 0


def figures(prefix: str, summary: Summary) -> dict[str, Any]:
    return {
        f"{prefix}_rps": _round(summary.requests_per_second, 1),
        f"{prefix}_mb_per_s": _round(summary.megabytes_per_second, 2),
        f"{prefix}_p50_ms": _round(summary.p50_ms, 2),
        f"{prefix}_p99_ms": _round(summary.p99_ms, 2),
        f"{prefix}_cpu_ms_per_request": _round(summary.cpu_ms_per_request, 3),
        f"{prefix}_client_cpu_share": _round(summary.client_cpu_share, 2),
        f"{prefix}_response_bytes": _round(summary.response_bytes, 0),
        f"{prefix}_good_answers": summary.good,
        f"{prefix}_errors": _errors(summary),
    }


@dataclass(frozen=True, slots=True)
class Setup:
    """How the run was made, for the record."""

    outbound: int
    clusters: int
    connections: int
    rounds: int
    seconds: float
    request_bytes: int
    sovereign: str
    workers: int
    client: str = "lean"


def report(
    setup: Setup,
    full: tuple[Summary, Summary],
    not_modified: tuple[Summary, Summary] | None,
) -> dict[str, Any]:
    """The JSON object for ``run_all``: pilothouse against sovereign, then the verdict."""
    ours, theirs = full
    processes = (
        "one uvicorn process"
        if setup.workers == 1
        else f"gunicorn with {setup.workers} uvicorn workers"
    )
    main = ratio(ours.requests_per_second, theirs.requests_per_second)
    out: dict[str, Any] = {
        "benchmark": f"rest_discovery: pilothouse vs sovereign, {setup.outbound} clusters",
        "baseline": (
            f"sovereign {setup.sovereign} ({processes}, Python template, orjson, access log "
            "off) serving the same clusters; same client, same run, rounds alternating"
        ),
        "clusters_per_response": (
            f"{setup.clusters} ({setup.outbound} outbound + "
            f"{setup.clusters - setup.outbound} pilothouse always adds)"
        ),
        "load": (
            f"POST /v3/discovery:clusters, {setup.client} client, "
            f"{setup.connections} keep-alive connections, "
            f"{setup.rounds} rounds × {setup.seconds:g} s per server, "
            f"request {setup.request_bytes} B; figures are medians of the rounds"
        ),
        **figures("pilothouse", ours),
        **figures("sovereign", theirs),
        "cpu_ratio_sovereign_to_pilothouse": _round(
            ratio(theirs.cpu_ms_per_request, ours.cpu_ms_per_request), 1
        ),
    }
    if not_modified is not None:
        ours_304, theirs_304 = not_modified
        out["not_modified_pilothouse_rps"] = _round(ours_304.requests_per_second, 1)
        out["not_modified_sovereign_rps"] = _round(theirs_304.requests_per_second, 1)
        out["not_modified_ratio"] = _round(
            ratio(ours_304.requests_per_second, theirs_304.requests_per_second), 2
        )
        out["not_modified_pilothouse_cpu_ms_per_request"] = _round(ours_304.cpu_ms_per_request, 3)
        out["not_modified_sovereign_cpu_ms_per_request"] = _round(theirs_304.cpu_ms_per_request, 3)
        out["not_modified_errors"] = {
            "pilothouse": _errors(ours_304),
            "sovereign": _errors(theirs_304),
        }
    out["ratio_to_baseline"] = _round(main, 2)
    out["ratio_definition"] = "pilothouse requests/s ÷ sovereign requests/s (200 answers, CDS)"
    out.update(verdict(main))
    return out
