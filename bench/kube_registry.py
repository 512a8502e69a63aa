"""Benchmark: the Kubernetes registry against the ServiceEntry registry on the same mesh.

The mesh (``bench/harness/kube_mesh.py``, as kube_serve's): S Services (default 1,000),
each selecting P Pods (default 10, so 10,000 Pods). Timed in the same process and run:

- **load**: the objects handed over as a source would hand them (Kubernetes: the API
  server's JSON objects, delivered as the informers' initial ADDED events; ServiceEntries:
  parsed Configs applied to a memory store), then the registry's initial load and every
  service's endpoints read once (the first EDS push reads them all).
  - pilothouse: :class:`KubeRegistry` from five feeds: S Services, S EndpointSlices
    (one per Service, its P Pods), S×P Pods, the Nodes and Namespaces;
  - baseline: :class:`ServiceEntryRegistry` from S ServiceEntries with a
    ``workloadSelector`` and S×P WorkloadEntries (same hosts, ports, labels, addresses).
- **flip**: one workload's readiness (Kubernetes: its slice marks it not ready, then ready
  again; baseline: its WorkloadEntry's address moves away and back), N events, each
  through the EDS fast path; the time per event (best of the runs).

The feeds stand in for informers (no Kubernetes API server runs here): they replay
prepared objects, so the figures are the registry's own cost, not the network's.

Run: ``.venv/bin/python bench/kube_registry.py`` (``--services 1000 --pods 10``); one
JSON line per scenario.
"""

from __future__ import annotations

import argparse
import copy
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit
from bench.harness.kube_mesh import KubeMesh
from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.registry.kubernetes.registry import KubeRegistry
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.kubernetes.events import KubeEvent, KubeHandler, WatchEventType
from pilothouse.sources.memory import MemoryStore


class ReplayFeed:
    """A feed that replays prepared objects as ADDED events, as an informer's list does."""

    def __init__(self, resource: str, objects: list[dict[str, Any]]) -> None:
        self._resource = resource
        self.objects = objects
        self.handlers: list[KubeHandler] = []

    @property
    def resource(self) -> str:
        return self._resource

    def subscribe(self, handler: KubeHandler) -> Callable[[], None]:
        self.handlers.append(handler)
        for obj in self.objects:
            handler(KubeEvent(WatchEventType.ADDED, obj))
        return lambda: None

    def has_synced(self) -> bool:
        return True

    def send(self, obj: dict[str, Any]) -> None:
        for handler in self.handlers:
            handler(KubeEvent(WatchEventType.MODIFIED, obj))


def read_all(index: EndpointIndex, keys: list[Any]) -> int:
    return sum(len(index.endpoints(key)) for key in keys)


KubeLoad = tuple[float, KubeRegistry, dict[str, ReplayFeed], int]
EntriesLoad = tuple[float, ServiceEntryRegistry, MemoryStore, int]


def load_kube(objects: dict[str, list[dict[str, Any]]]) -> KubeLoad:
    feeds = {kind: ReplayFeed(kind, list(items)) for kind, items in objects.items()}
    gc.collect()
    start = time.perf_counter()
    registry = KubeRegistry(
        KubeFeeds(feeds["services"], feeds["endpointslices"], feeds["pods"], feeds["nodes"],
                  feeds["namespaces"]),
        EndpointIndex(),
        lambda update: None,
    )  # fmt: skip
    registry.initial_load()
    endpoints = read_all(registry.endpoint_index, [s.key for s in registry.services()])
    return time.perf_counter() - start, registry, feeds, endpoints


def load_service_entries(configs: list[Config]) -> EntriesLoad:
    gc.collect()
    start = time.perf_counter()
    store = MemoryStore("bench")
    for config in configs:
        store.apply(config)
    store.mark_synced()
    registry = ServiceEntryRegistry(store, lambda update: None)
    registry.initial_load()
    endpoints = read_all(registry.endpoint_index, [s.key for s in registry.services()])
    return time.perf_counter() - start, registry, store, endpoints


def best(runs: int, work: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
    results = [work() for _ in range(runs)]
    return min(results, key=lambda result: float(result[0]))


def flip_kube(objects: dict[str, list[dict[str, Any]]], events: int, runs: int) -> float:
    _, registry, feeds, _ = load_kube(objects)
    updates: list[RegistryUpdate] = []
    registry._on_update = updates.append  # count what the flips announce
    slices = objects["endpointslices"]
    flips = []
    for n in range(events):
        original = slices[n % len(slices)]
        unready = copy.deepcopy(original)
        unready["endpoints"][0]["conditions"].update(ready=False, serving=False)
        flips.append((original, unready))
    fastest = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        for _, unready in flips:
            feeds["endpointslices"].send(unready)
        for original, _ in flips:
            feeds["endpointslices"].send(original)
        fastest = min(fastest, time.perf_counter() - start)
    assert all(not u.full for u in updates) and len(updates) == 2 * events * runs, len(updates)
    return fastest / (2 * events)


def flip_service_entries(configs: list[Config], events: int, runs: int) -> float:
    _, registry, store, _ = load_service_entries(configs)
    updates: list[RegistryUpdate] = []
    registry._on_update = updates.append
    workloads = [c for c in configs if c.kind == "WorkloadEntry"]
    moved = []
    for n in range(events):
        original = workloads[(n * 10) % len(workloads)]
        spec = type(original.spec)()
        spec.CopyFrom(original.spec)
        spec.address = f"10.255.{n // 256 % 256}.{n % 256}"
        moved.append((original, Config(**{**_fields(original), "spec": spec})))
    fastest = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        for _, changed in moved:
            store.apply(changed)
        for original, _ in moved:
            store.apply(original)
        fastest = min(fastest, time.perf_counter() - start)
    assert all(not u.full for u in updates) and len(updates) == 2 * events * runs, len(updates)
    return fastest / (2 * events)


def _fields(config: Config) -> dict[str, Any]:
    return {
        "kind": config.kind, "name": config.name, "namespace": config.namespace,
        "labels": config.labels, "annotations": config.annotations,
        "resource_version": config.resource_version, "creation_time": config.creation_time,
        "origin": config.origin,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--flips", type=int, default=500)
    args = parser.parse_args()
    mesh = KubeMesh(args.services, args.pods)
    objects = mesh.by_resource()
    result = Loader(SCHEMAS).load_text(mesh.files_text(), "bench.yaml")
    assert result.ok, result.errors[:3]
    configs = list(result.configs)
    workloads = args.services * args.pods

    kube_s, _, _, kube_endpoints = best(args.runs, lambda: load_kube(objects))
    se_s, _, _, se_endpoints = best(args.runs, lambda: load_service_entries(configs))
    assert kube_endpoints == se_endpoints == workloads, (kube_endpoints, se_endpoints)
    label = f"{args.services} Services with {workloads} Pods"
    emit(
        [
            {
                "benchmark": f"kube_registry: load {label}",
                "headline": "pilothouse_seconds",
                "services": args.services,
                "pods": workloads,
                "endpoints": kube_endpoints,
                "baseline": f"ServiceEntryRegistry: {args.services} ServiceEntries + "
                f"{workloads} WorkloadEntries, same mesh, same run",
                "baseline_seconds": round(se_s, 3),
                "pilothouse_seconds": round(kube_s, 3),
                "us_per_pod": round(kube_s / workloads * 1e6, 1),
                "ratio_to_baseline": round(se_s / kube_s, 2),
                "ratio_definition": "baseline seconds ÷ Kubernetes registry seconds "
                "(above 1 = the Kubernetes registry loads faster)",
                "target": "none set by the issue (the API server's list is not included)",
            }
        ]
    )
    kube_flip = flip_kube(objects, args.flips, args.runs)
    se_flip = flip_service_entries(configs, args.flips, args.runs)
    emit(
        [
            {
                "benchmark": f"kube_registry: one workload's readiness flips ({label})",
                "headline": "pilothouse_us_per_event",
                "events": 2 * args.flips,
                "baseline": "a WorkloadEntry's address moves (the ServiceEntry registry's "
                "EDS fast path), same mesh, same run",
                "baseline_us_per_event": round(se_flip * 1e6, 1),
                "pilothouse_us_per_event": round(kube_flip * 1e6, 1),
                "ratio_to_baseline": round(se_flip / kube_flip, 2),
                "ratio_definition": "baseline µs ÷ Kubernetes registry µs per event "
                "(registry work only: both take the EDS fast path, no full update)",
                "target": "none set by the issue",
            }
        ]
    )


if __name__ == "__main__":
    main()
