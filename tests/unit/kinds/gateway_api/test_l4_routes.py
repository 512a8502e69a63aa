"""TCPRoutes and TLSRoutes. GAMMA: a Service parent makes a mesh VirtualService with
``tcp`` (or ``tls``, by SNI) routes, accepted in the route's status, and a sidecar's
outbound TCP listener for that Service follows the ``tcp`` routes (a weighted split of
real clusters in its ``tcp_proxy``), as istiod's sidecars follow a VirtualService's.
On a gateway, TLS Passthrough and Terminate listeners share a port."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.kinds.gateway_api.status import gateway_api_status
from pilothouse.kinds.gateway_api.translation import translate
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.proxy import parse_node
from pilothouse.sources.memory import MemoryStore
from tests.golden.xds_snapshot import snapshot_store


def entry(name: str, port: int, protocol: str = "TCP") -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: data}}
spec:
  hosts: [{name}.data.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: {port}, name: db, protocol: {protocol}}}]
  endpoints: [{{address: 10.0.0.{len(name)}}}]
---
"""


MESH = (
    entry("db", 5432)  # one service a port: the sidecar's TCP listener takes it whole
    + entry("primary", 5433)
    + entry("replica", 5434)
    + entry("vault", 8443, "TLS")
    + """\
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: db-split, namespace: data}
spec:
  parentRefs: [{group: "", kind: Service, name: db, port: 5432}]
  rules:
  - backendRefs: [{name: primary, port: 5433, weight: 3}, {name: replica, port: 5434, weight: 1}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: vault, namespace: data}
spec:
  parentRefs: [{group: "", kind: Service, name: vault}]
  rules: [{backendRefs: [{name: primary, port: 5433}]}]
"""
)


def configs() -> list[Config]:
    return Loader(SCHEMAS).load_strict(MESH, "mesh.yaml")


def by_kind(kind: str) -> list[Config]:
    return [c for c in configs() if c.kind == kind]


def test_a_service_parent_makes_mesh_tcp_and_tls_routes() -> None:
    translation = translate(by_kind, "cluster.local")
    services = {
        c.spec.hosts[0]: json_format.MessageToDict(c.spec)  # type: ignore[attr-defined]
        for c in translation.virtual_services
    }
    db = services["db.data.svc.cluster.local"]
    assert db["gateways"] == ["mesh"]
    (tcp,) = db["tcp"]
    assert tcp["match"] == [{"port": 5432}]
    assert [(d["destination"]["host"], d["weight"]) for d in tcp["route"]] == [
        ("primary.data.svc.cluster.local", 3),
        ("replica.data.svc.cluster.local", 1),
    ]
    (tls,) = services["vault.data.svc.cluster.local"]["tls"]
    assert tls["match"] == [{"sniHosts": ["vault.data.svc.cluster.local"]}]
    statuses = gateway_api_status(translation, by_kind, lambda host: True, "cluster.local")
    for route in translation.parents:
        (parent,) = statuses[route]["parents"]
        accepted = {c["type"]: c["reason"] for c in parent["conditions"]}
        assert accepted == {"Accepted": "Accepted", "ResolvedRefs": "ResolvedRefs"}, route


async def test_a_sidecar_s_tcp_listener_follows_the_mesh_tcp_route() -> None:
    store = MemoryStore(name="test")
    for config in configs():
        store.apply(config)
    store.mark_synced()
    client = parse_node("sidecar~10.0.0.9~app-1.apps~apps.svc.cluster.local")
    (snapshot,) = (await snapshot_store(store, {"client": client})).values()
    listener: dict[str, Any] = snapshot.json("lds")["0.0.0.0_5432"]
    proxies = [
        f["typedConfig"]
        for chain in listener["filterChains"]
        for f in chain["filters"]
        if f["name"] == "envoy.filters.network.tcp_proxy"
    ]
    (proxy,) = proxies
    weighted = proxy["weightedClusters"]["clusters"]
    assert [(c["name"], c["weight"]) for c in weighted] == [
        ("outbound|5433||primary.data.svc.cluster.local", 3),
        ("outbound|5434||replica.data.svc.cluster.local", 1),
    ]
    # a TCP port no route names keeps its service's own cluster
    (own,) = [
        f["typedConfig"]["cluster"]
        for chain in snapshot.json("lds")["0.0.0.0_5433"]["filterChains"]
        for f in chain["filters"]
        if f["name"] == "envoy.filters.network.tcp_proxy"
    ]
    assert own == "outbound|5433||primary.data.svc.cluster.local"


def proxies_by_sni(listener: dict[str, Any]) -> dict[tuple[str, ...], Any]:
    """Each chain's ``tcp_proxy`` destination, by the chain's server names."""
    found: dict[tuple[str, ...], Any] = {}
    for chain in listener["filterChains"]:
        names = tuple(chain.get("filterChainMatch", {}).get("serverNames", []))
        (proxy,) = [
            f["typedConfig"]
            for f in chain["filters"]
            if f["name"] == "envoy.filters.network.tcp_proxy"
        ]
        found[names] = proxy.get("cluster") or [
            (c["name"], c["weight"]) for c in proxy["weightedClusters"]["clusters"]
        ]
    return found


async def test_a_sidecar_s_tls_listener_follows_the_mesh_tls_route_by_sni() -> None:
    """The TLSRoute with the Service parent ``vault`` (no hostnames: the Service's own
    host as SNI) sends the sidecar's TLS connections for that name to ``primary``, behind
    the TLS inspector; other names keep the service's own cluster."""
    store = MemoryStore(name="test")
    for config in configs():
        store.apply(config)
    store.mark_synced()
    client = parse_node("sidecar~10.0.0.9~app-1.apps~apps.svc.cluster.local")
    (snapshot,) = (await snapshot_store(store, {"client": client})).values()
    listener: dict[str, Any] = snapshot.json("lds")["0.0.0.0_8443"]
    assert proxies_by_sni(listener) == {
        ("vault.data.svc.cluster.local",): "outbound|5433||primary.data.svc.cluster.local",
        (): "outbound|8443||vault.data.svc.cluster.local",
    }
    assert [f["name"] for f in listener["listenerFilters"]] == [
        "envoy.filters.listener.tls_inspector"
    ]
    # a TCP port keeps its single chain, without the inspector
    assert "listenerFilters" not in snapshot.json("lds")["0.0.0.0_5432"]


MIXED = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: app, namespace: edge}
spec:
  hosts: [app.edge.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 443, name: tls, protocol: TLS}, {number: 80, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: istio
  listeners:
  - {name: pass, port: 8443, protocol: TLS, hostname: pass.example.com, tls: {mode: Passthrough}}
  - name: term
    port: 8443
    protocol: TLS
    hostname: term.example.com
    tls: {mode: Terminate, certificateRefs: [{name: cert}]}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: pass, namespace: edge}
spec:
  parentRefs: [{name: web, sectionName: pass}]
  hostnames: [pass.example.com]
  rules: [{backendRefs: [{name: app, port: 443}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: term, namespace: edge}
spec:
  parentRefs: [{name: web, sectionName: term}]
  hostnames: [term.example.com]
  rules: [{backendRefs: [{name: app, port: 80}]}]
"""


async def test_tls_routes_on_passthrough_and_terminate_listeners_of_one_port() -> None:
    """TLSRouteModeTerminate and TLSRouteModeMixed: one port, a Passthrough listener
    forwarding by SNI and a Terminate listener ending TLS with its certificate, each
    TLSRoute served on its own filter chain."""
    store = MemoryStore(name="test")
    for config in Loader(SCHEMAS).load_strict(MIXED, "mixed.yaml"):
        store.apply(config)
    store.mark_synced()
    gateway = parse_node(
        "router~10.0.0.3~web-istio-1.edge~edge.svc.cluster.local",
        {"LABELS": {"gateway.networking.k8s.io/gateway-name": "web"}, "NAMESPACE": "edge"},
    )
    (snapshot,) = (await snapshot_store(store, {"gateway": gateway})).values()
    chains = snapshot.json("lds")["0.0.0.0_8443"]["filterChains"]
    served = {
        chain["filterChainMatch"]["serverNames"][0]: (
            [f["typedConfig"].get("cluster") for f in chain["filters"]],
            "transportSocket" in chain,
        )
        for chain in chains
    }
    assert served == {
        "pass.example.com": (["outbound|443||app.edge.svc.cluster.local"], False),
        "term.example.com": (["outbound|80||app.edge.svc.cluster.local"], True),
    }
