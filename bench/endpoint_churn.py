"""Benchmark: a steady stream of endpoint changes to a connected fleet, against the transport floor.

N simulated SotW sidecars (default 1,000, and 250 and 500 for the scaling
curve) are connected to ``pilothouse serve`` on the push fan-out mesh
(``harness/mesh.py``: 100 ServiceEntries with WorkloadEntries, all visible to
every proxy). Then, for ``--duration`` seconds, ``--rate`` events a second
each move one WorkloadEntry to a new address by rewriting its file, services
in turn (``harness/churn.py``). For every event the time from its own file
write until every proxy has ACKed a ClusterLoadAssignment holding the new
address (or a later one of the same endpoint) is recorded, however many
events one push carried; p50/p90/p99 over events (the
slowest proxy of each) and over every (event, proxy) are reported, with EDS
responses and bytes a second received by the fleet, errors, and the server's
CPU. pilothouse is given ``PILOTHOUSE_FILE_DEBOUNCE``,
``PILOTHOUSE_DEBOUNCE_AFTER`` and ``PILOTHOUSE_DEBOUNCE_MAX``: at 50 events a
second there is never 100 ms of quiet, so without a short ``DEBOUNCE_MAX``
(istiod's default is 10 s) every batch would wait 10 s. Figures beyond
debounce subtract the file debounce and that push window.

The baseline, in the same run, is the transport floor (``harness/floor.py``)
with its own fleet of N, making the same kind of events at the same rate and
pushing the same ClusterLoadAssignment bytes (pilothouse's, with the address
replaced), batched by pilothouse's debounce rules (``churn_floor.py``). For
each fleet size pilothouse's run comes first, then the floor's. Issue #17's target, on
the 1,000-proxy row (``harness/targets.py``): event p99 ≤ 1 s, no event missed.

With ``--workers N`` (N > 1) a third side runs after those two at each size:
``serve --workers N`` on a copy of the mesh of its own (so the single-process server
sees none of its events), the same fleet size and the same churn; its figures are the
``pilothouse_workers_N_*`` fields (CPU: every worker's). The kernel spreads the fleet's
channels over the workers (SO_REUSEPORT), not always evenly. Every server starts at the
beginning, side by side, and stays idle until its side's turn.

Every side's figures (``SIDE_ROWS``) are medians of its runs' figures; ratios are
floor ÷ pilothouse on the p99 beyond debounce (each side minus the batching it was
given): 1.0 means as fast as the bare transport. One run of each side is ``churn_runs.py``.

Run: ``.venv/bin/python bench/endpoint_churn.py`` (``--sizes 250,500,1000
--rate 50 --duration 20``); one JSON line per fleet size on stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.churn_runs import (
    SETTLE,
    ChurnOptions,
    ChurnRun,
    Churns,
    as_three,
    pilothouse_environment,
    serving_workers,
)
from bench.harness.figures import Row, emit, medians, ms, note, per_side, ratio, rounded
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed, sizes
from bench.harness.rounds import alternate, percentiles
from bench.harness.servers import raise_open_file_limit, serving_floor, serving_pilothouse
from bench.harness.targets import judged

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
class ChurnSize:
    """Every side's runs at one fleet size."""

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


def _triple(
    runs: Sequence[ChurnRun], figure: Callable[[ChurnRun], tuple[float, float, float] | None]
) -> tuple[float, float, float] | None:
    """The median over runs of a p50/p90/p99 figure some runs may lack (None: all lack it)."""
    present = [value for value in map(figure, runs) if value is not None]
    if not present:
        return None
    return as_three(tuple(float(statistics.median(v[i] for v in present)) for i in range(3)))


def _errors(runs: Sequence[ChurnRun]) -> str:
    return (
        f"events missed {max(r.missed for r in runs)} (worst run), stream failures "
        f"{sum(r.stream_failures for r in runs)}, reconnects "
        f"{sum(r.reconnects for r in runs)}, NACKs {sum(r.nacks for r in runs)}"
    )


def _at(figure: Callable[[ChurnRun], Sequence[float]], index: int) -> Callable[[ChurnRun], float]:
    """One of a run's p50/p90/p99 (or quarter) figures."""

    def read(run: ChurnRun) -> float:
        return figure(run)[index]

    return read


QUARTILES = ((0, "p50"), (1, "p90"), (2, "p99"))
NOT_JUDGED = "none here (issue #17 judges 50 changes/s to 1,000 proxies)"
SIDE_ROWS: tuple[Row, ...] = (
    medians("{side}_events", lambda r: r.events, round),
    medians("{side}_events_per_s", lambda r: r.rate, rounded(1)),
    *(medians(f"{{side}}_event_{q}_ms", _at(lambda r: r.completion, i), ms) for i, q in QUARTILES),
    medians("{side}_event_max_ms", lambda r: r.completion_max, ms),
    ("{side}_event_p50_by_quarter_of_the_run_ms", lambda runs: list(map(ms, _quarters(runs)))),
    *(
        medians(f"{{side}}_per_proxy_{q}_ms", _at(lambda r: r.per_proxy, i), ms)
        for i, q in QUARTILES
    ),
    medians("{side}_eds_responses_per_s", lambda r: r.responses_per_second, round),
    medians(
        "{side}_eds_responses_per_proxy_per_s",
        lambda r: r.responses_per_second / r.proxies,
        rounded(2),
    ),
    medians("{side}_eds_mb_per_s", lambda r: r.bytes_per_second / 1e6, rounded(2)),
    medians("{side}_server_cpu_cores", lambda r: r.cpu_cores, rounded(2)),
    medians("{side}_server_idle_cpu_cores", lambda r: r.idle_cpu_rate, rounded(3)),
    medians(
        "load_generator_cpu_cores_{side}_run",
        lambda r: r.load_generator_cpu_seconds / r.window,
        rounded(2),
    ),
    medians(
        "{side}_server_cpu_ms_per_event", lambda r: 1000 * r.cpu_seconds / r.events, rounded(1)
    ),
    ("{side}_errors", _errors),
)
"""Every side's figures, medians of its runs' figures."""


def _quarters(runs: Sequence[ChurnRun]) -> list[float]:
    return [_median(runs, _at(lambda r: r.completion_by_quarter, q)) for q in range(4)]


def _p99(runs: Sequence[ChurnRun]) -> float:
    return _median(runs, lambda r: r.completion[2])


def _pilothouse(side: str, runs: Sequence[ChurnRun], debounce: float) -> dict[str, Any]:
    """A pilothouse side's figures: every side's, and those beyond its debounce."""
    figures = per_side(SIDE_ROWS, {side: runs})
    for i, q in ((0, "p50"), (2, "p99")):
        beyond = ms(_median(runs, _at(lambda r: r.completion, i)) - debounce)
        figures[f"{side}_event_{q}_beyond_debounce_ms"] = beyond
    return figures


def size_group(shape: ChurnOptions, size: ChurnSize) -> dict[str, Any]:
    ours, floor = size.ours, size.floor
    debounce = shape.pilothouse_debounce
    group: dict[str, Any] = {
        "benchmark": f"endpoint_churn: {shape.rate:g} endpoint changes/s for "
        f"{shape.duration:g} s to {size.proxies} SotW proxies",
        "baseline": BASELINE,
        "services_per_proxy": shape.services,
        "runs": f"{len(ours)} per server (median of the runs' figures)",
        "streams_per_connection": shape.streams_per_channel,
        "event": "one WorkloadEntry's address changes (its file rewritten); services in turn",
        "latency_definition": LATENCY_DEFINITION,
        "debounce_ms": (
            f"{ms(debounce)} (file {ms(shape.file_debounce)} + push window "
            f"{ms(shape.push_window)}: PILOTHOUSE_FILE_DEBOUNCE={shape.file_debounce:g}, "
            f"PILOTHOUSE_DEBOUNCE_AFTER={shape.debounce_after:g}, "
            f"PILOTHOUSE_DEBOUNCE_MAX={shape.debounce_max:g}, EDS debounce on); the floor's "
            "events wait in the same push window (batched outside it), which its push → ACK "
            "figures leave out"
        ),
        **_pilothouse("pilothouse", ours, debounce),
    }
    measured = _triple(ours, lambda r: r.beyond_measured)
    if measured is not None:
        group["pilothouse_event_p50_beyond_measured_debounce_ms"] = ms(measured[0])
        group["pilothouse_event_p99_beyond_measured_debounce_ms"] = ms(measured[2])
        group["beyond_measured_debounce_definition"] = (
            "per event: its time minus its own file write → config event time (from "
            "pilothouse's log) and the push window"
        )
    watch = [latency for run in ours for latency in run.watch]
    if watch:
        p50, p99 = percentiles(watch, (50.0, 99.0))
        group["pilothouse_file_to_config_event_p50_ms"] = ms(p50)
        group["pilothouse_file_to_config_event_p99_ms"] = ms(p99)
    if size.workers:
        side = f"pilothouse_workers_{size.worker_count}"
        group |= _pilothouse(side, size.workers, debounce)
        group[f"{side}_p99_to_one_worker"] = round(_p99(size.workers) / _p99(ours), 2)
    group |= per_side(SIDE_ROWS, {"floor": floor})
    released = _triple(floor, lambda r: r.from_release)
    if released is not None:
        for value, q in zip(released, ("p50", "p90", "p99"), strict=True):
            group[f"floor_push_to_ack_{q}_ms"] = ms(value)
    group["floor_pushes_per_s"] = round(_median(floor, lambda r: r.floor_pushes / r.window), 2)
    group["floor_batches_released_on_gate_timeout"] = sum(r.floor_gate_timeouts for r in floor)
    floor_p99 = released[2] if released is not None else _p99(floor)
    group |= {
        "ratio_to_baseline": ratio(floor_p99, _p99(ours) - debounce),
        "ratio_definition": "floor event p99 from the push of its batch (push → ACK by "
        "every proxy) ÷ pilothouse event p99 beyond debounce (1 = as fast as the floor)",
        "pilothouse_events_missed": max(r.missed for r in ours),
    }
    return group | judged("endpoint_churn", group, NOT_JUDGED)


def figure_groups(shape: ChurnOptions, sizes: Sequence[ChurnSize]) -> list[dict[str, Any]]:
    """One group per size, smallest first; the largest also carries the scaling curve
    (``pilothouse_s``/``floor_s``: event p99 seconds)."""
    ordered = sorted(sizes, key=lambda s: s.proxies)
    groups = [size_group(shape, size) for size in ordered]
    if not groups:
        return groups
    groups[-1]["curve_figure"] = "event p99 seconds (pilothouse_s, floor_s), and p50"
    groups[-1]["curve"] = []
    for size in ordered:
        sides = {"pilothouse": size.ours, "floor": size.floor}
        point = {"proxies": size.proxies} | per_side((("{side}_s", _p99_s),), sides)
        point |= per_side((("{side}_p50_s", _p50_s),), sides)
        point["pilothouse_cpu_cores"] = round(_median(size.ours, lambda r: r.cpu_cores), 2)
        if size.workers:
            point[f"pilothouse_workers_{size.worker_count}_s"] = _p99_s(size.workers)
        groups[-1]["curve"].append(point)
    return groups


def _p99_s(runs: Sequence[ChurnRun]) -> float:
    return round(_p99(runs), 3)


def _p50_s(runs: Sequence[ChurnRun]) -> float:
    return round(_median(runs, lambda r: r.completion[0]), 3)


def _each(run: Callable[[], Awaitable[ChurnRun]]) -> Callable[[int], Awaitable[ChurnRun]]:
    """A side that runs the same way every round."""
    return lambda _: run()


async def run(options: ChurnOptions) -> None:
    note(f"open file limit {raise_open_file_limit()}")
    with tempfile.TemporaryDirectory(prefix="endpoint-churn-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()
        async with contextlib.AsyncExitStack() as stack:
            # every server starts at once; each is idle until its side's turn
            workers_sizes = options.sizes if options.workers > 1 else ()
            (ours, ours_target), (floor, floor_target, control), *workers = await asyncio.gather(
                serving_pilothouse(
                    stack, mesh.root, work / "pilothouse.log", pilothouse_environment(options)
                ),
                serving_floor(stack, work / "floor.log"),
                *(serving_workers(stack, options, work, n) for n in workers_sizes),
            )
            by_size = dict(zip(workers_sizes, workers, strict=True))
            churns = Churns(options, mesh, work, control)
            sides: dict[str, Callable[[int], Awaitable[ChurnRun]]] = {}
            for n in options.sizes:
                sides[f"pilothouse {n}"] = _each(
                    partial(churns.pilothouse, ours, ours_target, mesh, n)
                )
                sides[f"floor {n}"] = _each(partial(churns.floor, floor, floor_target, n))
                if n in by_size:
                    sides[f"workers {n}"] = _each(partial(churns.pilothouse, *by_size[n], n))
            runs = await alternate(options.runs, sides)
    sizes = [
        ChurnSize(
            tuple(runs[f"pilothouse {n}"]),
            tuple(runs[f"floor {n}"]),
            tuple(runs.get(f"workers {n}", ())),
            options.workers,
        )
        for n in options.sizes
    ]
    emit(figure_groups(options, sizes))


def parse_options(argv: list[str] | None = None) -> ChurnOptions:
    parser = fleet_parser(__doc__)
    parser.add_argument(
        "--sizes", type=sizes, default=(250, 500, 1000), help="fleet sizes, comma-separated"
    )
    parser.add_argument("--runs", type=int, default=1, help="churn runs per server and size")
    parser.add_argument("--rate", type=float, default=50.0, help="events per second")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of events")
    parser.add_argument("--file-debounce", type=float, default=0.05)
    parser.add_argument("--debounce-after", type=float, default=0.1)
    parser.add_argument(
        "--debounce-max",
        type=float,
        default=0.1,
        help="PILOTHOUSE_DEBOUNCE_MAX: under steady churn, how long a batch waits",
    )
    parser.add_argument("--connect-timeout", type=float, default=90.0)
    parser.add_argument(
        "--timeout", type=float, default=45.0, help="wait after the last event, seconds"
    )
    parser.add_argument(
        "--gate",
        type=float,
        default=5.0,
        help="floor: longest a batch waits for the previous one to reach every proxy",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="also churn `serve --workers N` (N > 1) at each size, after the other two",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=SETTLE,
        help="seconds of quiet after a fleet converged, and over which idle CPU is measured",
    )
    options = parsed(parser, ChurnOptions, argv)
    if options.runs < 1 or options.rate <= 0 or options.duration <= 0 or options.workers < 1:
        parser.error("--runs, --rate, --duration and --workers must be positive")
    return options


if __name__ == "__main__":
    asyncio.run(run(parse_options()))
