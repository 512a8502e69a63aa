"""The ServiceEntry registry and the Kubernetes registry as one, in one endpoint index.

The Kubernetes side is fed by in-memory feeds standing in for a Kubernetes API server's
informers, which cannot run here.
"""

from __future__ import annotations

import asyncio

import pytest

from pilothouse.registry.aggregate import AggregateRegistry
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.kubernetes.registry import KubeRegistry
from pilothouse.registry.model import Resolution, ServiceKey
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.discovery import DiscoveryServer
from tests.memory_kube import MemoryCluster, endpoint_slice, pod, service

from .registry_configs import Harness, service_entry

HOST = "reviews.shop.svc.cluster.local"
KEY = ServiceKey(HOST, "shop")


def shared_host_entry() -> str:
    return (
        f"  hosts: [{HOST}]\n  ports: [{{number: 9080, name: http, protocol: HTTP}}]\n"
        "  resolution: DNS\n  endpoints: [{address: 192.0.2.7}]\n"
    )


def build() -> tuple[Harness, MemoryCluster, KubeRegistry, AggregateRegistry, list[RegistryUpdate]]:
    entries = Harness(
        service_entry("reviews", shared_host_entry(), namespace="shop"),
        service_entry("other", "  hosts: [api.example.com]\n"
                      "  ports: [{number: 443, name: tls, protocol: TLS}]\n  resolution: DNS\n"),
    )  # fmt: skip
    cluster = MemoryCluster()
    updates: list[RegistryUpdate] = []
    kube = KubeRegistry(cluster.feeds(), entries.registry.endpoint_index, updates.append)
    aggregate = AggregateRegistry(entries.registry, kube)
    aggregate.initial_load()
    return entries, cluster, kube, aggregate, updates


def test_services_merge_and_a_kubernetes_service_wins_its_key() -> None:
    entries, cluster, _, aggregate, updates = build()
    assert aggregate.service(KEY) is not None
    assert aggregate.service(KEY).resolution is Resolution.DNS  # type: ignore[union-attr]
    first = aggregate.services()
    assert aggregate.services() is first  # not merged again while nothing changed
    cluster.services.apply(service("reviews", "shop", [{"name": "http", "port": 9080}]))
    cluster.pods.apply(pod("reviews-1", "shop", "10.0.0.1", {"app": "reviews"}))
    cluster.endpointslices.apply(
        endpoint_slice("reviews-a", "shop", "reviews", [("http", 9080)],
                       [("10.0.0.1", "reviews-1", True)])
    )  # fmt: skip
    assert [u.full for u in updates] == [True, False]
    merged = aggregate.services()
    assert [s.hostname for s in merged] == ["api.example.com", HOST]
    (winner,) = [s for s in merged if s.key == KEY]
    assert winner.resolution is Resolution.STATIC and winner.addresses == ("10.96.0.10",)
    assert aggregate.service(KEY) is winner
    assert aggregate.services_by_hostname(HOST) == (winner,)
    # both registries' endpoints are served, each in its own shard of the one index
    assert sorted(e.address for e in aggregate.endpoints(KEY)) == ["10.0.0.1", "192.0.2.7"]
    assert aggregate.endpoint_index is entries.registry.endpoint_index
    cluster.services.delete("shop", "reviews")
    assert aggregate.service(KEY).resolution is Resolution.DNS  # type: ignore[union-attr]
    assert [e.address for e in aggregate.endpoints(KEY)] == ["192.0.2.7"]


def test_the_registries_must_share_an_index() -> None:
    entries = Harness()
    kube = KubeRegistry(MemoryCluster().feeds(), EndpointIndex(), lambda update: None)
    with pytest.raises(ValueError, match="one endpoint index"):
        AggregateRegistry(entries.registry, kube)


async def test_discovery_server_waits_for_the_feeds_and_serves_both() -> None:
    store = MemoryStore("test")
    store.mark_synced()
    cluster = MemoryCluster(synced=False)
    cluster.services.apply(service("reviews", "shop", [{"name": "http", "port": 9080}]))
    server = DiscoveryServer(store, kube=cluster.feeds())
    assert isinstance(server.registry, AggregateRegistry)
    task = asyncio.create_task(server.run())
    await asyncio.sleep(0.1)
    assert not server.ready()  # the informers have not listed yet
    cluster.mark_synced()
    await asyncio.wait_for(server.wait_ready(), 5)
    assert [s.hostname for s in server.registry.services()] == [HOST]
    server.close()
    await asyncio.wait_for(task, 5)


def test_without_kubernetes_the_service_entry_registry_serves_alone() -> None:
    server = DiscoveryServer(MemoryStore("test"))
    assert server.kube is None
    assert isinstance(server.registry, ServiceEntryRegistry)
