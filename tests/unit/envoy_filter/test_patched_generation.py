"""EnvoyFilters through the real generators: what they patch, for whom, and that a
warm cache after an edit or a delete gives what a cold server gives.

The mesh is loaded into a MemoryStore and a ServiceEntryRegistry as the discovery server
holds them (generation is in-process code; no process is started).
"""

from __future__ import annotations

from typing import Any

from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.listener.v3 import listener_pb2
from envoy.config.route.v3 import route_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import any_pb2

from pilothouse.admin.metrics_pilot import envoy_filter_status
from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.proxy import ProxyIdentity, parse_node
from tests.unit.xds_server.generation_server import GenerationServer

from .patching import http_filter_names

MESH = "".join(
    f"""\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: web, namespace: {ns}}}
spec:
  hosts: [web.{ns}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{name: http, number: 8080, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: web}}}}
"""
    for ns in ("shop", "bank")
)

LUA_IN_SHOP = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: lua, namespace: shop}
spec:
  workloadSelector: {labels: {app: web}}
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: SIDECAR_OUTBOUND
      listener:
        filterChain:
          filter:
            name: envoy.filters.network.http_connection_manager
            subFilter: {name: envoy.filters.http.router}
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.lua
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
          inline_code: "function envoy_on_response(h) h:headers():add('x-lua', '%s') end"
"""

MESH_WIDE = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: everywhere, namespace: istio-system}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {cluster: {service: web.shop.svc.cluster.local}}
    patch:
      operation: MERGE
      value: {per_connection_buffer_limit_bytes: 2048}
  - applyTo: VIRTUAL_HOST
    match: {routeConfiguration: {portNumber: 8080}}
    patch:
      operation: MERGE
      value:
        response_headers_to_add:
        - header: {key: x-mesh, value: "1"}
"""


def proxy(ns: str, app: str = "web") -> ProxyIdentity:
    return parse_node(
        f"sidecar~10.0.0.1~{app}-1.{ns}~{ns}.svc.cluster.local",
        {"NAMESPACE": ns, "LABELS": {"app": app}},
    )


def decoded(body: bytes, kind: Any) -> Any:
    message = kind()
    any_pb2.Any.FromString(body).Unpack(message)
    return message


def outbound_http_filters(generated: dict[str, dict[str, bytes]]) -> list[str]:
    return http_filter_names(decoded(generated[LDS]["0.0.0.0_8080"], listener_pb2.Listener))


def test_a_namespace_filter_patches_the_proxies_it_selects_and_no_other() -> None:
    plain = GenerationServer(MESH)
    patched = GenerationServer(MESH, LUA_IN_SHOP % "1")
    shop = patched.generate(proxy("shop"))
    assert outbound_http_filters(shop)[-2:] == [
        "envoy.filters.http.lua",
        "envoy.filters.http.router",
    ]
    assert shop[CDS] == plain.generate(proxy("shop"))[CDS]  # no CLUSTER patch
    for other in (proxy("bank"), proxy("shop", app="cart")):
        assert patched.generate(other) == plain.generate(other)


def test_root_namespace_filters_patch_clusters_and_routes_of_every_namespace() -> None:
    server = GenerationServer(MESH, MESH_WIDE)
    for ns in ("shop", "bank"):
        generated = server.generate(proxy(ns))
        web = decoded(
            generated[CDS]["outbound|8080||web.shop.svc.cluster.local"], cluster_pb2.Cluster
        )
        assert web.per_connection_buffer_limit_bytes.value == 2048
        routes = decoded(generated[RDS]["8080"], route_pb2.RouteConfiguration)
        assert all(
            h.response_headers_to_add[0].header.key == "x-mesh" for h in routes.virtual_hosts
        )


def test_an_edit_and_a_delete_give_what_a_cold_server_gives() -> None:
    server = GenerationServer(MESH, LUA_IN_SHOP % "1")
    shop = proxy("shop")
    first = server.generate(shop)
    server.push(server.apply(LUA_IN_SHOP % "2"))
    edited = server.generate(shop)
    assert edited != first
    assert edited == GenerationServer(MESH, LUA_IN_SHOP % "2").generate(shop)
    key = ConfigKey("EnvoyFilter", "shop", "lua")
    server.store.delete(key)
    server.push([key])
    assert server.generate(shop) == GenerationServer(MESH).generate(shop)


def test_patched_resources_are_cached_by_their_inputs() -> None:
    server = GenerationServer(MESH, LUA_IN_SHOP % "1")
    server.generate(proxy("shop"))
    entries = len(server.cache)
    hits = server.cache.stats.hits
    again = server.generate(proxy("shop"))
    assert len(server.cache) == entries and server.cache.stats.hits > hits
    assert outbound_http_filters(again)[-2] == "envoy.filters.http.lua"


STATUSES = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: statuses, namespace: shop}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {cluster: {service: web.shop.svc.cluster.local}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1}}
  - applyTo: CLUSTER
    match: {cluster: {service: nowhere.shop.svc.cluster.local}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1}}
  - applyTo: EXTENSION_CONFIG
    patch: {operation: MERGE, value: {name: ext}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: unselected, namespace: shop}
spec:
  workloadSelector: {labels: {app: nobody}}
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: REMOVE}
"""


def test_each_patch_says_what_it_did_on_the_debug_view_and_the_metric() -> None:
    server = GenerationServer(MESH, STATUSES)
    index = server.context.envoy_filters
    assert {r.status for r in index.statuses()} == {"no proxy", "dropped"}
    server.generate(proxy("shop"))
    found = {(r.key.name, r.position): str(r.status) for r in index.statuses()}
    assert found == {
        ("statuses", 0): "applied",
        ("statuses", 1): "matched nothing",
        ("statuses", 2): "dropped",
        ("unselected", 0): "no proxy",
    }
    assert index.statuses()[1].view() == {
        "envoyFilter": "shop/statuses",
        "patch": 1,
        "applyTo": "CLUSTER",
        "status": "matched nothing",
    }
    samples = envoy_filter_status(index.statuses()).samples
    assert [(s.labels, s.value) for s in samples] == [
        ({"name": "shop/statuses", "patch": "cluster", "result": "applied"}, 1)
    ]


def test_a_patch_that_never_matches_is_reported_in_the_metric() -> None:
    server = GenerationServer(MESH, STATUSES.replace("web.shop", "gone.shop"))
    server.generate(proxy("shop"))
    samples = envoy_filter_status(server.context.envoy_filters.statuses()).samples
    assert [(s.labels, s.value) for s in samples] == [
        ({"name": "shop/statuses", "patch": "cluster", "result": "matched_nothing"}, 1)
    ]


INBOUND_SIDECAR = """\
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: web, namespace: shop}
spec:
  workloadSelector: {labels: {app: web}}
  ingress:
  - port: {number: 9080, protocol: HTTP, name: http}
    bind: 127.0.0.1
    defaultEndpoint: 127.0.0.1:8080
  egress: [{hosts: ["./*"]}]
"""

INBOUND_ROUTES = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: inbound-routes, namespace: shop}
spec:
  configPatches:
  - applyTo: VIRTUAL_HOST
    match: {context: SIDECAR_INBOUND, routeConfiguration: {portNumber: 9080}}
    patch:
      operation: MERGE
      value:
        response_headers_to_add:
        - header: {key: x-inbound, value: "1"}
"""


def test_route_patches_reach_the_inline_routes_of_inbound_listeners() -> None:
    plain = GenerationServer(MESH, INBOUND_SIDECAR)
    patched = GenerationServer(MESH, INBOUND_SIDECAR, INBOUND_ROUTES)
    before, after = plain.generate(proxy("shop")), patched.generate(proxy("shop"))
    assert after[RDS] == before[RDS]  # the outbound route configurations are not inbound
    (name,) = [n for n in after[LDS] if n.endswith("_9080")]
    listener = decoded(after[LDS][name], listener_pb2.Listener)
    manager = hcm_pb2.HttpConnectionManager()
    listener.filter_chains[0].filters[-1].typed_config.Unpack(manager)
    (host,) = manager.route_config.virtual_hosts
    assert [h.header.key for h in host.response_headers_to_add] == ["x-inbound"]
    assert {n: b for n, b in after[LDS].items() if n != name} == {
        n: b for n, b in before[LDS].items() if n != name
    }
