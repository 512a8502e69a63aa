"""Benchmark: ``pilothouse serve`` on a Kubernetes mesh from the fake API server, against
the same mesh from files, in the same run.

The mesh (``bench/harness/kube_mesh.py``): N Services (default 1,000) with P Pods each
(default 10), so each proxy holds 200 clusters, ``ns-0``'s among them, where the flips
happen. The Kubernetes objects live in the fake API server, in a child process
(``bench/harness/kube_api.py``); ``serve --config-source k8s:// --kubeconfig`` lists and
watches them (the Sidecars through the Istio config source, the rest through the service
registry's informers). The baseline is the same mesh as files (``--config DIR``).

Two figures, each side measured in turn with the same code:

1. list-and-serve: from starting the ``serve`` process to its ``/ready`` answering 200
   (sources synced, first PushContext built), polled every 10 ms; the fastest of
   ``--starts`` (default 3) starts of each side (the fake API server keeps running).
2. EDS latency of a Pod readiness flip with M SotW sidecars connected (default 1,000;
   the load generator's ``ProxyFleet``, timed with ``push_fanout``'s ``timed_push``):
   Kubernetes: the Pod's Ready condition and its EndpointSlice endpoint's ``ready`` are
   written to the API server (as the kubelet and the EndpointSlice controller do);
   files: the Pod's WorkloadEntry is taken out of (put back into) its Service's file,
   the closest same-run change (WorkloadEntries have no readiness). Time runs from just
   before the write to each proxy's ACK of the changed ClusterLoadAssignment; p50, p99
   and the last proxy, medians over the flips (both directions). Both servers get
   ``PILOTHOUSE_DEBOUNCE_AFTER`` 0.1 s (istiod's default) and the file source
   ``PILOTHOUSE_FILE_DEBOUNCE`` 0.05 s; the Kubernetes source has no debounce of its own.
   Each flip is checked on the server's ``/debug/push_status``: an endpoint push and no
   full push (a full push is reported, loudly, as ``eds_only: false``).

One JSON line per figure; ratios are files ÷ Kubernetes (1 = as fast as files).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.harness.figures import emit
from bench.harness.fleet import start_converged
from bench.harness.kube_api import FakeApiChild
from bench.harness.kube_mesh import NAMESPACES, NODES, KubeMesh
from bench.harness.process import ServerProcess
from bench.harness.push import timed_push
from bench.harness.servers import raise_open_file_limit
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

READY_POLL = 0.01
STARTUP_TIMEOUT = 300.0
SERVER_ENV = {
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.1",
    "PILOTHOUSE_FILE_DEBOUNCE": "0.05",
    "PILOTHOUSE_LOG_LEVEL": "info",
}
ADMIN_LINE = r"admin \(.*\) listening on (\S+):(\d+)"
XDS_LINE = r"xDS listening on (\S+):(\d+)"


# -- one side: a serve process, its start, its fleet, its flips ---------------------------


@dataclass
class SideFigures:
    name: str
    ready_seconds: float = 0.0
    connect_seconds: float = 0.0
    clusters_per_proxy: int = 0
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    last: list[float] = field(default_factory=list)
    unconverged: int = 0
    full_pushes: int = 0
    endpoint_pushes: int = 0
    eds_only: bool = True
    problems: list[str] = field(default_factory=list)


async def wait_ready(session: aiohttp.ClientSession, admin: str, server: ServerProcess) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(aiohttp.ClientError, OSError):
            async with session.get(f"http://{admin}/ready") as response:
                if response.status == 200:
                    return
        await asyncio.sleep(READY_POLL)
    raise TimeoutError(f"{server.name}: not ready in {STARTUP_TIMEOUT}s\n{server.output()[-2000:]}")


async def push_counters(session: aiohttp.ClientSession, admin: str) -> dict[str, int]:
    async with session.get(f"http://{admin}/debug/push_status") as response:
        pushes = (await response.json())["pushes"]
    return {"full": pushes["full"], "endpoint": pushes["endpoint"]}


async def start(
    name: str, argv: list[str], log: Path, session: aiohttp.ClientSession
) -> tuple[ServerProcess, str, str, float]:
    """Start ``serve``; the process, its xDS and admin addresses, and seconds to ready."""
    began = time.monotonic()
    command = [sys.executable, "-m", "pilothouse.cli.main", "serve", *argv,
               "--xds-address", "127.0.0.1:0", "--admin-address", "127.0.0.1:0",
               "--ctrlz-address", "off"]  # fmt: skip
    server = ServerProcess(name, command, log, env=SERVER_ENV)
    try:
        found = await server.wait_for_line(ADMIN_LINE, STARTUP_TIMEOUT)
        admin = f"{found.group(1)}:{found.group(2)}"
        await wait_ready(session, admin, server)
        ready = time.monotonic() - began
        found = await server.wait_for_line(XDS_LINE, STARTUP_TIMEOUT)
    except BaseException:
        server.stop()
        raise
    return server, f"{found.group(1)}:{found.group(2)}", admin, ready


async def run_side(
    figures: SideFigures,
    argv: list[str],
    log: Path,
    mesh: KubeMesh,
    options: argparse.Namespace,
    flip: Any,
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        session = await stack.enter_async_context(aiohttp.ClientSession())
        readies = []
        for attempt in range(options.starts):
            server, target, admin, ready_seconds = await start(figures.name, argv, log, session)
            readies.append(ready_seconds)
            print(f"{figures.name}: ready in {ready_seconds:.2f}s", file=sys.stderr)
            if attempt + 1 < options.starts:
                server.stop()
        figures.ready_seconds = min(readies)
        stack.callback(server.stop)
        if not options.proxies:
            return
        namespaces = [f"ns-{n}" for n in range(NAMESPACES)]
        fleet = ProxyFleet(target, fleet_identities(options.proxies, namespaces=namespaces))
        stack.push_async_callback(fleet.close)
        began = time.monotonic()
        await start_converged(fleet, options.connect_timeout, figures.name)
        figures.connect_seconds = time.monotonic() - began
        figures.clusters_per_proxy = len(fleet.proxies[-1].holds(CDS))
        print(f"{figures.name}: {options.proxies} proxies converged in "
              f"{figures.connect_seconds:.1f}s", file=sys.stderr)  # fmt: skip
        await asyncio.sleep(options.settle)
        for service in mesh.flipped(options.flips):
            for ready in (False, True):
                before = await push_counters(session, admin)

                async def trigger(service: int = service, ready: bool = ready) -> None:
                    flip(service, 0, ready)

                run = await timed_push(
                    fleet, server, EDS, mesh.cluster(service), trigger, idle_rate=0.0,
                    timeout=options.timeout, tail=options.tail, type_urls=(CDS, EDS, LDS, RDS),
                )  # fmt: skip
                after = await push_counters(session, admin)
                durations = sorted(run.durations)
                figures.p50.append(statistics.median(durations))
                figures.p99.append(durations[max(0, round(0.99 * len(durations)) - 1)])
                figures.last.append(durations[-1])
                figures.unconverged += run.unconverged
                full = after["full"] - before["full"]
                endpoint = after["endpoint"] - before["endpoint"]
                figures.full_pushes += full
                figures.endpoint_pushes += endpoint
                held = fleet.proxies[0].holds(EDS)[mesh.cluster(service)].body
                present = _address_in(held, mesh.pod_ip(service, 0))
                if full or not endpoint or run.responses.get("Cluster", 0) or present != ready:
                    figures.eds_only = figures.eds_only and not full
                    figures.problems.append(
                        f"flip {service} ready={ready}: {full} full and {endpoint} endpoint "
                        f"pushes, responses {run.responses}, address held {present}"
                    )
                    print(f"!!! {figures.name}: NOT AN EDS-ONLY FLIP: {figures.problems[-1]}",
                          file=sys.stderr)  # fmt: skip
                print(f"{figures.name}: flip {service} ready={ready}: p50 "
                      f"{figures.p50[-1] * 1000:.0f} ms last {durations[-1] * 1000:.0f} ms, "
                      f"pushes full {full} endpoint {endpoint}, responses {run.responses}",
                      file=sys.stderr)  # fmt: skip
                await asyncio.sleep(options.settle / 4)


def _address_in(body: bytes, ip: str) -> bool:
    """Whether a ClusterLoadAssignment holds ``ip`` as a socket address (field 2, string)."""
    return b"\x12" + bytes([len(ip)]) + ip.encode() in body


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


async def run(options: argparse.Namespace) -> None:
    mesh = KubeMesh(options.services, options.pods)
    raise_open_file_limit()
    with tempfile.TemporaryDirectory(prefix="kube-serve-") as scratch:
        work = Path(scratch)
        root = work / "mesh"
        mesh.write_files(root)
        files = SideFigures("files")
        unready: set[int] = set()

        def flip_file(service: int, index: int, ready: bool) -> None:
            (unready.discard if ready else unready.add)(index)
            mesh.write_workloads(root, service, frozenset(unready))

        await run_side(files, ["--config", str(root)], work / "files.log", mesh, options,
                       flip_file)  # fmt: skip
        kubeconfig = work / "kubeconfig"
        api = FakeApiChild(mesh.kubernetes(), kubeconfig)
        down: dict[int, set[int]] = {}

        def flip_api(service: int, index: int, ready: bool) -> None:
            """The kubelet's Pod status, then the EndpointSlice controller's slice."""
            unready = down.setdefault(service, set())
            (unready.discard if ready else unready.add)(index)
            slice_ = mesh.endpoint_slice(service, frozenset(unready))
            api.write(("status", mesh.pod(service, index, ready=ready)), ("apply", slice_))

        try:
            k8s = SideFigures("k8s")
            argv = ["--config-source", "k8s://", "--kubeconfig", str(kubeconfig)]
            await run_side(k8s, argv, work / "k8s.log", mesh, options, flip_api)
        finally:
            api.stop()
        log = (work / "k8s.log").read_text(errors="replace")
    if "Traceback" in log:
        print(f"!!! k8s serve log has a traceback:\n{log[-3000:]}", file=sys.stderr)
    shape = (f"{mesh.services} Services, {mesh.services * mesh.pods} Pods, "
             f"{NODES} Nodes, {NAMESPACES} namespaces")  # fmt: skip
    emit([{
        "benchmark": "kube_serve_ready",
        "mesh": shape,
        "baseline": "the same mesh as ServiceEntries + WorkloadEntries from files (--config), "
                    "same run",
        "baseline_seconds": round(files.ready_seconds, 2),
        "pilothouse_seconds": round(k8s.ready_seconds, 2),
        "headline": "pilothouse_seconds",
        "ratio_to_baseline": round(files.ready_seconds / k8s.ready_seconds, 2),
        "ratio_definition": "files seconds ÷ k8s:// seconds, process start to /ready 200 "
                            f"(fastest of {options.starts} starts each)",
        "target": "none set by the issue (list-and-serve time, recorded)",
    }])  # fmt: skip
    if not options.proxies:
        return
    sides = (("baseline", files), ("pilothouse", k8s))
    both = (("files", files), ("k8s", k8s))
    eds_only = files.eds_only and k8s.eds_only
    emit([{
        "benchmark": "kube_serve_flip",
        "mesh": shape,
        "proxies": options.proxies,
        "flips": len(k8s.p50),
        "baseline": "the same flip as a WorkloadEntry taken out of / put back into its file "
                    "(fs source, debounce 0.05 s), same run",
        **{f"{name}_{q}_ms": _ms(getattr(side, q)) for name, side in sides
           for q in ("p50", "p99", "last")},
        "headline": "pilothouse_last_ms",
        "ratio_to_baseline": round(statistics.median(files.last) / statistics.median(k8s.last), 2),
        "ratio_definition": "files ÷ k8s:// of the median (over flips) time to the last "
                            "proxy's ACK",
        "connect_seconds": {name: round(side.connect_seconds, 1) for name, side in both},
        **{key: {name: getattr(side, field) for name, side in both} for key, field in (
            ("clusters_per_proxy", "clusters_per_proxy"), ("unconverged", "unconverged"),
            ("full_pushes_during_flips", "full_pushes"),
            ("endpoint_pushes_during_flips", "endpoint_pushes"))},
        "eds_only": eds_only,
        "problems": files.problems + k8s.problems,
        "target": "none set by the issue (recorded); every flip EDS-only",
        "target_met": eds_only and not files.problems + k8s.problems,
    }])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10, help="Pods per Service")
    parser.add_argument("--proxies", type=int, default=1000, help="0: list-and-serve only")
    parser.add_argument("--starts", type=int, default=3, help="serve starts per side (min)")
    parser.add_argument("--flips", type=int, default=3, help="Pods flipped (each twice)")
    parser.add_argument(
        "--settle", type=float, default=2.0, help="quiet seconds before the first flip"
    )
    parser.add_argument("--connect-timeout", type=float, default=240.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="per flip, seconds")
    parser.add_argument(
        "--tail",
        type=float,
        default=0.5,
        help="quiet seconds that end a flip (a CDS or full push the flip set off would come "
        "within them: keep it above PILOTHOUSE_DEBOUNCE_AFTER, 0.1 s)",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
