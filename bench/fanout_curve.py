"""Benchmark: server CPU per message, RSS per connection and push latency by fleet size,
with ``serve --workers 1`` and ``--workers 2``, against the transport floor.

Each fleet size (default 250, 500, 1,000, 2,000, 5,000 and 10,000 SotW proxies) is run
once per worker count (default 1 and 2), the worker counts alternating within a
size so that both series see the same machine. A size below ``--fleet-from``
(10,000) is one ``push_fanout.py`` run (``--runs`` timed pushes per trigger, no
memory slope, ``--streams-per-channel`` streams per HTTP/2 connection, so that even
250 proxies make enough connections for the kernel to spread over two workers);
a larger one is one ``fleet10k.py`` run (the load generator in 2 processes with
shared channels, one CDS and one EDS push, the floor replaying them). Each run
measures pilothouse and the floor side by side; with ``--workers 2`` the floor is
two processes sharing the port (``SO_REUSEPORT``): the same process count.

A curve point is one (size, workers) pair: per trigger (EDS change, CDS change)
the server CPU per proxy pushed (µs: the whole process tree's CPU, for 2 workers
both workers and the supervisor, whose own share is only its 0.1 s poll; below
``--fleet-from`` with the idle rate subtracted, at 10,000 from the trigger until
every proxy had the change), the push p99 (pilothouse beyond its debounce below
``--fleet-from``; at 10,000 from the file write, debounce included) and the
fan-out spread (last proxy's ACK time − first's), and the RSS per connection
(KiB, the whole tree), pilothouse and floor.

The floor sends exactly the messages pilothouse sent (it is handed them), so the ratio of
the two sides' CPU per proxy pushed is also their ratio per message. Result: the curve,
which holds issue #17's CPU targets at 2,000 and 5,000 proxies with ``serve --workers 1``
(server CPU per message at most 1.2× the floor's, EDS and CDS; ``harness/targets.py``;
``push_fanout`` holds them at 1,000 with the spread and RSS targets); its headline is the
worst of those four ratios.

Each run is its own process, which starts and stops its servers; a run that fails
ends this benchmark with its error. Stopped by SIGTERM (``run_all.py``'s time-out),
it stops the run in progress and prints what it measured so far, marked partial.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit
from bench.harness.figures import ratio as _ratio
from bench.harness.targets import judged

HERE = Path(__file__).resolve().parent
SIZES = (250, 500, 1000, 2000, 5000, 10_000)
WORKERS = (1, 2)
FLEET_FROM = 10_000
TRIGGERS = {"eds": "EDS change", "cds": "CDS change"}
JUDGED_POINTS = ((2000, 1), (5000, 1))
"""(proxies, workers) of the points that hold issue #17's CPU targets."""
BASELINE = (
    "transport floor (bench/harness/floor.py): a bare grpc.aio ADS server pushing the "
    "same resource bytes to the same N streams, measured in the same run as each point; "
    "for serve --workers 2 the floor runs in 2 processes sharing the port with SO_REUSEPORT "
    "(the same process count), each loaded and pushed through its own control port"
)


def fanout_command(
    proxies: int,
    workers: int,
    runs: int,
    streams: int,
    settle: Sequence[str] = (),
    tail: Sequence[str] = (),
) -> list[str]:
    return [
        sys.executable, str(HERE / "push_fanout.py"), "--proxies", str(proxies),
        "--runs", str(runs), "--no-slope", "--workers", str(workers),
        "--streams-per-channel", str(streams), *settle, *tail,
    ]  # fmt: skip


def fleet_command(
    proxies: int, workers: int, settle: Sequence[str] = (), quiet: Sequence[str] = ()
) -> list[str]:
    return [
        sys.executable, str(HERE / "fleet10k.py"), "--proxies", str(proxies),
        "--workers", str(workers), *settle, *quiet,
    ]  # fmt: skip


class Stopped(Exception):
    """SIGTERM arrived: end with what was measured."""


def _stop(signum: int, frame: object) -> None:
    raise Stopped


def run(command: Sequence[str], timeout: float) -> list[dict[str, Any]]:
    """The JSON objects a benchmark script prints (the script is stopped with this one)."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[1:])} failed ({done.returncode}):\n"
            + "\n".join(done.stderr.splitlines()[-20:])
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _put(found: dict[str, Any], key: str, value: Any) -> None:
    """Only measured figures go into a point: nothing made up."""
    if value is not None:
        found[key] = value


def fanout_point(proxies: int, workers: int, groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A curve point from ``push_fanout``'s groups."""
    found: dict[str, Any] = {"proxies": proxies, "workers": workers}

    def group(title: str) -> Mapping[str, Any]:
        return next((g for g in groups if title in str(g["benchmark"])), {})

    for side in ("pilothouse", "floor"):
        for trigger, title in TRIGGERS.items():
            push = group(f"push_fanout: {title}")
            cpu_ms = push.get(f"{side}_server_cpu_ms_per_push")
            if cpu_ms is not None:
                found[f"{side}_{trigger}_cpu_us_per_proxy"] = round(cpu_ms * 1000 / proxies, 1)
            p99 = "pilothouse_p99_beyond_debounce_ms" if side == "pilothouse" else "floor_p99_ms"
            _put(found, f"{side}_{trigger}_p99_ms", push[p99])
            _put(found, f"{side}_{trigger}_spread_ms", push.get(f"{side}_spread_ms"))
        kib = group("RSS per idle connection").get(f"{side}_kib_per_connection")
        _put(found, f"{side}_kib_per_connection", kib)
        held = group("connect and converge").get(f"{side}_connections_per_process")
        _put(found, f"{side}_connections", held)
    return found


def fleet_point(proxies: int, workers: int, result: Mapping[str, Any]) -> dict[str, Any]:
    """A curve point from ``fleet10k``'s result (pilothouse's figures unprefixed or
    ``server_``, the floor's ``floor_``)."""
    found: dict[str, Any] = {"proxies": proxies, "workers": workers}
    for side, prefix in (("pilothouse", ""), ("floor", "floor_")):
        for trigger in TRIGGERS:
            cpu = result.get(f"{prefix}{trigger}_server_cpu_us_per_proxy")
            _put(found, f"{side}_{trigger}_cpu_us_per_proxy", cpu)
            p99 = (result.get(f"{prefix}{trigger}_push_seconds") or {}).get("p99")
            _put(found, f"{side}_{trigger}_p99_ms", None if p99 is None else round(p99 * 1e3, 1))
            _put(found, f"{side}_{trigger}_spread_ms", result.get(f"{prefix}{trigger}_spread_ms"))
        server = prefix or "server_"
        _put(found, f"{side}_kib_per_connection", result.get(f"{server}kib_per_connection"))
        held = result.get(f"{server}connections_per_process")
        if held:
            found[f"{side}_connections"] = " / ".join(map(str, held))
    return found


def cpu_ratios(curve: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int, int], float]:
    """Floor ÷ pilothouse CPU per proxy push, by (trigger, size, workers), where both were
    measured as more than nothing (a tiny fleet's push can take less than a clock tick)."""
    found = {}
    for point in curve:
        for trigger in TRIGGERS:
            ours = point.get(f"pilothouse_{trigger}_cpu_us_per_proxy")
            floor = point.get(f"floor_{trigger}_cpu_us_per_proxy")
            if ours and floor and ours > 0 and floor > 0:
                found[(trigger, point["proxies"], point["workers"])] = _ratio(floor, ours, 6)
    return found


def report(
    curve: Sequence[Mapping[str, Any]], runs: int, fleet_from: int = FLEET_FROM
) -> dict[str, Any]:
    """The curve's JSON object for ``run_all.py``."""
    ratios = {key: r for key, r in cpu_ratios(curve).items() if key[1:] in JUDGED_POINTS}
    sizes = sorted({point["proxies"] for point in curve})
    workers = sorted({point["workers"] for point in curve})
    result: dict[str, Any] = {
        "benchmark": (
            f"fanout_curve: server CPU per message, RSS per connection and push p99 by fleet size "
            f"(SotW, {sizes[0]} to {sizes[-1]} proxies, serve --workers "
            f"{' and '.join(map(str, workers))})"
        ),
        "baseline": BASELINE,
        "runs_per_point": (
            f"below {fleet_from} proxies {runs} pushes per trigger (median of the runs' "
            f"figures); from {fleet_from} one push per trigger (fleet10k)"
        ),
    }
    if ratios:
        (trigger, size, count), worst = min(ratios.items(), key=lambda item: item[1])
        result["headline"] = "pilothouse_cpu_per_message_worst_times_floor"
        result["pilothouse_cpu_per_message_worst_times_floor"] = round(1 / worst, 2)
        result["ratio_to_baseline"] = round(worst, 2)
        result["ratio_definition"] = (
            "the lowest at 2,000 and 5,000 proxies (serve --workers 1, EDS and CDS) of floor "
            "÷ pilothouse server CPU per message (here "
            f"{trigger.upper()} at {size} proxies, {count} worker)"
        )
    result.update(
        {
            "curve_definition": (
                "one point per fleet size and worker count; *_cpu_us_per_proxy: the server's "
                "CPU per proxy pushed, every process of it (2 workers: both workers and the "
                "supervisor), idle rate subtracted below "
                f"{fleet_from} proxies, not at {fleet_from} and above; *_kib_per_connection: "
                "RSS of every process with the fleet connected minus before, per proxy; "
                f"*_p99_ms: pilothouse beyond its debounce below {fleet_from} proxies, from the "
                "file write (debounce included) from there, the floor from its trigger; "
                "*_spread_ms: last proxy's ACK time − first's; *_connections: connections each "
                "server process held"
            ),
            "curve_series": "workers",
            "curve": list(curve),
        }
    )
    return result | judged("fanout_curve", result, "none (no point at 2,000 or 5,000 proxies)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="fleet sizes, comma-separated"
    )
    parser.add_argument(
        "--workers", default=",".join(map(str, WORKERS)), help="worker counts, comma-separated"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed pushes per trigger and size")
    parser.add_argument(
        "--streams-per-channel", type=int, default=10, help="push_fanout's streams per connection"
    )
    parser.add_argument(
        "--fleet-from", type=int, default=FLEET_FROM, help="sizes from here run fleet10k.py"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="per run, seconds")
    parser.add_argument(
        "--settle",
        type=float,
        help="handed to each run's --settle (default: each script's own; a smoke run "
        "shortens its waits with it)",
    )
    parser.add_argument(
        "--tail",
        type=float,
        help="handed to each push_fanout.py run's --tail, the quiet seconds that end a push "
        "(default: its own; a smoke run shortens it)",
    )
    parser.add_argument(
        "--quiet-for",
        type=float,
        help="handed to each fleet10k.py run's --quiet-for, the load generator's quiet "
        "seconds before each change (default: its own; a smoke run shortens it)",
    )
    args = parser.parse_args()
    sizes = sorted({int(size) for size in args.sizes.split(",")})
    workers = sorted({int(count) for count in args.workers.split(",")})
    if len(sizes) < 2:
        parser.error("--sizes needs at least two sizes")
    if not workers or workers[0] < 1:
        parser.error("--workers needs worker counts of at least 1")
    settle = () if args.settle is None else ("--settle", str(args.settle))
    tail = () if args.tail is None else ("--tail", str(args.tail))
    quiet = () if args.quiet_for is None else ("--quiet-for", str(args.quiet_for))
    curve: list[dict[str, Any]] = []
    signal.signal(signal.SIGTERM, _stop)
    partial = None
    try:
        for proxies in sizes:
            for count in workers:
                if proxies >= args.fleet_from:
                    (result,) = run(fleet_command(proxies, count, settle, quiet), args.timeout)
                    curve.append(fleet_point(proxies, count, result))
                else:
                    command = fanout_command(
                        proxies, count, args.runs, args.streams_per_channel, settle, tail
                    )
                    curve.append(fanout_point(proxies, count, run(command, args.timeout)))
                print(f"{proxies} proxies, {count} workers: {curve[-1]}", file=sys.stderr)
    except Stopped:
        partial = f"stopped (SIGTERM) after {len(curve)} of {len(sizes) * len(workers)} points"
    if not curve:
        raise SystemExit(partial or "no point measured")
    result = report(curve, args.runs, args.fleet_from)
    if partial is not None:
        result["partial"] = partial
    emit([result])


if __name__ == "__main__":
    main()
