"""Benchmark: list-and-serve time of a large mesh's Istio config from a Kubernetes API
server, against the same mesh from files, in the same run.

The mesh: N services (default 2,000), each a ServiceEntry, a VirtualService and a
DestinationRule (``bench/harness/config_mesh.py``: 3N objects). Timed, from a cold start
to the discovery server's first PushContext (what ``/ready`` waits for):

- baseline: the file source over a directory holding the mesh as YAML (one file per
  namespace);
- pilothouse ``k8s://``: the Kubernetes source over the fake API server in a child
  process (``bench/harness/kube_api.py``); the source lists every kind (pages of 500),
  decodes the JSON and validates each object.

Prints one JSON line; ``ratio_to_baseline`` is files seconds ÷ k8s seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.config_mesh import NAMESPACES, config_objects, config_text
from bench.harness.figures import emit
from bench.harness.kube_api import FakeApiChild
from pilothouse.settings import KubeSettings
from pilothouse.sources.addresses import build_source
from pilothouse.sources.events import ConfigStore
from pilothouse.sources.fs import FileSource
from pilothouse.sources.kubernetes.config_source import KubeConfigSource
from pilothouse.xds.server.discovery import DiscoveryServer


async def ready_after(store_ready: Any, store: ConfigStore) -> None:
    await store_ready()
    server = DiscoveryServer(store)
    task = asyncio.create_task(server.run())
    await asyncio.wait_for(server.wait_ready(), 300)
    server.close()
    await task


async def from_files(directory: Path) -> float:
    started = time.perf_counter()
    source = FileSource(directory)

    async def load() -> None:
        source.load_all()

    await ready_after(load, source.store)
    return time.perf_counter() - started


async def from_kubernetes(kubeconfig: str, expected: int) -> float:
    source = build_source("k8s://", kube=KubeSettings(kubeconfig))
    assert isinstance(source, KubeConfigSource)
    started = time.perf_counter()
    task = asyncio.create_task(source.run())

    async def synced() -> None:
        while not source.has_synced():
            await asyncio.sleep(0.001)

    await ready_after(synced, source.store)
    elapsed = time.perf_counter() - started
    assert len(source.store) == expected, (len(source.store), expected)
    source.close()
    await task
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--services", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    objects = config_objects(args.services)
    with tempfile.TemporaryDirectory(prefix="kube-bench-") as scratch:
        directory = Path(scratch) / "mesh"
        directory.mkdir()
        for n in range(NAMESPACES):
            mine = [o for o in objects if o["metadata"]["namespace"] == f"ns-{n}"]
            (directory / f"ns-{n}.yaml").write_text(config_text(mine))
        kubeconfig = Path(scratch) / "kubeconfig"
        api = FakeApiChild(objects, kubeconfig)
        try:
            files, kube = [], []
            for _ in range(args.runs):
                files.append(asyncio.run(from_files(directory)))
                kube.append(asyncio.run(from_kubernetes(str(kubeconfig), len(objects))))
        finally:
            api.stop()
    baseline, ours = min(files), min(kube)
    emit(
        [
            {
                "benchmark": "kube_source",
                "objects": len(objects),
                "baseline": "the same mesh from files (fs source), to the first PushContext",
                "baseline_seconds": round(baseline, 3),
                "pilothouse_seconds": round(ours, 3),
                "headline": "pilothouse_seconds",
                "us_per_object": round(ours / len(objects) * 1e6, 1),
                "ratio_to_baseline": round(baseline / ours, 2),
                "ratio_definition": "files seconds ÷ k8s:// seconds (1 = as fast as files; "
                "the fake API server runs in a child process)",
                "target": "none set by the issue (list-and-serve time, recorded)",
            }
        ]
    )


if __name__ == "__main__":
    main()
