"""Sidecar outbound listeners when several services share a port, as istiod builds them.

Istio's default outbound view (no Sidecar egress ports): a TCP service with an address
gets ``<address>_<port>`` of its own; TLS services without one share ``0.0.0.0_<port>``
behind the TLS inspector, a chain per service matched on its hostname as SNI; of two
plain TCP services without an address the older keeps the port and the other is
refused with a warning; an HTTP service keeps ``0.0.0.0_<port>`` and its route
configuration against a TCP service on that port, the oldest HTTP service giving it its
protocol.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from pilothouse.admin.metrics import server_metrics
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import LDS
from pilothouse.push.listener_conflicts import (
    CONFLICT_METRICS,
    TCP_OVER_CURRENT_HTTP,
    TCP_OVER_CURRENT_TCP,
)
from pilothouse.push.proxy import parse_node
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.golden.xds_snapshot import snapshot_store
from tests.memory_kube import MemoryCluster, endpoint_slice, service
from tests.unit.kinds.gateway_api.test_l4_routes import proxies_by_sni

TLS_INSPECTOR = "envoy.filters.listener.tls_inspector"


def entry(
    name: str,
    port: int,
    protocol: str,
    *,
    host: str = "",
    address: str = "",
    created: str = "2024-01-01T00:00:00Z",
) -> str:
    addresses = f"addresses: [{address}]" if address else ""
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: apps, creationTimestamp: "{created}"}}
spec:
  hosts: ["{host or f"{name}.apps.svc.cluster.local"}"]
  {addresses}
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{{number: {port}, name: p, protocol: {protocol}}}]
  endpoints: [{{address: 10.1.0.{len(name)}}}]
---
"""


MESH = (
    # two databases with addresses on one port: a listener each
    entry("pg-a", 5432, "TCP", address="10.20.0.1")
    + entry("pg-b", 5432, "TCP", address="10.20.0.2")
    # two TCP services without an address on one port: the older keeps it
    + entry("my-new", 3306, "TCP", created="2024-03-01T00:00:00Z")
    + entry("my-old", 3306, "TCP", created="2024-02-01T00:00:00Z")
    # TLS egress without addresses on one port: by SNI, wildcards as written
    + entry("tls-a", 443, "TLS", host="a.tls.example")
    + entry("tls-b", 443, "TLS", host="b.tls.example")
    + entry("tls-wild", 443, "TLS", host="*.wild.example")
    # an HTTP and two TCP services on one port
    + entry("web", 8080, "HTTP")
    + entry("cache", 8080, "TCP", address="10.20.0.5")
    + entry("raw", 8080, "TCP")
    # a TCP service whose address is a range beside one without an address
    + entry("range", 7000, "TCP", address="10.30.0.0/16")
    + entry("plain", 7000, "TCP")
    # a TCP service alone on its port with an address
    + entry("solo", 6379, "TCP", address="10.20.0.9")
    # a TLS service alone on its port without one: one chain to its cluster, as before
    + entry("lone", 9443, "TLS")
)


async def listeners(mesh: str = MESH) -> dict[str, Any]:
    store = MemoryStore(name="test")
    for config in Loader(SCHEMAS).load_strict(mesh, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    client = parse_node("sidecar~10.0.0.9~app-1.apps~apps.svc.cluster.local")
    (snapshot,) = (await snapshot_store(store, {"client": client})).values()
    found: dict[str, Any] = snapshot.json("lds")
    return found


def cluster(name: str, port: int, host: str = "") -> str:
    return f"outbound|{port}||{host or f'{name}.apps.svc.cluster.local'}"


def address(listener: dict[str, Any]) -> tuple[str, int]:
    socket = listener["address"]["socketAddress"]
    return socket["address"], socket["portValue"]


async def test_tcp_services_with_addresses_get_a_listener_each() -> None:
    found = await listeners()
    assert "0.0.0.0_5432" not in found
    for name, vip in (("pg-a", "10.20.0.1"), ("pg-b", "10.20.0.2")):
        listener = found[f"{vip}_5432"]
        assert address(listener) == (vip, 5432)
        assert listener["bindToPort"] is False  # handed over by virtualOutbound
        assert proxies_by_sni(listener) == {(): cluster(name, 5432)}
    assert proxies_by_sni(found["10.20.0.9_6379"]) == {(): cluster("solo", 6379)}
    assert "0.0.0.0_6379" not in found


async def test_tls_services_without_addresses_share_the_port_by_sni() -> None:
    found = await listeners()
    shared = found["0.0.0.0_443"]
    assert address(shared) == ("0.0.0.0", 443)
    assert proxies_by_sni(shared) == {
        ("a.tls.example",): cluster("", 443, "a.tls.example"),
        ("b.tls.example",): cluster("", 443, "b.tls.example"),
        ("*.wild.example",): cluster("", 443, "*.wild.example"),
    }
    assert [f["name"] for f in shared["listenerFilters"]] == [TLS_INSPECTOR]
    # an unknown name goes where istiod's default chain sends it
    default = shared["defaultFilterChain"]
    assert default["name"] == "PassthroughFilterChain"
    assert default["filters"][0]["typedConfig"]["cluster"] == "PassthroughCluster"
    # alone on its port, a TLS service keeps one chain to its own cluster
    assert proxies_by_sni(found["0.0.0.0_9443"]) == {(): cluster("lone", 9443)}


async def test_the_older_tcp_service_without_an_address_keeps_the_port(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="pilothouse.xds"):
        found = await listeners()
    assert proxies_by_sni(found["0.0.0.0_3306"]) == {(): cluster("my-old", 3306)}
    refused = {
        (r.listener, r.accepted, r.rejected)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.getMessage() == "outbound listener conflict"
    }
    assert refused == {
        ("0.0.0.0_3306", "my-old.apps.svc.cluster.local", "my-new.apps.svc.cluster.local"),
        ("0.0.0.0_8080", "web.apps.svc.cluster.local", "raw.apps.svc.cluster.local"),
    }


async def test_http_keeps_the_wildcard_listener_and_tcp_takes_its_address() -> None:
    found = await listeners()
    http = found["0.0.0.0_8080"]
    (chain,) = http["filterChains"]
    manager = chain["filters"][-1]["typedConfig"]
    assert manager["rds"]["routeConfigName"] == "8080"
    assert proxies_by_sni(found["10.20.0.5_8080"]) == {(): cluster("cache", 8080)}


async def test_a_range_address_narrows_its_chain_on_the_wildcard_listener() -> None:
    found = await listeners()
    shared = found["0.0.0.0_7000"]
    ranged, rest = shared["filterChains"]
    assert ranged["filterChainMatch"] == {
        "prefixRanges": [{"addressPrefix": "10.30.0.0", "prefixLen": 16}]
    }
    assert ranged["filters"][0]["typedConfig"]["cluster"] == cluster("range", 7000)
    assert "filterChainMatch" not in rest
    assert rest["filters"][0]["typedConfig"]["cluster"] == cluster("plain", 7000)
    assert "defaultFilterChain" not in shared  # the plain service takes the rest
    assert "listenerFilters" not in shared


async def test_tcp_routes_follow_the_service_onto_its_address_listener() -> None:
    """A mesh VirtualService ``tcp`` route of a service with an address still decides
    where its own listener sends connections (mesh_tcp.py on the new listeners)."""
    mesh = (
        MESH
        + """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: pg, namespace: apps}
spec:
  hosts: [pg-a.apps.svc.cluster.local]
  tcp:
  - route: [{destination: {host: pg-b.apps.svc.cluster.local, port: {number: 5432}}}]
"""
    )
    found = await listeners(mesh)
    assert proxies_by_sni(found["10.20.0.1_5432"]) == {(): cluster("pg-b", 5432)}
    assert proxies_by_sni(found["10.20.0.2_5432"]) == {(): cluster("pg-b", 5432)}


async def test_tls_routes_give_a_shared_port_their_sni_chains() -> None:
    """On a shared wildcard listener a service's mesh ``tls`` routes bring their chains
    instead of its hostname chain (mesh_tls.py on the new listeners); a name an earlier
    chain claims is not claimed twice."""
    mesh = (
        MESH
        + """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: tls-a, namespace: apps}
spec:
  hosts: [a.tls.example, b.tls.example]
  tls:
  - match: [{sniHosts: [a.tls.example, b.tls.example]}]
    route: [{destination: {host: lone.apps.svc.cluster.local, port: {number: 9443}}}]
"""
    )
    found = await listeners(mesh)
    assert proxies_by_sni(found["0.0.0.0_443"]) == {
        ("a.tls.example", "b.tls.example"): cluster("lone", 9443),
        ("*.wild.example",): cluster("", 443, "*.wild.example"),
    }


async def test_refused_services_are_counted_per_listener_for_the_push() -> None:
    """istiod's conflict gauges, read from the server's registry as ``/metrics`` writes
    it: a listener counts once however many proxies (here of two scopes) get it."""
    store = MemoryStore(name="test")
    for config in Loader(SCHEMAS).load_strict(MESH, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    server = DiscoveryServer(store)
    task = asyncio.create_task(server.run())
    try:
        await asyncio.wait_for(server.wait_ready(), 10)
        registry = server_metrics(DiscoveryDebugView(server)).registry

        def gauges() -> dict[str, float | None]:
            return {m: registry.get_sample_value(m) for m in CONFLICT_METRICS}

        # before any proxy got its listeners, the push found nothing yet
        assert gauges() == dict.fromkeys(CONFLICT_METRICS, 0.0)
        generator = server.generator(LDS)
        assert generator is not None
        for node in (
            "sidecar~10.0.0.9~app-1.apps~apps.svc.cluster.local",
            "sidecar~10.0.0.10~app-2.apps~apps.svc.cluster.local",
            "sidecar~10.0.1.9~web-1.web~web.svc.cluster.local",
        ):
            proxy = parse_node(node)
            context = server.context
            generator.generate(
                GenerationInput(
                    proxy=proxy,
                    scope=context.scope(proxy),
                    context=context,
                    endpoints=server.endpoints,
                    cache=server.cache,
                )
            )
        # 0.0.0.0_3306 (my-new refused for the older my-old) and 0.0.0.0_8080 (raw
        # refused for the HTTP service web)
        assert gauges() == {TCP_OVER_CURRENT_TCP: 1.0, TCP_OVER_CURRENT_HTTP: 1.0}
        assert {
            (c.listener, c.rejected, c.protocol) for c in context.listener_conflicts.conflicts()
        } == {
            ("0.0.0.0_3306", "my-new.apps.svc.cluster.local", "TCP"),
            ("0.0.0.0_8080", "raw.apps.svc.cluster.local", "TCP"),
        }
    finally:
        server.close()
        await asyncio.wait_for(task, 10)


def manager_of(listener: dict[str, Any]) -> dict[str, Any]:
    (chain,) = listener["filterChains"]
    found: dict[str, Any] = chain["filters"][-1]["typedConfig"]
    return found


@pytest.mark.parametrize("newer", ["a-h2", "b-web"])
async def test_the_oldest_http_service_on_a_port_gives_the_listener_its_protocol(
    newer: str, caplog: pytest.LogCaptureFixture
) -> None:
    """istiod keeps the listener the oldest HTTP service made (the others only add their
    virtual hosts), whatever the hostnames' order: ``a-h2`` sorts first by name but is
    HTTP2, ``b-web`` is plain HTTP; the TCP service refused on the port names the same
    keeper."""
    older = "2024-02-01T00:00:00Z"
    later = "2024-03-01T00:00:00Z"
    mesh = (
        entry("a-h2", 9090, "HTTP2", created=later if newer == "a-h2" else older)
        + entry("b-web", 9090, "HTTP", created=later if newer == "b-web" else older)
        + entry("c-raw", 9090, "TCP", created="2024-01-01T00:00:00Z")
    )
    with caplog.at_level(logging.WARNING, logger="pilothouse.xds"):
        found = await listeners(mesh)
    kept = "b-web" if newer == "a-h2" else "a-h2"
    manager = manager_of(found["0.0.0.0_9090"])
    assert manager["rds"]["routeConfigName"] == "9090"
    assert ("http2ProtocolOptions" in manager) is (kept == "a-h2")
    refused = [
        (r.accepted, r.rejected)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.getMessage() == "outbound listener conflict"
    ]
    assert refused == [(f"{kept}.apps.svc.cluster.local", "c-raw.apps.svc.cluster.local")]


async def test_kubernetes_services_created_together_are_ordered_by_name() -> None:
    """Services of one creation second are ordered by name, then namespace, as istiod
    breaks the tie: ``a`` before ``a-b`` although ``a-b.apps...`` sorts first as a
    hostname ('-' before '.')."""
    cluster = MemoryCluster()
    cluster.services.apply(service("a-b", "apps", [{"name": "http", "port": 8080}]))
    cluster.services.apply(
        service("a", "apps", [{"name": "http2", "port": 8080}], cluster_ip="10.96.0.11")
    )
    store = MemoryStore(name="test")
    store.mark_synced()
    client = parse_node("sidecar~10.0.0.9~app-1.apps~apps.svc.cluster.local")
    (snapshot,) = (await snapshot_store(store, {"client": client}, cluster.feeds())).values()
    manager = manager_of(snapshot.json("lds")["0.0.0.0_8080"])
    assert "http2ProtocolOptions" in manager  # the HTTP2 port of ``a``


async def test_a_headless_service_listens_at_each_endpoint_for_its_tcp_ports() -> None:
    """istiod's per-endpoint listeners: a headless Service's TCP port gets
    ``<podIP>_<port>`` for each endpoint, to that service's cluster, so two headless
    services share 5432 without a conflict; its HTTP port keeps ``0.0.0.0_<port>``; a
    headless Service without endpoints gets no listener; a pod does not get its own
    address's listener (its inbound listener has it)."""
    cluster = MemoryCluster()
    db_ports = [{"name": "tcp-pg", "port": 5432}, {"name": "http-api", "port": 8080}]
    cluster.services.apply(service("db", "apps", db_ports, cluster_ip="None"))
    cluster.services.apply(
        service("cache", "apps", [{"name": "tcp-pg", "port": 5432}], cluster_ip="None")
    )
    cluster.services.apply(
        service("empty", "apps", [{"name": "tcp-x", "port": 6000}], cluster_ip="None")
    )
    db_slice = [("10.1.0.1", None, True), ("10.1.0.2", None, True)]
    cluster.endpointslices.apply(
        endpoint_slice("db-1", "apps", "db", [("tcp-pg", 5432), ("http-api", 8080)], db_slice)
    )
    cluster.endpointslices.apply(
        endpoint_slice("cache-1", "apps", "cache", [("tcp-pg", 5432)], [("10.1.0.3", None, True)])
    )
    store = MemoryStore(name="test")
    store.mark_synced()
    proxies = {
        "client": parse_node("sidecar~10.0.0.9~app-1.apps~apps.svc.cluster.local"),
        "db-pod": parse_node("sidecar~10.1.0.2~db-1.apps~apps.svc.cluster.local"),
    }
    snapshots = await snapshot_store(store, proxies, cluster.feeds())
    found = snapshots["client"].json("lds")
    db, cache = (f"outbound|5432||{n}.apps.svc.cluster.local" for n in ("db", "cache"))
    assert {n: proxies_by_sni(x) for n, x in found.items() if n.endswith("_5432")} == {
        "10.1.0.1_5432": {(): db},
        "10.1.0.2_5432": {(): db},
        "10.1.0.3_5432": {(): cache},
    }
    assert address(found["10.1.0.1_5432"]) == ("10.1.0.1", 5432)
    assert found["10.1.0.1_5432"]["bindToPort"] is False
    assert manager_of(found["0.0.0.0_8080"])["rds"]["routeConfigName"] == "8080"
    assert not [n for n in found if n.endswith("_6000") or n.startswith("10.1.0.1_8080")]
    own = snapshots["db-pod"].json("lds")
    assert sorted(n for n in own if n.endswith("_5432") and n != "virtualInbound") == [
        "10.1.0.1_5432",
        "10.1.0.3_5432",
    ]


def headless_entry(name: str, port: int, selector: str = "") -> str:
    picks = f"workloadSelector: {{labels: {{app: {selector}}}}}" if selector else ""
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: apps, creationTimestamp: "2024-01-01T00:00:00Z"}}
spec:
  hosts: ["{name}.apps.svc.cluster.local"]
  location: MESH_INTERNAL
  resolution: NONE
  {picks}
  ports: [{{number: {port}, name: tcp, protocol: TCP}}]
---
"""


def workload_entry(name: str, address: str, app: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: {name}, namespace: apps}}
spec: {{address: {address}, labels: {{app: {app}}}}}
---
"""


async def test_a_headless_service_entry_keeps_the_wildcard_without_endpoints() -> None:
    """istiod's per-endpoint listeners for a ServiceEntry of resolution NONE without an
    address: with no endpoints on the port and no workloadSelector, the shared
    ``0.0.0.0_<port>``; with a selector, or endpoints that are all left out (the proxy's
    own address, a hostname), no listener on that port at all."""
    mesh = (
        headless_entry("plain", 7400)
        + headless_entry("unselected", 7200, selector="nobody")
        + headless_entry("self", 7100, selector="self")
        + workload_entry("me", "10.0.0.9", "self")
        + headless_entry("named", 7300, selector="named")
        + workload_entry("by-name", "vm.example.com", "named")
        + headless_entry("other", 7500, selector="other")
        + workload_entry("vm", "10.2.0.1", "other")
    )
    found = await listeners(mesh)
    ports = {n: address(x) for n, x in found.items() if n.startswith(("0.0.0.0_7", "10."))}
    assert ports == {"0.0.0.0_7400": ("0.0.0.0", 7400), "10.2.0.1_7500": ("10.2.0.1", 7500)}


async def test_udp_ports_get_no_outbound_listener() -> None:
    """istiod builds no sidecar outbound listener for a UDP port (its listeners are
    TCP), neither at a Service's address nor, for a headless one, per endpoint."""
    cluster = MemoryCluster()
    udp = [{"name": "dns", "port": 53, "protocol": "UDP"}]
    cluster.services.apply(service("dns", "apps", udp, cluster_ip="None"))
    cluster.services.apply(service("vip", "apps", udp))
    for name, address in (("dns", "10.1.0.1"), ("vip", "10.1.0.2")):
        cluster.endpointslices.apply(
            endpoint_slice(f"{name}-1", "apps", name, [("dns", 53)], [(address, None, True)])
        )
    store = MemoryStore(name="test")
    store.mark_synced()
    client = parse_node("sidecar~10.0.0.9~app-1.apps~apps.svc.cluster.local")
    (snapshot,) = (await snapshot_store(store, {"client": client}, cluster.feeds())).values()
    assert not [n for n in snapshot.json("lds") if n.endswith("_53")]
