"""Benchmark: 2,000 sidecars connect at once with admission control on, against it off.

The connect storm of ``connect_storm.py`` (N simulated SotW sidecars, default 2,000,
start their ADS streams at the same instant against ``pilothouse serve`` just started on
the push fan-out mesh, 100 services each proxy sees, and the storm lasts until every
proxy has converged) against fresh servers with the stream rate limit at ``--rate`` new
streams a second (default 250, in bursts of up to 25: the defaults), once for each
``--waits`` (default 1 s, istiod's, which refuses most of a storm of 2,000, and 10 s,
the default, which queues the whole storm at 250 a second), and, as the baseline in the same run,
with the limit off (``PILOTHOUSE_XDS_ADMISSION_RATE=0``). Refused proxies reconnect
with Envoy's backoff (jittered, 0.5 s to 30 s), as real sidecars do.

Figures per side (medians over ``--runs`` rounds): seconds until every proxy converged,
per-proxy p50/p99, the most streams admitted in any one second (from the moment each
stream's token was taken, which the server logs with it) against the configured rate,
the mean admission rate, refusals, the server's peak RSS and CPU time. Issue #17's
target, on the row with the admission defaults (``harness/targets.py``): a storm of 2,000
converges within 2,000 ÷ rate + 2 s (10 s at 250 a second), every proxy converged; every
row also checks that the rate was never exceeded. Ratio = seconds with the limit off ÷
seconds with it on (below 1: the limit costs that much time).

The server runs with ``--log-level info,xds.admission:debug`` and writes one line per
stream it admits (``xds stream admitted at=<seconds since the epoch>``, the moment its
token was taken, to the microsecond) and per stream it refuses (``xds stream refused
reason=...``); ``busiest_window`` is the most admissions in any half-open one-second span.

Run: ``.venv/bin/python bench/admission_storm.py`` (``--proxies 2000 --rate 250
--waits 1,10 --runs 2``); one JSON line per wait on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import math
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import Row, emit, mib, note, per_side
from bench.harness.mesh import FanoutMesh
from bench.harness.options import fleet_parser, parsed
from bench.harness.rounds import alternate, median
from bench.harness.servers import raise_open_file_limit, serving_pilothouse
from bench.harness.storm import STORM_ROWS, StormRun, storm_on
from bench.harness.targets import judged
from pilothouse.settings import AdmissionSettings

LOG_LEVEL = "info,xds.admission:debug"
NOT_JUDGED = "none here (issue #17 judges 2,000 proxies at the admission defaults)"


@dataclass(frozen=True)
class Options:
    proxies: int
    rate: float
    burst: int
    waits: tuple[float, ...]
    runs: int
    services: int
    namespaces: int
    endpoints: int
    streams_per_channel: int
    timeout: float


_STAMP = r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z debug xds\.admission "
_ADMITTED = re.compile(_STAMP + r"xds stream admitted at=(\d+\.\d+)", re.MULTILINE)
_REFUSED = re.compile(_STAMP + r"xds stream refused reason=(\w+)", re.MULTILINE)


def admitted_times(log: str) -> list[float]:
    """When each stream was admitted (seconds since the epoch), in order."""
    return sorted(float(found.group(2)) for found in _ADMITTED.finditer(log))


def refusals(log: str) -> Counter[str]:
    """Refused streams by reason."""
    return Counter(found.group(2) for found in _REFUSED.finditer(log))


def busiest_window(times: Sequence[float], length: float = 1.0) -> int:
    """The most of ``times`` (sorted) within any half-open span ``[t, t + length)``."""
    most = 0
    for index, start in enumerate(times):
        # the window that starts at an admission is the fullest among those around it
        end = bisect.bisect_left(times, start + length - 1e-9, lo=index)
        most = max(most, end - index)
    return most


@dataclass(frozen=True)
class Admissions:
    """One storm's admissions as the server logged them."""

    admitted: int
    busiest_second: int
    """Most admissions in any one-second span."""
    mean_rate: float
    """Admissions per second from the first to the last (0 with fewer than two)."""
    refused: dict[str, int]

    @classmethod
    def from_log(cls, log: str) -> Admissions:
        times = admitted_times(log)
        span = times[-1] - times[0] if len(times) > 1 else 0.0
        return cls(
            admitted=len(times),
            busiest_second=busiest_window(times),
            mean_rate=(len(times) - 1) / span if span > 0 else 0.0,
            refused=dict(sorted(refusals(log).items())),
        )


@dataclass(frozen=True)
class Side:
    """One storm and what the server logged about its admissions."""

    run: StormRun
    admissions: Admissions


async def one_storm(
    options: Options, mesh: FanoutMesh, log: Path, rate: float, wait: float
) -> Side:
    env = {
        "PILOTHOUSE_XDS_ADMISSION_RATE": f"{rate:g}",
        "PILOTHOUSE_XDS_ADMISSION_BURST": str(options.burst),
        "PILOTHOUSE_XDS_ADMISSION_WAIT": f"{wait:g}",
        "PILOTHOUSE_LOG_LEVEL": LOG_LEVEL,
    }
    async with contextlib.AsyncExitStack() as stack:
        server, target = await serving_pilothouse(stack, mesh.root, log, env)
        run, _ = await storm_on(
            stack, server, target, options.proxies, mesh.namespace_names,
            streams_per_channel=options.streams_per_channel, timeout=options.timeout,
        )  # fmt: skip
        return Side(run, Admissions.from_log(server.output()))


def _refused(sides: Sequence[Side]) -> dict[str, int] | str:
    refused: Counter[str] = Counter()
    for side in sides:
        refused.update(side.admissions.refused)
    return dict(refused) or "none"


def _busiest(sides: Sequence[Side]) -> list[int]:
    return [side.admissions.busiest_second for side in sides]


ADMISSION_ROWS: tuple[Row, ...] = (
    *(
        (key, lambda sides, read=read: read([side.run for side in sides]))
        for key, read in STORM_ROWS
    ),
    ("{side}_unconverged_worst_run", lambda sides: max(side.run.unconverged for side in sides)),
    ("{side}_busiest_second_admitted", lambda sides: max(_busiest(sides))),
    ("{side}_busiest_second_runs", _busiest),
    (
        "{side}_mean_admission_rate_per_s",
        lambda sides: round(median(side.admissions.mean_rate for side in sides), 1),
    ),
    ("{side}_refused_all_runs", _refused),
    (
        "{side}_client_stream_failures_all_runs",
        lambda sides: sum(side.run.stream_failures for side in sides),
    ),
    ("{side}_nacks_all_runs", lambda sides: sum(side.run.nacks for side in sides)),
)


def rate_kept(options: Options, limited: list[Side]) -> str:
    """``yes``, or ``no`` with the most streams admitted in one second (worst run)."""
    busiest = max(side.admissions.busiest_second for side in limited)
    return "yes" if busiest <= per_second(options) else f"no: {busiest} admitted in one second"


def per_second(options: Options) -> int:
    """The most admissions any second may see: the rate (or the burst if larger)."""
    return max(options.burst, math.ceil(options.rate))


def report(
    options: Options, wait: float, limited: list[Side], unlimited: list[Side]
) -> dict[str, Any]:
    ours = median([side.run.seconds for side in limited])
    off = median([side.run.seconds for side in unlimited])
    default = " (the defaults)" if wait == AdmissionSettings.wait else ""
    row = {
        "benchmark": (
            f"admission_storm: {options.proxies} SotW sidecars connect at once, "
            f"{options.rate:g} new streams/s, wait {wait:g} s{default}"
        ),
        "baseline": "the same storm against the same server with admission control off "
        "(PILOTHOUSE_XDS_ADMISSION_RATE=0), in the same run",
        "headline": "pilothouse_s",
        "rate_per_s": options.rate,
        "burst": options.burst,
        "wait_s": wait,
        "services_per_proxy": f"{options.services} (CDS, EDS, LDS, RDS each)",
        "runs": f"{options.runs} per side, alternating, each against a freshly started server "
        "(medians; worst run where it says so)",
        "streams_per_connection": options.streams_per_channel,
        "client_backoff": "Envoy's: jittered, 0.5 s × (2ⁿ − 1) up to 30 s, reset by a response",
        "busiest_second_definition": "most streams admitted in any span [t, t + 1 s), from the "
        "moment each stream's token was taken (logged with it), worst run",
        **per_side(ADMISSION_ROWS, {"pilothouse": limited, "admission_off": unlimited}),
        "ratio_to_baseline": round(off / ours, 2) if ours > 0 else float("inf"),
        "ratio_definition": "seconds with admission off ÷ seconds with it on (1 = no slower)",
        "rate_check": f"at most {per_second(options)} admitted in any second",
        "rate_check_met": rate_kept(options, limited),
    }
    return row | judged("admission_storm", row, NOT_JUDGED)


async def run(options: Options) -> None:
    note(f"open file limit {raise_open_file_limit()}")
    with tempfile.TemporaryDirectory(prefix="admission-storm-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", options.services, options.namespaces, options.endpoints)
        mesh.write()

        def side(rate: float, wait: float) -> Callable[[int], Awaitable[Side]]:
            async def one(index: int) -> Side:
                log = work / f"serve-{rate:g}-{wait:g}-{index}.log"
                side = await one_storm(options, mesh, log, rate, wait)
                note(
                    f"rate {rate:g} wait {wait:g}: {side.run.seconds:.2f}s "
                    f"p99 {side.run.percentile(99):.2f}s unconverged {side.run.unconverged} "
                    f"busiest second {side.admissions.busiest_second} mean "
                    f"{side.admissions.mean_rate:.0f}/s refused {side.admissions.refused} "
                    f"peak {mib(side.run.peak_rss_kib)} MiB cpu {side.run.cpu_seconds:.1f}s"
                )
                return side

            return one

        plan = {f"{wait:g}": side(options.rate, wait) for wait in options.waits}
        sides = await alternate(options.runs, {**plan, "off": side(0.0, 1.0)})
    emit(report(options, wait, sides[f"{wait:g}"], sides["off"]) for wait in options.waits)


def _waits(text: str) -> tuple[float, ...]:
    waits = tuple(float(part) for part in text.split(",") if part.strip())
    if not waits or min(waits) < 0:
        raise argparse.ArgumentTypeError("give waits in seconds like 1,10")
    return waits


def parse_options(argv: list[str] | None = None) -> Options:
    parser = fleet_parser(__doc__)
    parser.add_argument("--proxies", type=int, default=2000)
    parser.add_argument(
        "--rate", type=float, default=AdmissionSettings.rate, help="new streams a second"
    )
    parser.add_argument("--burst", type=int, default=AdmissionSettings.burst)
    parser.add_argument(
        "--waits",
        type=_waits,
        default=tuple(sorted({1.0, AdmissionSettings.wait})),
        help="longest waits for a turn to compare, seconds (default: istiod's 1 and ours, 10)",
    )
    parser.add_argument("--runs", type=int, default=2, help="storms per side")
    parser.add_argument("--timeout", type=float, default=60.0, help="longest storm, seconds")
    options = parsed(parser, Options, argv)
    if options.runs < 1 or options.proxies < 1 or options.rate <= 0 or options.burst < 1:
        parser.error("--runs, --proxies and --burst must be at least 1 and --rate above 0")
    return options


if __name__ == "__main__":
    asyncio.run(run(parse_options()))
