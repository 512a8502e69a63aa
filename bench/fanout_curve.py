"""Benchmark: how push fan-out latency grows with the fleet, against the transport floor.

Runs ``push_fanout.py`` once per fleet size (default 250, 500, 1,000 and 2,000 SotW
proxies) with fewer timed pushes than its own run (``--runs 3``, no memory
slope), and gathers each size's p99 for the EDS and the CDS change into one
result with a ``curve``. Pilothouse's figures are its p99 beyond the debounce
it is given (what ``push_fanout`` compares), the floor's its plain p99 (it has no
debounce). The ratio is the lowest, over sizes and triggers, of floor p99 ÷
pilothouse p99 beyond debounce; the issue's target is at least 0.5 at every size.

Each curve point also carries each trigger's server CPU per proxy pushed (µs) and
each server's RSS per connection (KiB), pilothouse and floor, as ``push_fanout``
measured them (one ``serve`` process; 10,000 proxies: ``fleet10k.py``).

Each size runs in its own ``push_fanout.py`` process, which starts and stops its
servers; a size that fails ends this benchmark with that size's error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SIZES = (250, 500, 1000, 2000)
TRIGGERS = {"eds": "EDS change", "cds": "CDS change"}
RATIO_TARGET = 0.5
BASELINE = (
    "transport floor (bench/transport_floor.py): a bare grpc.aio ADS server pushing "
    "the same pre-encoded resource bytes to the same N streams"
)


def run_size(proxies: int, runs: int, timeout: float) -> list[dict[str, Any]]:
    """The JSON objects ``push_fanout.py`` prints for one fleet size."""
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "push_fanout.py"),
            "--proxies",
            str(proxies),
            "--runs",
            str(runs),
            "--no-slope",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"push_fanout.py --proxies {proxies} failed ({done.returncode}):\n"
            + "\n".join(done.stderr.splitlines()[-20:])
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def point(proxies: int, groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One curve point: each trigger's p99, pilothouse (beyond debounce) and floor; where
    ``push_fanout`` measured them, each trigger's server CPU per proxy pushed (µs, idle
    rate subtracted) and each server's RSS per connection (KiB), pilothouse and floor."""
    found: dict[str, Any] = {"proxies": proxies}
    for trigger, title in TRIGGERS.items():
        group = next(g for g in groups if str(g["benchmark"]).startswith(f"push_fanout: {title}"))
        found[f"pilothouse_{trigger}_p99_ms"] = group["pilothouse_p99_beyond_debounce_ms"]
        found[f"floor_{trigger}_p99_ms"] = group["floor_p99_ms"]
        for side in ("pilothouse", "floor"):
            cpu_ms = group.get(f"{side}_server_cpu_ms_per_push")
            if cpu_ms is not None:
                found[f"{side}_{trigger}_cpu_us_per_proxy"] = round(cpu_ms * 1000 / proxies, 1)
    memory = next((g for g in groups if "RSS per idle connection" in str(g["benchmark"])), {})
    for side in ("pilothouse", "floor"):
        kib = memory.get(f"{side}_kib_per_connection")
        if kib is not None:
            found[f"{side}_kib_per_connection"] = kib
    return found


def _growth(curve: Sequence[Mapping[str, Any]], key: str) -> float:
    first, last = curve[0][key], curve[-1][key]
    return round(last / first, 2) if first > 0 else float("inf")


def ratio(point: Mapping[str, Any], trigger: str) -> float:
    """Floor p99 ÷ pilothouse p99 beyond debounce at one point."""
    ours = point[f"pilothouse_{trigger}_p99_ms"]
    return round(point[f"floor_{trigger}_p99_ms"] / ours, 2) if ours > 0 else float("inf")


def report(curve: Sequence[Mapping[str, Any]], runs: int) -> dict[str, Any]:
    """The JSON object ``run_all.py`` records."""
    ratios = {(trigger, p["proxies"]): ratio(p, trigger) for p in curve for trigger in TRIGGERS}
    (worst_trigger, worst_size), worst = min(ratios.items(), key=lambda item: item[1])
    small, large = curve[0]["proxies"], curve[-1]["proxies"]
    growth = f"{small}_to_{large}"
    result: dict[str, Any] = {
        "benchmark": f"fanout_curve: push p99 by fleet size (SotW, {small} to {large} proxies)",
        "baseline": BASELINE,
        "headline": f"pilothouse_eds_p99_growth_{growth}",
        "runs_per_size": f"{runs} (median of the runs' p99)",
    }
    for trigger in TRIGGERS:
        result[f"pilothouse_{trigger}_p99_growth_{growth}"] = _growth(
            curve, f"pilothouse_{trigger}_p99_ms"
        )
        result[f"floor_{trigger}_p99_growth_{growth}"] = _growth(curve, f"floor_{trigger}_p99_ms")
    result.update(
        {
            "growth_definition": f"p99 at {large} proxies ÷ p99 at {small}",
            "ratio_to_baseline": worst,
            "ratio_definition": (
                "the lowest over sizes and triggers of floor p99 ÷ pilothouse p99 beyond "
                f"debounce (here {worst_trigger.upper()} at {worst_size} proxies)"
            ),
            "target": f"ratio ≥ {RATIO_TARGET} at every size",
            "target_met": "yes" if worst >= RATIO_TARGET else f"no (lowest ratio {worst})",
            "curve_definition": "pilothouse: p99 beyond debounce; floor: p99 (no debounce)",
            "curve": list(curve),
        }
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(size) for size in SIZES),
        help="fleet sizes, comma-separated",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed pushes per trigger and size")
    parser.add_argument("--timeout", type=float, default=600.0, help="per size, seconds")
    args = parser.parse_args()
    sizes = sorted({int(size) for size in args.sizes.split(",")})
    if len(sizes) < 2:
        parser.error("--sizes needs at least two sizes")
    curve = []
    for proxies in sizes:
        curve.append(point(proxies, run_size(proxies, args.runs, args.timeout)))
        print(f"{proxies} proxies: {curve[-1]}", file=sys.stderr, flush=True)
    print(json.dumps(report(curve, args.runs)), flush=True)


if __name__ == "__main__":
    main()
