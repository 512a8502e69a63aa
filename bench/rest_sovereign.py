"""Benchmark: REST discovery throughput, pilothouse next to sovereign, same client, same run.

Both servers answer ``POST /v3/discovery:clusters`` (Envoy's REST-JSON CDS poll) with
the same clusters:

- **pilothouse**: ``pilothouse serve`` over N ServiceEntries (one HTTP port each), so a
  sidecar's CDS holds N outbound clusters plus the fixed ones pilothouse always adds;
  REST discovery is served on its admin port.
- **sovereign** (the baseline; PyPI, a Python Envoy control plane on FastAPI): in a
  virtualenv of its own (``.bench/sovereign-venv``, created on first use), serving the
  very clusters pilothouse answered with, through its cheapest path (see
  ``bench/sovereign_side.py``), one worker process by default.

One asyncio client (``--connections`` keep-alive connections; the lean HTTP/1.1 client
of ``bench/rest_http.py`` by default, aiohttp's with ``--client aiohttp``, which costs
several times the CPU per answer) posts the same DiscoveryRequest to one server at a
time, in rounds that alternate between the two, so both see the same machine; each
figure is the median of a server's rounds. Every answer is checked (200 and the right
number of clusters; the first of each round also by name); anything else is counted as
an error and reported. A second, shorter set of rounds sends each server its own
current ``version_info``, which both answer with 304 ("not modified"). Server CPU is
read from ``/proc`` for the server's whole process group. Target (pilothouse issue
#7): pilothouse ≥ 20× sovereign's requests per second.

``--profile`` runs one more round against pilothouse with py-spy attached and prints
where its CPU goes on stderr. Prints one JSON object on stdout. Every process started
here is stopped (also on failure); all sockets are on loopback, on ports picked at run
time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.child import ServeChild
from bench.harness.figures import emit
from bench.rest_cpu import group_cpu_seconds
from bench.rest_load import Expect, LoadRound, count_clusters, fetch, load_round
from bench.rest_mesh import OUTBOUND_PREFIX, request_body, write_services
from bench.rest_profile import start_recording, table, tally
from bench.rest_report import Setup, report, summarise
from bench.sovereign_side import start_sovereign
from bench.sovereign_venv import SOVEREIGN_VERSION, VENV_PATH, ensure_venv

ROOT = Path(__file__).resolve().parent.parent


class Server(Protocol):
    """What the rounds need of a server: its discovery URL and its process group."""

    @property
    def pgrp(self) -> int: ...

    def url(self) -> str: ...


class RestPilothouse(ServeChild):
    """``pilothouse serve`` whose admin listener answers REST discovery."""

    def url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}/v3/discovery:clusters"


@dataclass(frozen=True, slots=True)
class Load:
    """How hard and how long each round pushes."""

    connections: int
    seconds: float
    max_requests: int


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


async def measured_round(
    name: str, server: Server, body: bytes, expect: Expect, load: Load, client: str
) -> LoadRound:
    cpu = group_cpu_seconds(server.pgrp)
    result = await load_round(
        name,
        server.url(),
        body,
        expect,
        connections=load.connections,
        seconds=load.seconds,
        max_requests=load.max_requests,
        client=client,
    )
    result.server_cpu = group_cpu_seconds(server.pgrp) - cpu
    return result


async def alternate(
    sides: dict[str, tuple[Server, bytes, Expect]], rounds: int, load: Load, client: str
) -> dict[str, list[LoadRound]]:
    """``rounds`` rounds per server, servers taking turns; a short unmeasured warm-up first."""
    warm = Load(load.connections, min(1.0, load.seconds), load.max_requests)
    for name, (server, body, expect) in sides.items():
        await measured_round(name, server, body, expect, warm, client)
    results: dict[str, list[LoadRound]] = {name: [] for name in sides}
    for index in range(rounds):
        for name, (server, body, expect) in sides.items():
            one = await measured_round(name, server, body, expect, load, client)
            results[name].append(one)
            errors = sum(one.errors.values())
            print(
                f"round {index + 1} {name}: {one.ok / one.seconds:.0f} req/s, "
                f"{errors} errors{' ' + str(dict(one.errors)) if errors else ''}",
                file=sys.stderr,
                flush=True,
            )
    return results


async def pilothouse_clusters(pilothouse: Server, body: bytes, outbound: int) -> dict[str, Any]:
    """The clusters pilothouse serves (checked: ``outbound`` of them are outbound) and its
    current version."""
    ours = await first_answer(pilothouse, body)
    clusters: list[dict[str, Any]] = ours["resources"]
    names = [str(c["name"]) for c in clusters]
    found = sum(name.startswith(OUTBOUND_PREFIX) for name in names)
    if found != outbound:
        raise SetupFailed(f"pilothouse answered {found} outbound clusters, not {outbound}")
    return {"clusters": clusters, "names": names, "version": str(ours["version_info"])}


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    load = Load(args.connections, args.seconds, args.max_requests)
    mesh = workdir / "mesh"
    write_services(mesh, args.clusters)
    body = request_body(extensions=args.extensions)
    with ExitStack() as stack:
        pilothouse = RestPilothouse("pilothouse", workdir, "--config", str(mesh))
        stack.callback(pilothouse.stop)
        pilothouse.serve_ready(args.start_timeout)
        seen = asyncio.run(pilothouse_clusters(pilothouse, body, args.clusters))
        sovereign = start_sovereign(
            args.venv, workdir / "sovereign", seen["clusters"], args.workers, args.start_timeout
        )
        stack.callback(sovereign.stop)
        theirs = asyncio.run(first_answer(sovereign, body))
        if sorted(str(c.get("name")) for c in theirs["resources"]) != sorted(seen["names"]):
            raise SetupFailed("sovereign does not serve the clusters pilothouse does")
        expect = Expect(200, len(seen["names"]), tuple(seen["names"]))
        sides: dict[str, tuple[Server, bytes, Expect]] = {
            "pilothouse": (pilothouse, body, expect),
            "sovereign": (sovereign, body, expect),
        }
        full = asyncio.run(alternate(sides, args.rounds, load, args.client))
        not_modified = None
        if args.not_modified_rounds > 0:
            unchanged: dict[str, tuple[Server, bytes, Expect]] = {
                "pilothouse": (
                    pilothouse,
                    request_body(seen["version"], args.extensions),
                    Expect(304),
                ),
                "sovereign": (
                    sovereign,
                    request_body(str(theirs["version_info"]), args.extensions),
                    Expect(304),
                ),
            }
            short = Load(load.connections, args.not_modified_seconds, load.max_requests)
            rounds = asyncio.run(alternate(unchanged, args.not_modified_rounds, short, args.client))
            not_modified = (summarise(rounds["pilothouse"]), summarise(rounds["sovereign"]))
        if args.profile:
            asyncio.run(profiled_round(pilothouse, body, expect, args, workdir))
    setup = Setup(
        outbound=args.clusters,
        clusters=len(seen["names"]),
        connections=args.connections,
        rounds=args.rounds,
        seconds=args.seconds,
        request_bytes=len(body),
        sovereign=SOVEREIGN_VERSION,
        workers=args.workers,
        client=args.client,
    )
    return report(
        setup, (summarise(full["pilothouse"]), summarise(full["sovereign"])), not_modified
    )


async def profiled_round(
    pilothouse: RestPilothouse, body: bytes, expect: Expect, args: argparse.Namespace, workdir: Path
) -> None:
    """One more round against pilothouse with py-spy attached; the tally on stderr."""
    stacks = workdir / "pilothouse.stacks"
    recorder = start_recording(pilothouse.pid, args.seconds, stacks)
    if recorder is None:
        print("--profile: py-spy is not installed", file=sys.stderr)
        return
    try:
        await asyncio.sleep(0.5)  # py-spy attaches
        load = Load(args.connections, args.seconds + 1.0, args.max_requests)
        await measured_round("profiled", pilothouse, body, expect, load, args.client)
        deadline = time.monotonic() + 30
        while recorder.alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        recorder.stop()
    if not stacks.exists():
        print(f"--profile: py-spy wrote nothing:\n{recorder.output()[-1000:]}", file=sys.stderr)
        return
    with stacks.open(encoding="utf-8") as lines:
        found = tally(lines)
    print(table(found, "pilothouse REST discovery under py-spy", within="pilothouse/"),
          file=sys.stderr)  # fmt: skip


def _exit_on(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the servers are stopped on the way out.
    signal.signal(signal.SIGTERM, _exit_on)
    signal.signal(signal.SIGHUP, _exit_on)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=100, help="outbound clusters (N)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per server")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of a round")
    parser.add_argument("--max-requests", type=int, default=200_000, help="cap per round")
    parser.add_argument("--not-modified-rounds", type=int, default=3, help="0: skip the 304s")
    parser.add_argument("--not-modified-seconds", type=float, default=3.0)
    parser.add_argument(
        "--extensions", type=int, default=0, help="node.extensions entries in each request"
    )
    parser.add_argument("--workers", type=int, default=1, help="sovereign's worker processes")
    parser.add_argument("--venv", type=Path, default=VENV_PATH, help="sovereign's virtualenv")
    parser.add_argument("--start-timeout", type=float, default=90.0)
    parser.add_argument(
        "--client", choices=("lean", "aiohttp"), default="lean", help="the HTTP client"
    )
    parser.add_argument(
        "--profile", action="store_true", help="one more round with py-spy on pilothouse"
    )
    parser.add_argument("--keep", type=Path, help="write the mesh and logs here and keep them")
    args = parser.parse_args()
    began = time.monotonic()
    if not args.venv.is_absolute():
        args.venv = ROOT / args.venv
    installed = ensure_venv(args.venv)
    if installed:
        print(f"installed sovereign {SOVEREIGN_VERSION} in {installed:.0f} s", file=sys.stderr)
    with ExitStack() as scratch:
        root = args.keep or Path(scratch.enter_context(tempfile.TemporaryDirectory("-rest")))
        root.mkdir(parents=True, exist_ok=True)
        result = run(args, root)
        emit([result])
    print(f"rest_sovereign: {time.monotonic() - began:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
