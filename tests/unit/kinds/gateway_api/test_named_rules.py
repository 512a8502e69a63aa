"""HTTPRouteNamedRouteRule and GRPCRouteNamedRouteRule: a rule's ``name`` names the Envoy
routes it makes (``<namespace>.<route>.<rule name>``) in the gateway's route
configuration; a rule without one keeps the generated ``<ns>.<route>.<rule>.<match>``."""

from __future__ import annotations

from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.proxy import parse_node
from pilothouse.sources.memory import MemoryStore
from tests.golden.xds_snapshot import snapshot_store

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: app, namespace: edge}
spec:
  hosts: [app.edge.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 8080, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: edge}
spec:
  parentRefs: [{name: web}]
  rules:
  - name: checkout
    matches: [{path: {type: Exact, value: /checkout}}]
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: Exact, value: /cart}}]
    backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: rpc, namespace: edge}
spec:
  parentRefs: [{name: web}]
  rules:
  - name: tags
    matches: [{method: {service: shop.Tags, method: Tag}}]
    backendRefs: [{name: app, port: 80}]
"""


async def test_a_named_rule_names_its_envoy_routes() -> None:
    store = MemoryStore(name="test")
    for config in Loader(SCHEMAS).load_strict(MESH, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    gateway = parse_node(
        "router~10.0.0.9~web-istio-1.edge~edge.svc.cluster.local",
        {"LABELS": {"gateway.networking.k8s.io/gateway-name": "web"}, "NAMESPACE": "edge"},
    )
    (snapshot,) = (await snapshot_store(store, {"gateway": gateway})).values()
    (config,) = snapshot.json("rds").values()
    routes = {
        route["match"].get("path"): route["name"]
        for host in config["virtualHosts"]
        for route in host["routes"]
    }
    assert routes == {
        "/checkout": "edge.shop.checkout",
        "/cart": "edge.shop.1.0",
        "/shop.Tags/Tag": "edge.rpc.tags",
    }
