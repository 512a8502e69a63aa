"""The Kubernetes registry kept up to date event by event equals one loaded from scratch.

Random sequences of Service, EndpointSlice, Pod and Node changes (in-memory feeds stand in
for a Kubernetes API server's informers, which cannot run here) are applied to a loaded
registry; a second registry then loads the final objects at once. Their services and every
service's endpoints must be the same, whatever order the reverse indexes saw things in.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.kubernetes.registry import KubeRegistry
from pilothouse.registry.update import RegistryUpdate
from tests.memory_kube import MemoryCluster, MemoryFeed, endpoint_slice, node, pod, service

NS = "prop"
SERVICES = ("a", "b")
PODS = ("p1", "p2", "p3")
NODES = ("n1", "n2")


def _service(name: str, kind: int) -> dict[str, Any]:
    ports = [{"name": "http", "port": 80}]
    if kind == 1:
        return service(name, NS, ports, cluster_ip="None")
    if kind == 2:
        return service(name, NS, ports, kind="ExternalName", external_name=f"{name}.example.com")
    return service(name, NS, ports, selector={"app": name})


services = st.tuples(st.just("services"), st.sampled_from(SERVICES), st.integers(0, 2))
slices = st.tuples(
    st.just("endpointslices"),
    st.sampled_from(("s1", "s2", "s3")),
    st.tuples(
        st.sampled_from(SERVICES),
        st.lists(
            st.tuples(st.sampled_from(PODS), st.booleans()), max_size=3, unique_by=lambda e: e[0]
        ),
    ),
)
pods = st.tuples(
    st.just("pods"),
    st.sampled_from(PODS),
    st.tuples(st.sampled_from(("v1", "v2")), st.sampled_from(NODES)),
)
nodes = st.tuples(st.just("nodes"), st.sampled_from(NODES), st.sampled_from(("z1", "z2")))
deletes = st.tuples(
    st.just("delete"),
    st.sampled_from(("services", "endpointslices", "pods", "nodes")),
    st.sampled_from((*SERVICES, "s1", "s2", "s3", *PODS, *NODES)),
)
OPERATIONS = st.one_of(services, slices, pods, nodes, deletes)


def _apply(cluster: MemoryCluster, operation: tuple[Any, ...]) -> None:
    kind, name, detail = operation
    if kind == "delete":  # ("delete", resource, name)
        feed: MemoryFeed = getattr(cluster, name)
        namespace = "" if name == "nodes" else NS
        if (namespace, detail) in feed._objects:
            feed.delete(namespace, detail)
        return
    feed = getattr(cluster, kind)
    if kind == "services":
        feed.apply(_service(name, detail))
    elif kind == "endpointslices":
        target, entries = detail
        addresses = [(f"10.0.0.{PODS.index(p) + 1}", p, ready) for p, ready in entries]
        feed.apply(endpoint_slice(name, NS, target, [("http", 8080)], addresses))
    elif kind == "pods":
        version, on = detail
        address = f"10.0.0.{PODS.index(name) + 1}"
        feed.apply(pod(name, NS, address, {"app": "a", "version": version}, node=on))
    else:
        feed.apply(node(name, "r", detail))


def _snapshot(registry: KubeRegistry) -> tuple[Any, ...]:
    return (
        registry.services(),
        {s.key: registry.endpoints(s.key) for s in registry.services()},
        registry.endpoint_index.services(),
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(OPERATIONS, max_size=30), st.lists(OPERATIONS, max_size=8))
def test_incremental_equals_rebuild(
    before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]
) -> None:
    live = MemoryCluster()
    for operation in before:
        _apply(live, operation)
    updates: list[RegistryUpdate] = []
    registry = KubeRegistry(live.feeds(), EndpointIndex(), updates.append)
    registry.initial_load()
    for operation in after:
        _apply(live, operation)

    fresh = MemoryCluster()
    for kind in ("nodes", "pods", "endpointslices", "services"):
        for obj in getattr(live, kind)._objects.values():
            getattr(fresh, kind).apply(obj)
    rebuilt = KubeRegistry(fresh.feeds(), EndpointIndex(), lambda update: None)
    rebuilt.initial_load()
    assert _snapshot(registry) == _snapshot(rebuilt)
    # every update names the services it changed
    for update in updates:
        assert update.services
