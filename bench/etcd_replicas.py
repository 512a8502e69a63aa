"""Benchmark: two replicas on etcd against two replicas on a watched directory, in one run.

Part 1, write → last ACK. The push fan-out mesh (``harness/mesh.py``: ``--services``
ServiceEntries with DestinationRules and WorkloadEntries) is served by two
``pilothouse serve`` processes, each with ``--proxies`` simulated proxies
(``ProxyFleet``). Baseline: both replicas watch one directory and the DestinationRule of
service 0 is rewritten there. Measured: both replicas follow ``etcd://…/mesh`` (the same
objects) and the same DestinationRule is put into
etcd. Each run times, from just before the write, every proxy of both replicas until it
holds (has ACKed) the new cluster; reported are the medians over ``--runs`` of the p50,
p99 and last proxy.

Part 2, list and serve. For each of ``--sizes`` (default 10,000 and 100,000 objects:
half ServiceEntries, half VirtualServices: ``harness/config_mesh.py``), one replica is
started on a directory of those objects (baseline, 1,000 objects per file) and one on etcd
holding the same objects; timed from the process start until it logs ``config loaded`` (every source
synced and the first push context built). Python start-up is in both.

Everything (etcd, the replicas, 2 × ``--proxies`` proxies) shares this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aetcd
import yaml

from bench.harness.config_mesh import config_objects, config_text
from bench.harness.figures import emit
from bench.harness.mesh import FanoutMesh
from bench.harness.process import ServerProcess
from pilothouse.config.model import ConfigKey
from pilothouse.loadtest.fleet import ConvergenceReport, ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.sources.etcd_layout import EtcdLayout, stored_value
from tests.e2e.harness.etcd import EtcdServer

CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
PREFIX = "/mesh"
ENVIRONMENT = {
    "PILOTHOUSE_FILE_DEBOUNCE": "0.05",
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.05",
    "PILOTHOUSE_DRAIN_SECONDS": "1",
    "PILOTHOUSE_XDS_ADMISSION_RATE": "0",
}
TXN_OPS = 128
"""etcd's default --max-txn-ops."""


def serve_argv(source: Sequence[str]) -> list[str]:
    return [
        sys.executable, "-m", "pilothouse.cli.main", "serve", *source,
        "--xds-address", "127.0.0.1:0", "--admin-address", "127.0.0.1:0",
        "--ctrlz-address", "off", "--log-level", "info",
    ]  # fmt: skip


# -- part 1: write → last ACK --------------------------------------------------------------


class Replicas:
    """Two serve processes on one source, each with its own fleet of simulated proxies."""

    def __init__(self, name: str, source: Sequence[str], folder: Path) -> None:
        self.name = name
        self.servers = [
            ServerProcess(
                f"{name}-{i}", serve_argv(source), folder / f"{name}-{i}.log", ENVIRONMENT
            )
            for i in range(2)
        ]
        self.fleets: list[ProxyFleet] = []

    async def start(self, mesh: FanoutMesh, proxies: int, streams: int) -> None:
        for index, server in enumerate(self.servers):
            found = await server.wait_for_line(r"xDS listening on \S+:(\d+)", 120)
            await server.wait_for_line(r" config loaded ", 300)
            fleet = ProxyFleet(
                f"127.0.0.1:{found.group(1)}",
                fleet_identities(proxies, namespaces=mesh.namespace_names, start=index * proxies),
                streams_per_channel=streams,
                seed=index + 1,
            )
            self.fleets.append(fleet)
            await fleet.start()
        for fleet in self.fleets:
            report = await fleet.wait_converged(timeout=300)
            if not report.converged:
                raise RuntimeError(f"{self.name}: {len(report.unconverged)} proxies never settled")

    async def timed(self, cluster: str, write: Any) -> tuple[float, float, float]:
        """Run ``write``; (p50, p99, last) seconds until every proxy holds the new cluster."""
        old = self.fleets[0].proxies[0].holds(CDS)[cluster].body

        def updated(proxy: SimulatedProxy) -> bool:
            held = proxy.holds(CDS).get(cluster)
            return held is not None and held.body != old

        start = time.monotonic()
        await write()
        reports: list[ConvergenceReport] = await asyncio.gather(
            *(fleet.wait_converged(updated, timeout=120, since=start) for fleet in self.fleets)
        )
        if not all(r.converged for r in reports):
            raise RuntimeError(f"{self.name}: proxies missed the push")
        durations = sorted(d for r in reports for d in r.durations)
        return (
            durations[len(durations) // 2],
            durations[min(len(durations) - 1, int(len(durations) * 0.99))],
            durations[-1],
        )

    async def stop(self) -> None:
        for fleet in self.fleets:
            await fleet.close()
        for server in self.servers:
            server.stop()


async def write_to_ack(args: argparse.Namespace, folder: Path, etcd: EtcdServer) -> dict[str, Any]:
    mesh = FanoutMesh(folder / "mesh", args.services, namespaces=5, endpoints=1)
    mesh.write()
    layout = EtcdLayout(PREFIX)
    rule = mesh.root / mesh.namespace_of(0) / "svc-0-rule.yaml"
    key = layout.key_of(ConfigKey("DestinationRule", mesh.namespace_of(0), "svc-0"))
    state = [0]

    async def write_file() -> None:
        state[0] = 1 - state[0]
        mesh.set_state("cds", state[0])

    async with aetcd.Client("127.0.0.1", etcd.client_port) as client:

        async def write_etcd() -> None:
            state[0] = 1 - state[0]
            mesh.set_state("cds", state[0])  # the directory is not served on this side
            data = yaml.safe_load(rule.read_text())
            await client.put(key, stored_value(data, mesh.namespace_of(0), "2026-01-01T00:00:00Z"))

        results: dict[str, Any] = {}
        sides = (
            ("directory", ["--config", str(mesh.root)], write_file),
            ("etcd", ["--config-source", etcd.address(PREFIX)], write_etcd),
        )
        for name, source, write in sides:
            if name == "etcd":
                # The objects as the directory holds them now, written directly in batches
                # (150 objects are more than one `apply` transaction takes).
                await fill_etcd(etcd, PREFIX, [
                    d for path in sorted(mesh.root.rglob("*.yaml"))
                    for d in yaml.safe_load_all(path.read_text())
                ])  # fmt: skip
            replicas = Replicas(name, source, folder)
            try:
                await replicas.start(mesh, args.proxies, args.streams_per_channel)
                await asyncio.sleep(1.0)
                runs = []
                for _ in range(args.runs):
                    runs.append(await replicas.timed(mesh.cluster(0), write))
                    await asyncio.sleep(0.5)
            finally:
                await replicas.stop()
            results[name] = {
                "p50_s": round(statistics.median(r[0] for r in runs), 4),
                "p99_s": round(statistics.median(r[1] for r in runs), 4),
                "last_s": round(statistics.median(r[2] for r in runs), 4),
            }
    return results


# -- part 2: list and serve ----------------------------------------------------------------


async def fill_etcd(etcd: EtcdServer, prefix: str, made: list[dict[str, Any]]) -> None:
    layout = EtcdLayout(prefix)
    puts = [
        (
            layout.key_of(ConfigKey(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])),
            stored_value(o, o["metadata"]["namespace"], "2026-01-01T00:00:00Z"),
        )
        for o in made
    ]
    async with aetcd.Client("127.0.0.1", etcd.client_port, timeout=60) as client:
        batches = [puts[i : i + TXN_OPS] for i in range(0, len(puts), TXN_OPS)]
        gate = asyncio.Semaphore(8)

        async def one(batch: list[tuple[bytes, bytes]]) -> None:
            async with gate:
                ops = [client.transactions.put(k, v) for k, v in batch]
                await client.transaction(compare=[], success=ops, failure=[])

        await asyncio.gather(*(one(b) for b in batches))


async def time_to_loaded(name: str, source: Sequence[str], log: Path) -> float:
    started = time.monotonic()
    server = ServerProcess(name, serve_argv(source), log, ENVIRONMENT)
    try:
        await server.wait_for_line(r" config loaded ", 1800)
        return time.monotonic() - started
    finally:
        server.stop()


async def list_and_serve(
    sizes: Sequence[int], folder: Path, etcd: EtcdServer
) -> list[dict[str, Any]]:
    points = []
    for size in sizes:
        made = config_objects(size // 2, ("ServiceEntry", "VirtualService"))
        directory = folder / f"objects-{size}"
        directory.mkdir()
        for start in range(0, len(made), 1000):
            (directory / f"part-{start // 1000:04d}.yaml").write_text(
                config_text(made[start : start + 1000])
            )
        prefix = f"/objects-{size}"
        await fill_etcd(etcd, prefix, made)
        baseline = await time_to_loaded(
            f"dir-{size}", ["--config", str(directory)], folder / f"dir-{size}.log"
        )
        measured = await time_to_loaded(
            f"etcd-{size}",
            ["--config", str(folder / "empty"), "--config-source", etcd.address(prefix)],
            folder / f"etcd-{size}.log",
        )
        points.append(
            {"objects": size, "directory_s": round(baseline, 2), "etcd_s": round(measured, 2)}
        )
        print(f"{size} objects: directory {baseline:.1f}s, etcd {measured:.1f}s", file=sys.stderr)
    return points


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--proxies", type=int, default=500, help="per replica")
    parser.add_argument("--services", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--streams-per-channel", type=int, default=5)
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="etcd-replicas-") as scratch:
        folder = Path(scratch)
        (folder / "empty").mkdir()
        etcd = await EtcdServer(folder / "etcd").start()
        try:
            push = await write_to_ack(args, folder, etcd)
            sizes = [int(s) for s in args.sizes.split(",") if s]
            curve = await list_and_serve(sizes, folder, etcd)
        finally:
            await etcd.stop()
    direct, etcd_side = push["directory"], push["etcd"]
    emit(
        [
            {
                "benchmark": "etcd_replicas",
                "headline": "etcd_last_ack_p99_s",
                "replicas": 2,
                "proxies_per_replica": args.proxies,
                "services": args.services,
                "runs": args.runs,
                "baseline": "the same write through a watched directory (two replicas), same run",
                "baseline_last_ack_p50_s": direct["p50_s"],
                "baseline_last_ack_p99_s": direct["p99_s"],
                "baseline_last_ack_max_s": direct["last_s"],
                "etcd_last_ack_p50_s": etcd_side["p50_s"],
                "etcd_last_ack_p99_s": etcd_side["p99_s"],
                "etcd_last_ack_max_s": etcd_side["last_s"],
                "ratio_to_baseline": round(etcd_side["p99_s"] / direct["p99_s"], 2),
                "ratio_definition": "p99 write → ACK through etcd ÷ through a watched directory"
                " (below 1: etcd is faster)",
                "curve": curve,
                "curve_definition": "seconds from process start to 'config loaded' for a"
                " replica on a directory (baseline) and on etcd holding the same objects",
                "target": "none set by the issue",
            }
        ]
    )
    print(f"done in {time.monotonic() - began:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
