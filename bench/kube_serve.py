"""Benchmark: ``pilothouse serve`` on a Kubernetes mesh from the fake API server, against
the same mesh from files, in the same run.

The mesh: N Services (default 1,000) in 10 namespaces, each with P Pods (default 10:
10,000 Pods) spread over 20 Nodes in 4 zones, one EndpointSlice per Service, the
Namespaces, and a Sidecar per namespace whose egress is its own namespace and ``ns-0``
(so each proxy holds 200 clusters and every proxy holds ``ns-0``'s, where the flips
happen). The Kubernetes objects live in the fake API server of
``tests/kube/fake_apiserver.py`` (a fake: no real API server can run here) in a child
process; ``serve --config-source k8s:// --kubeconfig`` lists and watches them (the
Sidecars through the Istio config source, the rest through the service registry's
informers). The baseline is the same mesh as files (``--config DIR``): a ServiceEntry
per Service selecting its WorkloadEntries (one per Pod, with its labels, service
account and locality), one file of WorkloadEntries per Service.

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
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.harness.fleet import start_converged
from bench.harness.process import ServerProcess
from bench.harness.push import timed_push
from bench.harness.servers import raise_open_file_limit
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.triggers import write_atomically
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from tests import memory_kube as kube

NAMESPACES = 10
NODES = 20
ZONES = 4
REGION = "region-1"
PORT = 9080
TARGET_PORT = 8080
SHARED = "ns-0"
READY_POLL = 0.01
STARTUP_TIMEOUT = 300.0
SERVER_ENV = {
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.1",
    "PILOTHOUSE_FILE_DEBOUNCE": "0.05",
    "PILOTHOUSE_LOG_LEVEL": "info",
}
ADMIN_LINE = r"admin \(.*\) listening on (\S+):(\d+)"
XDS_LINE = r"xDS listening on (\S+):(\d+)"


@dataclass(frozen=True)
class KubeMesh:
    """The mesh's shape and names, the same for both sides."""

    services: int
    pods: int

    def namespace(self, service: int) -> str:
        return f"ns-{service % NAMESPACES}"

    def name(self, service: int) -> str:
        return f"svc-{service}"

    def host(self, service: int) -> str:
        return f"{self.name(service)}.{self.namespace(service)}.svc.cluster.local"

    def cluster(self, service: int) -> str:
        return f"outbound|{PORT}||{self.host(service)}"

    def pod_name(self, service: int, index: int) -> str:
        return f"{self.name(service)}-{index}"

    def pod_ip(self, service: int, index: int) -> str:
        number = service * self.pods + index
        return f"10.{100 + number // 65536}.{(number >> 8) & 0xFF}.{number & 0xFF}"

    def node_of(self, service: int, index: int) -> int:
        return (service * self.pods + index) % NODES

    def zone(self, node: int) -> str:
        return f"zone-{node % ZONES}"

    def labels(self, service: int) -> dict[str, str]:
        return {"app": self.name(service), "version": "v1"}

    def flipped(self, count: int) -> list[int]:
        """Services of ``ns-0`` whose first Pod flips, one per flip pair."""
        return [i * NAMESPACES for i in range(count) if i * NAMESPACES < self.services]

    # -- the Kubernetes objects ----------------------------------------------------------

    def sidecars(self) -> list[dict[str, Any]]:
        return [
            {"apiVersion": "networking.istio.io/v1", "kind": "Sidecar",
             "metadata": {"name": "default", "namespace": f"ns-{n}"},
             "spec": {"egress": [{"hosts": sorted({"./*", f"{SHARED}/*"} - {f"ns-{n}/*"})}]}}
            for n in range(NAMESPACES)
        ]  # fmt: skip

    def pod(self, service: int, index: int, *, ready: bool) -> dict[str, Any]:
        return kube.pod(
            self.pod_name(service, index), self.namespace(service), self.pod_ip(service, index),
            self.labels(service), service_account=self.name(service),
            node=f"node-{self.node_of(service, index)}", ready=ready,
            container_ports=[{"name": "http-web", "containerPort": TARGET_PORT}],
        )  # fmt: skip

    def endpoint_slice(self, service: int, unready: frozenset[int]) -> dict[str, Any]:
        return kube.endpoint_slice(
            f"{self.name(service)}-abcde", self.namespace(service), self.name(service),
            [("http-web", TARGET_PORT)],
            [(self.pod_ip(service, k), self.pod_name(service, k), k not in unready)
             for k in range(self.pods)],
        )  # fmt: skip

    def kubernetes(self) -> list[dict[str, Any]]:
        objects = [kube.namespace(f"ns-{n}") for n in range(NAMESPACES)]
        objects += [kube.node(f"node-{n}", REGION, self.zone(n)) for n in range(NODES)]
        objects += self.sidecars()
        for s in range(self.services):
            objects.append(
                kube.service(
                    self.name(s), self.namespace(s), [{"name": "http-web", "port": PORT,
                                                       "targetPort": TARGET_PORT}],
                    selector={"app": self.name(s)},
                    cluster_ip=f"10.96.{s // 250}.{s % 250 + 1}",
                )
            )  # fmt: skip
            objects += [self.pod(s, k, ready=True) for k in range(self.pods)]
            objects.append(self.endpoint_slice(s, frozenset()))
        return objects

    # -- the same mesh as files ----------------------------------------------------------

    def service_entry(self, service: int) -> dict[str, Any]:
        return {
            "apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry",
            "metadata": {"name": self.name(service), "namespace": self.namespace(service)},
            "spec": {"hosts": [self.host(service)],
                     "addresses": [f"10.96.{service // 250}.{service % 250 + 1}"],
                     "location": "MESH_INTERNAL", "resolution": "STATIC",
                     "ports": [{"number": PORT, "name": "http-web", "protocol": "HTTP",
                                "targetPort": TARGET_PORT}],
                     "workloadSelector": {"labels": {"app": self.name(service)}}},
        }  # fmt: skip

    def workload_entry(self, service: int, index: int) -> dict[str, Any]:
        node = self.node_of(service, index)
        return {
            "apiVersion": "networking.istio.io/v1", "kind": "WorkloadEntry",
            "metadata": {"name": self.pod_name(service, index),
                         "namespace": self.namespace(service)},
            "spec": {"address": self.pod_ip(service, index), "labels": self.labels(service),
                     "serviceAccount": self.name(service),
                     "locality": f"{REGION}/{self.zone(node)}"},
        }  # fmt: skip

    def workloads_file(self, root: Path, service: int) -> Path:
        return root / f"workloads-{self.name(service)}.yaml"

    def write_workloads(self, root: Path, service: int, unready: frozenset[int]) -> None:
        entries = [self.workload_entry(service, k) for k in range(self.pods) if k not in unready]
        write_atomically(self.workloads_file(root, service), yaml.safe_dump_all(entries))

    def write_files(self, root: Path) -> None:
        root.mkdir(parents=True)
        (root / "sidecars.yaml").write_text(yaml.safe_dump_all(self.sidecars()))
        for n in range(NAMESPACES):
            entries = [self.service_entry(s) for s in range(n, self.services, NAMESPACES)]
            (root / f"services-ns-{n}.yaml").write_text(yaml.safe_dump_all(entries))
        for s in range(self.services):
            self.write_workloads(root, s, frozenset())


# -- the fake API server's child process ---------------------------------------------------


async def serve_fake(mesh: KubeMesh, kubeconfig: Path) -> None:
    """Child mode: the fake API server holding the mesh; ``flip SERVICE INDEX 0|1`` lines
    on stdin write that Pod's readiness (Pod status, then its EndpointSlice), answered
    ``ok``; stops when stdin closes."""
    from tests.kube.fake_apiserver import FakeApiServer

    loop = asyncio.get_running_loop()
    async with FakeApiServer() as api:
        for obj in mesh.kubernetes():
            api.create(obj)
        api.kubeconfig(kubeconfig)
        print("ready", flush=True)
        unready: dict[int, set[int]] = {}
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            _, service_text, index_text, ready_text = line.split()
            service, index, ready = int(service_text), int(index_text), ready_text == "1"
            down = unready.setdefault(service, set())
            (down.discard if ready else down.add)(index)
            pod = api.get("pods", mesh.namespace(service), mesh.pod_name(service, index))
            assert pod is not None
            pod = copy.deepcopy(pod)
            pod["status"]["conditions"] = [
                {"type": "Ready", "status": "True" if ready else "False"}
            ]
            api.update_status(pod)
            api.apply(mesh.endpoint_slice(service, frozenset(down)))
            print("ok", flush=True)


class FakeApiChild:
    """The fake API server in a child process, and its flip channel."""

    def __init__(self, mesh: KubeMesh, kubeconfig: Path) -> None:
        self._child = subprocess.Popen(
            [sys.executable, __file__, "--services", str(mesh.services), "--pods",
             str(mesh.pods), "--serve-fake", str(kubeconfig)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self._child.stdout is not None
        if self._child.stdout.readline().strip() != "ready":
            self.stop()
            raise RuntimeError("the fake API server did not start")

    def flip(self, service: int, index: int, ready: bool) -> None:
        assert self._child.stdin is not None and self._child.stdout is not None
        self._child.stdin.write(f"flip {service} {index} {int(ready)}\n")
        self._child.stdin.flush()
        answer = self._child.stdout.readline().strip()
        if answer != "ok":
            raise RuntimeError(f"fake API server answered {answer!r}")

    def stop(self) -> None:
        if self._child.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self._child.stdin.close()
        try:
            self._child.wait(30)
        except subprocess.TimeoutExpired:
            self._child.kill()
            self._child.wait(10)


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
                    timeout=options.timeout, tail=0.5, type_urls=(CDS, EDS, LDS, RDS),
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
        api = FakeApiChild(mesh, kubeconfig)
        try:
            k8s = SideFigures("k8s")
            argv = ["--config-source", "k8s://", "--kubeconfig", str(kubeconfig)]
            await run_side(k8s, argv, work / "k8s.log", mesh, options, api.flip)
        finally:
            api.stop()
        log = (work / "k8s.log").read_text(errors="replace")
    if "Traceback" in log:
        print(f"!!! k8s serve log has a traceback:\n{log[-3000:]}", file=sys.stderr)
    shape = (f"{mesh.services} Services, {mesh.services * mesh.pods} Pods, "
             f"{NODES} Nodes, {NAMESPACES} namespaces")  # fmt: skip
    print(json.dumps({
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
    }), flush=True)  # fmt: skip
    if not options.proxies:
        return
    print(json.dumps({
        "benchmark": "kube_serve_flip",
        "mesh": shape,
        "proxies": options.proxies,
        "flips": len(k8s.p50),
        "baseline": "the same flip as a WorkloadEntry taken out of / put back into its file "
                    "(fs source, debounce 0.05 s), same run",
        "baseline_p50_ms": _ms(files.p50),
        "baseline_p99_ms": _ms(files.p99),
        "baseline_last_ms": _ms(files.last),
        "pilothouse_p50_ms": _ms(k8s.p50),
        "pilothouse_p99_ms": _ms(k8s.p99),
        "pilothouse_last_ms": _ms(k8s.last),
        "headline": "pilothouse_last_ms",
        "ratio_to_baseline": round(statistics.median(files.last) / statistics.median(k8s.last), 2),
        "ratio_definition": "files ÷ k8s:// of the median (over flips) time to the last "
                            "proxy's ACK",
        "connect_seconds": {"files": round(files.connect_seconds, 1),
                            "k8s": round(k8s.connect_seconds, 1)},
        "clusters_per_proxy": {"files": files.clusters_per_proxy,
                               "k8s": k8s.clusters_per_proxy},
        "unconverged": {"files": files.unconverged, "k8s": k8s.unconverged},
        "full_pushes_during_flips": {"files": files.full_pushes, "k8s": k8s.full_pushes},
        "endpoint_pushes_during_flips": {"files": files.endpoint_pushes,
                                         "k8s": k8s.endpoint_pushes},
        "eds_only": files.eds_only and k8s.eds_only,
        "problems": files.problems + k8s.problems,
        "target": "none set by the issue (recorded); every flip EDS-only",
        "target_met": files.eds_only and k8s.eds_only and not files.problems + k8s.problems,
    }), flush=True)  # fmt: skip


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
    parser.add_argument("--serve-fake", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve_fake:
        mesh = KubeMesh(options.services, options.pods)
        asyncio.run(serve_fake(mesh, Path(options.serve_fake)))
        return
    asyncio.run(run(options))


if __name__ == "__main__":
    main()
