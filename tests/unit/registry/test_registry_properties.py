"""Property: after any sequence of ServiceEntry / WorkloadEntry changes, the incrementally
kept registry equals a from-scratch rebuild of the store, and every change was classified
right (full only for service-level ServiceEntry changes, EDS-only naming exactly the
services whose endpoints changed, nothing when nothing changed)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.api.istio.networking.v1alpha3.service_entry_pb2 import ServiceEntry, ServicePort
from pilothouse.api.istio.networking.v1alpha3.workload_entry_pb2 import WorkloadEntry
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.model import Endpoint, Service, ServiceKey
from pilothouse.registry.serviceentry import (
    inline_endpoints,
    selects,
    services_of,
    workload_endpoints,
    workload_of,
)
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.memory import MemoryStore

NAMESPACES = ("a", "b")
T1 = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
T2 = datetime.datetime(2021, 1, 1, tzinfo=datetime.UTC)
SELECTORS: tuple[dict[str, str], ...] = ({}, {"app": "x"}, {"app": "y"}, {"app": "x", "v": "1"})


@st.composite
def service_entries(draw: st.DrawFn) -> Config:
    spec = ServiceEntry(
        hosts=draw(st.lists(st.sampled_from(["h1.test", "h2.test"]), min_size=1, max_size=2)),
        export_to=draw(st.sampled_from([[], ["."], ["*"]])),
    )
    for name, number in draw(
        st.lists(st.sampled_from([("http", 80), ("tcp", 90)]), min_size=1, max_size=2, unique=True)
    ):
        target = draw(st.sampled_from([0, 8080]))
        spec.ports.append(
            ServicePort(name=name, number=number, protocol="HTTP", target_port=target)
        )
    mode = draw(st.sampled_from(["endpoints", "selector", "dns", "none"]))
    if mode == "endpoints":
        spec.resolution = ServiceEntry.STATIC
        for address in draw(
            st.lists(st.sampled_from(["1.0.0.1", "1.0.0.2", "1.0.0.3"]), min_size=1, max_size=2)
        ):
            endpoint = WorkloadEntry(address=address, weight=draw(st.sampled_from([0, 2])))
            if draw(st.booleans()):
                endpoint.ports["http"] = 9000
            endpoint.labels.update(draw(st.sampled_from(SELECTORS)))
            spec.endpoints.append(endpoint)
    elif mode == "selector":
        spec.resolution = ServiceEntry.STATIC
        spec.workload_selector.SetInParent()
        spec.workload_selector.labels.update(draw(st.sampled_from(SELECTORS)))
    elif mode == "dns":
        spec.resolution = ServiceEntry.DNS
    return Config(
        kind="ServiceEntry",
        name=draw(st.sampled_from(["s1", "s2", "s3"])),
        namespace=draw(st.sampled_from(NAMESPACES)),
        spec=spec,
        creation_time=draw(st.sampled_from([None, T1, T2])),
        origin=Origin("prop"),
    )


@st.composite
def workload_entries(draw: st.DrawFn) -> Config:
    labels: dict[str, str] = {}
    app = draw(st.sampled_from(["x", "y", None]))
    if app is not None:
        labels["app"] = app
    version = draw(st.sampled_from(["1", "2", None]))
    if version is not None:
        labels["v"] = version
    spec = WorkloadEntry(
        address=draw(st.sampled_from(["10.0.0.1", "10.0.0.2"])),
        labels=labels,
        weight=draw(st.sampled_from([0, 5])),
        locality=draw(st.sampled_from(["", "r/z"])),
    )
    if draw(st.booleans()):
        spec.ports["tcp"] = 9090
    return Config(
        kind="WorkloadEntry",
        name=draw(st.sampled_from(["w1", "w2", "w3"])),
        namespace=draw(st.sampled_from(NAMESPACES)),
        spec=spec,
        labels=draw(st.sampled_from([{}, {"app": "y"}])),
        origin=Origin("prop"),
    )


@dataclass(frozen=True)
class Delete:
    key: ConfigKey


def deletes(kind: str, names: list[str]) -> st.SearchStrategy[Delete]:
    return st.builds(
        lambda ns, name: Delete(ConfigKey(kind, ns, name)),
        st.sampled_from(NAMESPACES),
        st.sampled_from(names),
    )


OPERATIONS = st.one_of(
    service_entries(),
    workload_entries(),
    deletes("ServiceEntry", ["s1", "s2", "s3"]),
    deletes("WorkloadEntry", ["w1", "w2", "w3"]),
)


def rebuild(store: MemoryStore) -> dict[ServiceKey, dict[ConfigKey, frozenset[Endpoint]]]:
    """The endpoint shards computed from nothing but the store's current content."""
    entries = store.configs("ServiceEntry")
    expected: dict[ServiceKey, dict[ConfigKey, set[Endpoint]]] = {}
    for entry in entries:
        for key, endpoints in inline_endpoints(entry).items():
            expected.setdefault(key, {})[entry.key] = set(endpoints)
    for config in store.configs("WorkloadEntry"):
        workload = workload_of(config)
        for entry in entries:
            for service in services_of(entry):
                if selects(service, workload):
                    shard = expected.setdefault(service.key, {}).setdefault(config.key, set())
                    shard.update(workload_endpoints(workload, service))
    return {
        key: {shard: frozenset(eps) for shard, eps in shards.items()}
        for key, shards in expected.items()
    }


def expected_services(store: MemoryStore) -> dict[ServiceKey, Service]:
    """For each service key, the definition of the oldest ServiceEntry declaring it."""
    chosen: dict[ServiceKey, Service] = {}
    for entry in store.configs("ServiceEntry"):
        for service in services_of(entry):
            held = chosen.get(service.key)
            if held is None or _older(service, held):
                chosen[service.key] = service
    return chosen


def _older(a: Service, b: Service) -> bool:
    def rank(s: Service) -> tuple[bool, datetime.datetime, ConfigKey]:
        return (s.creation_time is None, s.creation_time or T1, s.source)

    return rank(a) < rank(b)


def snapshot(registry: ServiceEntryRegistry) -> Mapping[ServiceKey, tuple[Endpoint, ...]]:
    index = registry.endpoint_index
    return {key: index.endpoints(key) for key in index.services()}


@settings(max_examples=150, deadline=None)
@given(st.lists(OPERATIONS, max_size=25))
def test_registry_incremental_equals_rebuild(operations: list[Config | Delete]) -> None:
    store = MemoryStore("prop")
    updates: list[RegistryUpdate] = []
    registry = ServiceEntryRegistry(store, updates.append)
    assert registry.initial_load() is None
    for operation in operations:
        key = operation.key
        before_config = store.get(key)
        before_endpoints = snapshot(registry)
        before_services = {s.key: s for s in registry.services()}
        before_versions = {k: registry.endpoint_index.version(k) for k in before_endpoints}
        seen = len(updates)
        if isinstance(operation, Delete):
            store.delete(key)
        else:
            store.apply(operation)
        after_config = store.get(key)
        after_endpoints = snapshot(registry)
        after_services = {s.key: s for s in registry.services()}
        new_updates = updates[seen:]
        assert len(new_updates) <= 1

        # The state equals a rebuild from scratch.
        index = registry.endpoint_index
        got = {
            k: {shard: frozenset(eps) for shard, eps in index.shards(k).items()}
            for k in index.services()
        }
        assert got == rebuild(store)
        assert after_services == expected_services(store)
        assert list(after_services) == sorted(after_services)

        # The change was classified right.
        changed_endpoints = {
            k
            for k in before_endpoints.keys() | after_endpoints.keys()
            if before_endpoints.get(k, ()) != after_endpoints.get(k, ())
        }
        changed_services = {
            k
            for k in before_services.keys() | after_services.keys()
            if before_services.get(k) != after_services.get(k)
        }
        service_level = key.kind == "ServiceEntry" and (
            (services_of(before_config) if before_config else ())
            != (services_of(after_config) if after_config else ())
        )
        if service_level:
            (update,) = new_updates
            assert update.full and update.config_keys == {key}
            assert update.services >= changed_endpoints | changed_services
        elif changed_endpoints:
            (update,) = new_updates
            # Endpoints of a DNS service ride inside its clusters: those changes push in
            # full (whichever entry of the host defines the service), the others by EDS.
            in_clusters = any(
                after_services[k].resolution.endpoints_in_cluster
                for k in changed_endpoints
                if k in after_services
            )
            assert update.full == in_clusters and update.config_keys == {key}
            assert update.services == changed_endpoints
            assert not changed_services
        else:
            assert new_updates == []
            assert not changed_services

        # Versions move exactly for the services whose endpoints changed.
        for k in before_endpoints.keys() | after_endpoints.keys():
            if k in changed_endpoints:
                assert index.version(k) > before_versions.get(k, 0)
            else:
                assert index.version(k) == before_versions.get(k, 0)

    # A registry started on the final store agrees with the incremental one.
    fresh = ServiceEntryRegistry(store, lambda update: None)
    fresh.initial_load()
    assert fresh.services() == registry.services()
    assert snapshot(fresh) == snapshot(registry)
