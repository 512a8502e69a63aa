"""Benchmark: REST discovery throughput, pilothouse next to sovereign, same client, same run.

Both servers answer ``POST /v3/discovery:clusters`` (Envoy's REST-JSON CDS poll) with
the same clusters: **pilothouse** (``serve`` over N ServiceEntries with one HTTP port
each, REST discovery on its admin port: N outbound clusters plus the fixed ones it
always adds) and **sovereign**, the baseline, in a virtualenv of its own serving the very
clusters pilothouse answered with through its cheapest path (``bench/sovereign_side.py``).

One asyncio client (``bench/rest_load.py``, with the mesh and the request:
``--connections`` keep-alive connections) posts the same DiscoveryRequest (shaped like
Envoy 1.40's, from a sidecar pilothouse can parse, with ``--extensions`` entries of
Envoy's long ``node.extensions`` list) to one server at a time, in rounds alternating
between the two; each figure is the median of a server's rounds, every answer checked.
A second, shorter set of rounds sends each server its own ``version_info``, answered
with 304. Server CPU is its whole process group's, from ``/proc``. Target (pilothouse
issue #7): pilothouse ≥ 20× sovereign's requests per second. Prints one JSON object;
every process started here is stopped, also on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.child import ServeChild
from bench.harness.figures import emit, note
from bench.rest_load import (
    OUTBOUND_PREFIX,
    Expect,
    LoadRound,
    count_clusters,
    fetch,
    group_cpu_seconds,
    load_round,
    request_body,
    write_services,
)
from bench.sovereign_side import SOVEREIGN_VERSION, VENV_PATH, ensure_venv, start_sovereign

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO: Final = 20.0


# -- figures ----------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in 0..1) of ``values``; nan when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(math.ceil(fraction * len(ordered)), 1) - 1]


@dataclass(frozen=True, slots=True)
class Summary:
    """One server's rounds of one kind, each figure the median over the rounds (server CPU
    per good answer; client CPU per wall second: near 1, the client was the limit)."""

    requests_per_second: float
    megabytes_per_second: float
    p50_ms: float
    p99_ms: float
    cpu_ms_per_request: float
    client_cpu_share: float
    response_bytes: float
    good: int
    errors: Counter[str]


def summarise(rounds: Sequence[LoadRound]) -> Summary:
    def median(measure: Callable[[LoadRound], float], need: Callable[[LoadRound], float]) -> float:
        values = [measure(r) for r in rounds if need(r)]
        return statistics.median(values) if values else math.nan

    def seconds(r: LoadRound) -> float:
        return r.seconds

    def ok(r: LoadRound) -> float:
        return r.ok

    return Summary(
        median(lambda r: r.ok / r.seconds, seconds),
        median(lambda r: r.body_bytes / r.seconds / 1e6, seconds),
        median(lambda r: percentile(r.latencies, 0.50) * 1000, ok),
        median(lambda r: percentile(r.latencies, 0.99) * 1000, ok),
        median(lambda r: r.server_cpu / r.ok * 1000, ok),
        median(lambda r: r.client_cpu / r.seconds, seconds),
        median(lambda r: r.body_bytes / r.ok, ok),
        good=sum(r.ok for r in rounds),
        errors=sum((r.errors for r in rounds), Counter()),
    )


def _round(value: float, digits: int) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def _ratio(ours: float, baseline: float) -> float:
    return math.nan if math.isnan(ours) or not baseline > 0 else ours / baseline


def verdict(value: float, target: float = TARGET_RATIO) -> dict[str, Any]:
    """``target``, ``target_met`` and, when missed, by how much."""
    met = not math.isnan(value) and value >= target
    out: dict[str, Any] = {"target": f"ratio ≥ {target:g}×", "target_met": "yes" if met else "no"}
    if math.isnan(value):
        out["target_missed_by"] = "not measured"
    elif not met:
        short = target - value
        out["target_missed_by"] = (
            f"{short:.1f}× short ({short / target:.0%} below the target; "
            f"pilothouse needs {target / value:.2f}× its throughput)"
        )
    return out


FIGURES: Final = (
    ("rps", "requests_per_second", 1),
    ("mb_per_s", "megabytes_per_second", 2),
    ("p50_ms", "p50_ms", 2),
    ("p99_ms", "p99_ms", 2),
    ("cpu_ms_per_request", "cpu_ms_per_request", 3),
    ("client_cpu_share", "client_cpu_share", 2),
    ("response_bytes", "response_bytes", 0),
)
"""Each server's figures: (key after ``<server>_``, Summary field, digits)."""


def _figures(prefix: str, summary: Summary) -> dict[str, Any]:
    out: dict[str, Any] = {
        f"{prefix}_{key}": _round(getattr(summary, name), n) for key, name, n in FIGURES
    }
    out[f"{prefix}_good_answers"] = summary.good
    out[f"{prefix}_errors"] = dict(summary.errors) or 0
    return out


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
    setup: Setup, full: tuple[Summary, Summary], not_modified: tuple[Summary, Summary] | None
) -> dict[str, Any]:
    """The JSON object for ``run_all``: pilothouse against sovereign, then the verdict."""
    ours, theirs = full
    workers = setup.workers
    processes = f"gunicorn with {workers} uvicorn workers" if workers > 1 else "one uvicorn process"
    main = _ratio(ours.requests_per_second, theirs.requests_per_second)
    out: dict[str, Any] = {
        "benchmark": f"rest_discovery: pilothouse vs sovereign, {setup.outbound} clusters",
        "baseline": f"sovereign {setup.sovereign} ({processes}, Python template, orjson, access "
        "log off) serving the same clusters; same client, same run, rounds alternating",
        "clusters_per_response": f"{setup.clusters} ({setup.outbound} outbound + "
        f"{setup.clusters - setup.outbound} pilothouse always adds)",
        "load": f"POST /v3/discovery:clusters, {setup.client} client, {setup.connections} "
        f"keep-alive connections, {setup.rounds} rounds × {setup.seconds:g} s per server, "
        f"request {setup.request_bytes} B; figures are medians of the rounds",
        **_figures("pilothouse", ours),
        **_figures("sovereign", theirs),
        "cpu_ratio_sovereign_to_pilothouse": _round(
            _ratio(theirs.cpu_ms_per_request, ours.cpu_ms_per_request), 1
        ),
    }
    if not_modified is not None:
        ours_304, theirs_304 = not_modified
        out |= {
            "not_modified_pilothouse_rps": _round(ours_304.requests_per_second, 1),
            "not_modified_sovereign_rps": _round(theirs_304.requests_per_second, 1),
            "not_modified_ratio": _round(
                _ratio(ours_304.requests_per_second, theirs_304.requests_per_second), 2
            ),
            "not_modified_pilothouse_cpu_ms_per_request": _round(ours_304.cpu_ms_per_request, 3),
            "not_modified_sovereign_cpu_ms_per_request": _round(theirs_304.cpu_ms_per_request, 3),
            "not_modified_errors": {
                "pilothouse": dict(ours_304.errors) or 0,
                "sovereign": dict(theirs_304.errors) or 0,
            },
        }
    out["ratio_to_baseline"] = _round(main, 2)
    out["ratio_definition"] = "pilothouse requests/s ÷ sovereign requests/s (200 answers, CDS)"
    return out | verdict(main)


# -- the rounds -------------------------------------------------------------------------


class Server(Protocol):
    @property
    def pgrp(self) -> int: ...

    def url(self) -> str: ...


class RestPilothouse(ServeChild):
    """``pilothouse serve`` whose admin listener answers REST discovery."""

    def url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}/v3/discovery:clusters"


class SetupFailed(RuntimeError):
    """A server did not answer the first request as expected."""


async def first_answer(server: Server, body: bytes) -> dict[str, Any]:
    status, answer = await fetch(server.url(), body)
    if status != 200:
        raise SetupFailed(f"{server.url()} answered {status}: {answer[:300]!r}")
    parsed: dict[str, Any] = json.loads(answer)
    if count_clusters(answer) != len(parsed.get("resources", ())):
        raise SetupFailed(f"{server.url()}: some resources are not clusters")
    return parsed


Side = tuple[Server, bytes, Expect]


async def alternate(
    sides: dict[str, Side], rounds: int, seconds: float, args: argparse.Namespace
) -> dict[str, list[LoadRound]]:
    """``rounds`` rounds per server, servers taking turns, after an unmeasured warm-up."""

    async def measured(name: str, side: Side, length: float) -> LoadRound:
        server, body, expect = side
        cpu = group_cpu_seconds(server.pgrp)
        result = await load_round(name, server.url(), body, expect, connections=args.connections,
                                  seconds=length, max_requests=args.max_requests,
                                  client=args.client)  # fmt: skip
        result.server_cpu = group_cpu_seconds(server.pgrp) - cpu
        return result

    for name, side in sides.items():
        await measured(name, side, min(1.0, seconds))
    results: dict[str, list[LoadRound]] = {name: [] for name in sides}
    for index in range(rounds):
        for name, side in sides.items():
            one = await measured(name, side, seconds)
            results[name].append(one)
            errors = sum(one.errors.values())
            note(f"round {index + 1} {name}: {one.ok / one.seconds:.0f} req/s, {errors} errors"
                 f"{' ' + str(dict(one.errors)) if errors else ''}")  # fmt: skip
    return results


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    write_services(workdir / "mesh", args.clusters)
    body = request_body(extensions=args.extensions)
    with ExitStack() as stack:
        pilothouse = RestPilothouse("pilothouse", workdir, "--config", str(workdir / "mesh"))
        stack.callback(pilothouse.stop)
        pilothouse.serve_ready(args.start_timeout)
        ours = asyncio.run(first_answer(pilothouse, body))
        clusters: list[dict[str, Any]] = ours["resources"]
        names = [str(c["name"]) for c in clusters]
        outbound = sum(name.startswith(OUTBOUND_PREFIX) for name in names)
        if outbound != args.clusters:
            raise SetupFailed(
                f"pilothouse answered {outbound} outbound clusters, not {args.clusters}"
            )
        sovereign = start_sovereign(
            args.venv, workdir / "sovereign", clusters, args.workers, args.start_timeout
        )
        stack.callback(sovereign.stop)
        theirs = asyncio.run(first_answer(sovereign, body))
        if sorted(str(c.get("name")) for c in theirs["resources"]) != sorted(names):
            raise SetupFailed("sovereign does not serve the clusters pilothouse does")
        expect = Expect(200, len(names), tuple(names))
        sides: dict[str, Side] = {
            "pilothouse": (pilothouse, body, expect),
            "sovereign": (sovereign, body, expect),
        }
        full = asyncio.run(alternate(sides, args.rounds, args.seconds, args))
        not_modified = None
        if args.not_modified_rounds > 0:
            unchanged: dict[str, Side] = {
                name: (server, request_body(str(answer["version_info"]), args.extensions),
                       Expect(304))
                for name, server, answer in (("pilothouse", pilothouse, ours),
                                             ("sovereign", sovereign, theirs))
            }  # fmt: skip
            rounds = asyncio.run(
                alternate(unchanged, args.not_modified_rounds, args.not_modified_seconds, args)
            )
            not_modified = (summarise(rounds["pilothouse"]), summarise(rounds["sovereign"]))
    setup = Setup(args.clusters, len(names), args.connections, args.rounds, args.seconds,
                  len(body), SOVEREIGN_VERSION, args.workers, args.client)  # fmt: skip
    return report(
        setup, (summarise(full["pilothouse"]), summarise(full["sovereign"])), not_modified
    )


def _exit_on(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the servers are stopped on the way out.
    signal.signal(signal.SIGTERM, _exit_on)
    signal.signal(signal.SIGHUP, _exit_on)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--clusters", type=int, default=100, help="outbound clusters (N)")
    add("--connections", type=int, default=8)
    add("--rounds", type=int, default=5, help="measured rounds per server")
    add("--seconds", type=float, default=5.0, help="length of a round")
    add("--max-requests", type=int, default=200_000, help="cap per round")
    add("--not-modified-rounds", type=int, default=3, help="0: skip the 304s")
    add("--not-modified-seconds", type=float, default=3.0)
    add("--extensions", type=int, default=0, help="node.extensions entries in each request")
    add("--workers", type=int, default=1, help="sovereign's worker processes")
    add("--venv", type=Path, default=VENV_PATH, help="sovereign's virtualenv")
    add("--start-timeout", type=float, default=90.0)
    add("--client", choices=("lean", "aiohttp"), default="lean", help="the HTTP client")
    add("--keep", type=Path, help="write the mesh and logs here and keep them")
    args = parser.parse_args()
    began = time.monotonic()
    if not args.venv.is_absolute():
        args.venv = ROOT / args.venv
    installed = ensure_venv(args.venv)
    if installed:
        note(f"installed sovereign {SOVEREIGN_VERSION} in {installed:.0f} s")
    with ExitStack() as scratch:
        root = args.keep or Path(scratch.enter_context(tempfile.TemporaryDirectory("-rest")))
        root.mkdir(parents=True, exist_ok=True)
        emit([run(args, root)])
    note(f"rest_sovereign: {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
