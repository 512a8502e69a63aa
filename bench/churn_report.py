"""The endpoint churn figures as the JSON objects ``run_all.py`` records, one per fleet size.

The headline is per event: the time from the event's own write to the moment
the slowest proxy ACKed a load assignment holding it (its p99 over the
run's events, against the issue's 1 s). With several runs, every figure is the
median of the runs' figures. Ratios are floor ÷ pilothouse, computed on the
p99 beyond debounce (each side minus the batching it was given), as in the
push fan-out benchmark: 1.0 means as fast as the bare transport.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.churn_runs import ChurnRun
from bench.harness.figures import ms as _ms
from bench.harness.figures import ratio
from bench.harness.rounds import percentiles

BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server pushing the same "
    "ClusterLoadAssignment bytes for the same events at the same rate to the same fleet, "
    "batched by pilothouse's debounce rules outside it (bench/churn_floor.py)"
)
LATENCY_DEFINITION = (
    "per event: from its own WorkloadEntry file write (floor: its own instant) until the "
    "slowest proxy has ACKed a ClusterLoadAssignment holding the event's address, or a later "
    "address of the same endpoint (a version that contains the change); events merged into "
    "one push each keep their own start. Every proxy sees every service, so every proxy "
    "should see every event"
)


@dataclass(frozen=True)
class ChurnShape:
    """The benchmark's set-up, as the report states it."""

    services: int
    rate: float
    duration: float
    file_debounce: float
    debounce_after: float
    debounce_max: float
    streams_per_channel: int
    target_p99: float

    @property
    def push_window(self) -> float:
        """The longest an event waits in the push debouncer under steady churn.

        A batch goes after ``debounce_after`` of quiet or ``debounce_max`` after its first
        event, whichever is sooner; when events come closer together than
        ``debounce_after`` there is no quiet, and ``debounce_max`` decides.
        """
        if self.debounce_after < 1.0 / self.rate:
            return min(self.debounce_after, self.debounce_max)
        return self.debounce_max

    @property
    def pilothouse_debounce(self) -> float:
        return self.file_debounce + self.push_window


@dataclass(frozen=True)
class ChurnSize:
    """Both servers' runs at one fleet size."""

    ours: tuple[ChurnRun, ...]
    floor: tuple[ChurnRun, ...]
    workers: tuple[ChurnRun, ...] = ()
    """``serve --workers N`` runs (none unless asked)."""
    worker_count: int = 1

    @property
    def proxies(self) -> int:
        return self.ours[0].proxies


def _median(runs: Sequence[ChurnRun], figure: Callable[[ChurnRun], float]) -> float:
    return float(statistics.median(figure(run) for run in runs))


def _quarter(runs: Sequence[ChurnRun], quarter: int) -> float:
    return _median(runs, lambda r: r.completion_by_quarter[quarter])


def verdict(p99: float, missed: int, target: float) -> str:
    if missed:
        return f"no: {missed} events never reached every proxy"
    if p99 <= target:
        return "yes"
    return f"no: missed by {_ms(p99 - target):.0f} ms ({p99 / target:.2f}× the target)"


def _triple(
    runs: Sequence[ChurnRun], figure: Callable[[ChurnRun], tuple[float, float, float] | None]
) -> tuple[float, float, float] | None:
    """The median over runs of a p50/p90/p99 figure some runs may lack (None: all lack it)."""
    present = [value for value in map(figure, runs) if value is not None]
    if not present:
        return None
    p50, p90, p99 = (float(statistics.median(v[i] for v in present)) for i in range(3))
    return p50, p90, p99


def _side(prefix: str, runs: Sequence[ChurnRun], debounce: float | None) -> dict[str, Any]:
    """One server's figures; ``debounce`` (pilothouse only) gives the beyond-debounce ones."""
    p50 = _median(runs, lambda r: r.completion[0])
    p99 = _median(runs, lambda r: r.completion[2])
    beyond: dict[str, Any] = {}
    if debounce is not None:
        beyond = {
            f"{prefix}_event_p50_beyond_debounce_ms": _ms(p50 - debounce),
            f"{prefix}_event_p99_beyond_debounce_ms": _ms(p99 - debounce),
        }
    return {
        f"{prefix}_events": round(_median(runs, lambda r: r.events)),
        f"{prefix}_events_per_s": round(_median(runs, lambda r: r.rate), 1),
        f"{prefix}_event_p50_ms": _ms(p50),
        f"{prefix}_event_p90_ms": _ms(_median(runs, lambda r: r.completion[1])),
        f"{prefix}_event_p99_ms": _ms(p99),
        f"{prefix}_event_max_ms": _ms(_median(runs, lambda r: r.completion_max)),
        f"{prefix}_event_p50_by_quarter_of_the_run_ms": [_ms(_quarter(runs, q)) for q in range(4)],
        **beyond,
        f"{prefix}_per_proxy_p50_ms": _ms(_median(runs, lambda r: r.per_proxy[0])),
        f"{prefix}_per_proxy_p90_ms": _ms(_median(runs, lambda r: r.per_proxy[1])),
        f"{prefix}_per_proxy_p99_ms": _ms(_median(runs, lambda r: r.per_proxy[2])),
        f"{prefix}_eds_responses_per_s": round(_median(runs, lambda r: r.responses_per_second)),
        f"{prefix}_eds_responses_per_proxy_per_s": round(
            _median(runs, lambda r: r.responses_per_second / r.proxies), 2
        ),
        f"{prefix}_eds_mb_per_s": round(_median(runs, lambda r: r.bytes_per_second) / 1e6, 2),
        f"{prefix}_server_cpu_cores": round(_median(runs, lambda r: r.cpu_cores), 2),
        f"{prefix}_server_idle_cpu_cores": round(_median(runs, lambda r: r.idle_cpu_rate), 3),
        f"load_generator_cpu_cores_{prefix}_run": round(
            _median(runs, lambda r: r.load_generator_cpu_seconds / r.window), 2
        ),
        f"{prefix}_server_cpu_ms_per_event": round(
            _median(runs, lambda r: 1000 * r.cpu_seconds / r.events), 1
        ),
        f"{prefix}_errors": (
            f"events missed {max(r.missed for r in runs)} (worst run), stream failures "
            f"{sum(r.stream_failures for r in runs)}, reconnects "
            f"{sum(r.reconnects for r in runs)}, NACKs {sum(r.nacks for r in runs)}"
        ),
    }


def size_group(shape: ChurnShape, size: ChurnSize) -> dict[str, Any]:
    ours, floor = size.ours, size.floor
    n = size.proxies
    window = shape.push_window
    group: dict[str, Any] = {
        "benchmark": f"endpoint_churn: {shape.rate:g} endpoint changes/s for "
        f"{shape.duration:g} s to {n} SotW proxies",
        "baseline": BASELINE,
        "services_per_proxy": shape.services,
        "runs": f"{len(ours)} per server (median of the runs' figures)",
        "streams_per_connection": shape.streams_per_channel,
        "event": "one WorkloadEntry's address changes (its file rewritten); services in turn",
        "latency_definition": LATENCY_DEFINITION,
        "debounce_ms": (
            f"{_ms(shape.pilothouse_debounce)} (file {_ms(shape.file_debounce)} + push window "
            f"{_ms(window)}: PILOTHOUSE_FILE_DEBOUNCE={shape.file_debounce:g}, "
            f"PILOTHOUSE_DEBOUNCE_AFTER={shape.debounce_after:g}, "
            f"PILOTHOUSE_DEBOUNCE_MAX={shape.debounce_max:g}, EDS debounce on); the floor's "
            "events wait in the same push window (batched outside it), which its push → ACK "
            "figures leave out"
        ),
    }
    group.update(_side("pilothouse", ours, shape.pilothouse_debounce))
    measured = _triple(ours, lambda r: r.beyond_measured)
    if measured is not None:
        group["pilothouse_event_p50_beyond_measured_debounce_ms"] = _ms(measured[0])
        group["pilothouse_event_p99_beyond_measured_debounce_ms"] = _ms(measured[2])
        group["beyond_measured_debounce_definition"] = (
            "per event: its time minus its own file write → config event time (from "
            "pilothouse's log) and the push window"
        )
    watch = [latency for run in ours for latency in run.watch]
    if watch:
        p50, p99 = percentiles(watch, (50.0, 99.0))
        group["pilothouse_file_to_config_event_p50_ms"] = _ms(p50)
        group["pilothouse_file_to_config_event_p99_ms"] = _ms(p99)
    if size.workers:
        prefix = f"pilothouse_workers_{size.worker_count}"
        group.update(_side(prefix, size.workers, shape.pilothouse_debounce))
        workers_p99 = _median(size.workers, lambda r: r.completion[2])
        group[f"{prefix}_p99_to_one_worker"] = round(
            workers_p99 / _median(ours, lambda r: r.completion[2]), 2
        )
    group.update(_side("floor", floor, None))
    released = _triple(floor, lambda r: r.from_release)
    if released is not None:
        group["floor_push_to_ack_p50_ms"] = _ms(released[0])
        group["floor_push_to_ack_p90_ms"] = _ms(released[1])
        group["floor_push_to_ack_p99_ms"] = _ms(released[2])
    group["floor_pushes_per_s"] = round(_median(floor, lambda r: r.floor_pushes / r.window), 2)
    group["floor_batches_released_on_gate_timeout"] = sum(r.floor_gate_timeouts for r in floor)
    ours_p99 = _median(ours, lambda r: r.completion[2])
    floor_p99 = released[2] if released is not None else _median(floor, lambda r: r.completion[2])
    group.update(
        {
            "ratio_to_baseline": ratio(floor_p99, ours_p99 - shape.pilothouse_debounce),
            "ratio_definition": "floor event p99 from the push of its batch (push → ACK by "
            "every proxy) ÷ pilothouse event p99 beyond debounce (1 = as fast as the floor)",
            "target": f"event p99 ≤ {_ms(shape.target_p99):.0f} ms (debounce included), "
            "no event missed",
            "target_met": verdict(ours_p99, max(r.missed for r in ours), shape.target_p99),
        }
    )
    return group


def curve(sizes: Sequence[ChurnSize]) -> list[dict[str, Any]]:
    points = []
    for size in sorted(sizes, key=lambda s: s.proxies):
        ours_p99 = _median(size.ours, lambda r: r.completion[2])
        floor_p99 = _median(size.floor, lambda r: r.completion[2])
        points.append(
            {
                "proxies": size.proxies,
                "pilothouse_s": round(ours_p99, 3),
                "floor_s": round(floor_p99, 3),
                "pilothouse_p50_s": round(_median(size.ours, lambda r: r.completion[0]), 3),
                "floor_p50_s": round(_median(size.floor, lambda r: r.completion[0]), 3),
                "pilothouse_cpu_cores": round(_median(size.ours, lambda r: r.cpu_cores), 2),
            }
        )
        if size.workers:
            points[-1][f"pilothouse_workers_{size.worker_count}_s"] = round(
                _median(size.workers, lambda r: r.completion[2]), 3
            )
    return points


def figure_groups(shape: ChurnShape, sizes: Sequence[ChurnSize]) -> list[dict[str, Any]]:
    """One group per size, smallest first; the largest also carries the scaling curve
    (``pilothouse_s``/``floor_s``: event p99 seconds)."""
    ordered = sorted(sizes, key=lambda s: s.proxies)
    groups = [size_group(shape, size) for size in ordered]
    if groups:
        groups[-1]["curve_figure"] = "event p99 seconds (pilothouse_s, floor_s), and p50"
        groups[-1]["curve"] = curve(ordered)
    return groups
