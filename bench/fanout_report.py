"""The push fan-out figures as the JSON objects ``run_all.py`` records, one per figure group.

Every ratio is floor ÷ pilothouse (time or memory): 1.0 means pilothouse is as
fast or as lean as the bare transport; the issue's target is at least 0.5. The
fan-out spread of a push (the last proxy's ACK time minus the first's) has its own
target: the EDS spread at least 0.7 of the floor's at 1,000 proxies (floor spread ÷
pilothouse spread ≥ 0.7). With ``serve --workers N`` the floor runs in N processes
sharing the port, and every figure is the whole process tree's.
"""

from __future__ import annotations

import statistics
from typing import Any, Protocol

from bench.harness.figures import ms as _ms
from bench.harness.figures import ratio as _ratio
from bench.harness.push import PushSummary

BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server pushing "
    "the same pre-encoded resource bytes to the same N streams"
)
P99_TARGET = 0.5
RATIO_TARGET = 0.5
KIB_TARGET = 100.0
SPREAD_TARGET = 0.7
SPREAD_TARGET_PROXIES = 1000
SPREAD_TARGET_TEXT = "EDS spread ≥ 0.7 of the floor's at 1,000 proxies"


def baseline(workers: int) -> str:
    """The baseline's description for ``serve --workers N``: the floor in as many
    processes (the same process count is the fair comparison)."""
    if workers == 1:
        return BASELINE
    return BASELINE.replace(
        "a bare grpc.aio ADS server",
        f"a bare grpc.aio ADS server in {workers} processes sharing the port with "
        f"SO_REUSEPORT (as serve --workers {workers})",
    )


def spread_verdict(ratio: float) -> str:
    """Whether floor spread ÷ pilothouse spread meets the target, or by how much not."""
    if ratio >= SPREAD_TARGET:
        return "yes"
    return f"no (ratio {ratio}: missed by {SPREAD_TARGET - ratio:.2f})"


class Shape(Protocol):
    """The benchmark options the report reads."""

    @property
    def proxies(self) -> int: ...
    @property
    def services(self) -> int: ...
    @property
    def runs(self) -> int: ...
    @property
    def delta(self) -> bool: ...
    @property
    def file_debounce(self) -> float: ...
    @property
    def debounce_after(self) -> float: ...
    @property
    def workers(self) -> int: ...


class Figures(Protocol):
    """One server's measurements (``push_fanout.ServerFigures``)."""

    @property
    def connect_seconds(self) -> float: ...
    @property
    def rss_empty_kib(self) -> int: ...
    @property
    def rss_connected_kib(self) -> int: ...
    @property
    def rss_double_kib(self) -> int | None: ...
    @property
    def pushes(self) -> dict[str, PushSummary]: ...
    @property
    def watch_latency(self) -> dict[str, list[float]]: ...
    @property
    def connections(self) -> list[int]: ...


def _responses(summary: PushSummary) -> str:
    """Responses the fleet received per push, by type, with their total size."""
    return ", ".join(
        f"{name} {count} ({summary.received[name] / 1e6:.2f} MB)"
        for name, count in summary.responses.items()
        if count
    )


def _push_group(
    kind: str, title: str, shape: Shape, ours: Figures, floor: Figures
) -> dict[str, Any]:
    mine = ours.pushes[kind]
    base = floor.pushes[kind]
    debounce = shape.file_debounce + shape.debounce_after
    beyond_p50 = mine.p50 - debounce
    beyond_p99 = mine.p99 - debounce
    ratio = _ratio(base.p99, beyond_p99)
    targets = [f"ratio ≥ {RATIO_TARGET}"]
    met = ratio >= RATIO_TARGET
    if kind == "eds":
        targets.insert(0, f"p99 beyond debounce ≤ {_ms(P99_TARGET):.0f} ms")
        met = met and beyond_p99 <= P99_TARGET
    group: dict[str, Any] = {
        "benchmark": f"push_fanout: {title} ({_protocol(shape)}, {shape.proxies} proxies)",
        "baseline": baseline(shape.workers),
        "services_per_proxy": shape.services,
        "runs": f"{mine.runs} (median of the runs' figures)",
        "debounce_ms": f"{_ms(debounce)} (file {_ms(shape.file_debounce)} + push "
        f"{_ms(shape.debounce_after)})",
        "pilothouse_p50_ms": _ms(mine.p50),
        "pilothouse_p99_ms": _ms(mine.p99),
        "pilothouse_last_ack_ms": _ms(mine.last),
        "pilothouse_p50_beyond_debounce_ms": _ms(beyond_p50),
        "pilothouse_p99_beyond_debounce_ms": _ms(beyond_p99),
    }
    latencies = ours.watch_latency.get(kind, [])
    if len(latencies) == len(mine.p99_runs):
        # The file watcher's actual share, read from pilothouse's log (millisecond stamps):
        # p99 minus that and the push debounce is what the push itself took.
        group["pilothouse_file_to_config_event_ms"] = _ms(statistics.median(latencies))
        group["pilothouse_p99_beyond_measured_debounce_ms"] = _ms(
            statistics.median(
                p - w - shape.debounce_after for p, w in zip(mine.p99_runs, latencies, strict=True)
            )
        )
    group.update(
        {
            "floor_p50_ms": _ms(base.p50),
            "floor_p99_ms": _ms(base.p99),
            "floor_last_ack_ms": _ms(base.last),
            "pilothouse_spread_ms": _ms(mine.spread),
            "floor_spread_ms": _ms(base.spread),
            "spread_ratio_floor_to_pilothouse": _ratio(base.spread, mine.spread),
            "pilothouse_server_cpu_ms_per_push": _ms(mine.cpu_seconds),
            "floor_server_cpu_ms_per_push": _ms(base.cpu_seconds),
            "cpu_ratio_floor_to_pilothouse": _ratio(base.cpu_seconds, mine.cpu_seconds),
            "responses_per_push_pilothouse": _responses(mine),
            "responses_per_push_floor": _responses(base),
            "ratio_to_baseline": ratio,
            "ratio_definition": (
                "floor p99 ÷ pilothouse p99 beyond debounce (1 = as fast as the floor)"
            ),
            "target": ", ".join(targets),
            "target_met": "yes" if met else "no",
        }
    )
    return group


def _per_connection(figures: Figures, proxies: int) -> float:
    return (figures.rss_connected_kib - figures.rss_empty_kib) / proxies


def _slope(figures: Figures, proxies: int) -> float | None:
    if figures.rss_double_kib is None:
        return None
    return (figures.rss_double_kib - figures.rss_connected_kib) / proxies


def _memory_group(shape: Shape, ours: Figures, floor: Figures) -> dict[str, Any]:
    n = shape.proxies
    mine = _per_connection(ours, n)
    base = _per_connection(floor, n)
    group: dict[str, Any] = {
        "benchmark": f"push_fanout: server RSS per idle connection ({_protocol(shape)})",
        "baseline": baseline(shape.workers),
        "pilothouse_rss_no_proxies_mib": round(ours.rss_empty_kib / 1024, 1),
        f"pilothouse_rss_{n}_proxies_mib": round(ours.rss_connected_kib / 1024, 1),
        "pilothouse_kib_per_connection": round(mine, 1),
    }
    slope = _slope(ours, n)
    if slope is not None and ours.rss_double_kib is not None:
        group[f"pilothouse_rss_{2 * n}_proxies_mib"] = round(ours.rss_double_kib / 1024, 1)
        group[f"pilothouse_kib_per_connection_{n}_to_{2 * n}"] = round(slope, 1)
    group["floor_rss_no_proxies_mib"] = round(floor.rss_empty_kib / 1024, 1)
    group[f"floor_rss_{n}_proxies_mib"] = round(floor.rss_connected_kib / 1024, 1)
    group["floor_kib_per_connection"] = round(base, 1)
    floor_slope = _slope(floor, n)
    if floor_slope is not None:
        group[f"floor_kib_per_connection_{n}_to_{2 * n}"] = round(floor_slope, 1)
    group["ratio_to_baseline"] = _ratio(base, mine)
    group["ratio_definition"] = "floor KiB per connection ÷ pilothouse KiB per connection"
    group["target"] = f"≤ {KIB_TARGET:.0f} KiB per idle connection"
    worst = max(mine, slope if slope is not None else mine)
    group["target_met"] = "yes" if worst <= KIB_TARGET else "no"
    return group


def _connect_group(shape: Shape, ours: Figures, floor: Figures) -> dict[str, Any]:
    return {
        "benchmark": f"push_fanout: {shape.proxies} proxies connect and converge "
        f"({_protocol(shape)})",
        "baseline": baseline(shape.workers),
        "pilothouse_seconds": round(ours.connect_seconds, 2),
        "floor_seconds": round(floor.connect_seconds, 2),
        "ratio_to_baseline": _ratio(floor.connect_seconds, ours.connect_seconds),
        "ratio_definition": "floor seconds ÷ pilothouse seconds",
        "pilothouse_connections_per_process": " / ".join(map(str, ours.connections)) or None,
        "floor_connections_per_process": " / ".join(map(str, floor.connections)) or None,
    }


def _spread_group(shape: Shape, ours: Figures, floor: Figures) -> dict[str, Any]:
    """The fan-out spread of both pushes, and the EDS spread's target."""
    group: dict[str, Any] = {
        "benchmark": f"push_fanout: fan-out spread, last − first proxy ({_protocol(shape)}, "
        f"{shape.proxies} proxies)",
        "baseline": baseline(shape.workers),
        "headline": "pilothouse_eds_spread_ms",
    }
    for kind in ("eds", "cds"):
        mine, base = ours.pushes[kind].spread, floor.pushes[kind].spread
        group[f"pilothouse_{kind}_spread_ms"] = _ms(mine)
        group[f"floor_{kind}_spread_ms"] = _ms(base)
        group[f"{kind}_spread_ratio_floor_to_pilothouse"] = _ratio(base, mine)
    ratio = group["eds_spread_ratio_floor_to_pilothouse"]
    group["ratio_to_baseline"] = ratio
    group["ratio_definition"] = (
        "EDS: floor spread ÷ pilothouse spread (spread = last proxy's ACK time − first "
        "proxy's, one push; median of the runs)"
    )
    group["target"] = SPREAD_TARGET_TEXT
    if shape.proxies == SPREAD_TARGET_PROXIES:
        group["target_met"] = spread_verdict(ratio)
    else:
        group["target_met"] = f"not judged here ({shape.proxies} proxies)"
    return group


def _protocol(shape: Shape) -> str:
    protocol = "delta" if shape.delta else "SotW"
    return protocol if shape.workers == 1 else f"{protocol}, serve --workers {shape.workers}"


def figure_groups(shape: Shape, ours: Figures, floor: Figures) -> list[dict[str, Any]]:
    return [
        _push_group("eds", "EDS change to every proxy", shape, ours, floor),
        _push_group("cds", "CDS change to every proxy", shape, ours, floor),
        _spread_group(shape, ours, floor),
        _memory_group(shape, ours, floor),
        _connect_group(shape, ours, floor),
    ]
