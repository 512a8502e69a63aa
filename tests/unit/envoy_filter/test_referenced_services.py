"""``envoyfilter.istio.io/referenced-services``: the services an EnvoyFilter's patches
name by cluster (an ext_authz or rate-limit service) must have their clusters on the
gateways it patches. istiod needs the annotation only when it trims a gateway's clusters
to what its routes reach (``PILOT_FILTER_GATEWAY_CLUSTER_CONFIG``); pilothouse never
trims them, so a gateway has the clusters of every service exported to it, annotated or
not, and the annotation is accepted with nothing left to do."""

from __future__ import annotations

from pilothouse.protocol.type_urls import CDS, LDS
from pilothouse.push.proxy import ProxyIdentity, parse_node
from tests.unit.xds_server.generation_server import GenerationServer

from .test_patched_generation import MESH

AUTHZ = "outbound|8080||web.bank.svc.cluster.local"
ROUTE_TO_SHOP_ONLY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8081, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: istio-system}
spec:
  hosts: ["*"]
  gateways: [edge]
  http: [{route: [{destination: {host: web.shop.svc.cluster.local}}]}]
"""
EXT_AUTHZ = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata:
  name: authz
  namespace: istio-system
  annotations: %s
spec:
  workloadSelector: {labels: {istio: ingressgateway}}
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: GATEWAY
      listener:
        filterChain:
          filter:
            name: envoy.filters.network.http_connection_manager
            subFilter: {name: envoy.filters.http.router}
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.ext_authz
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
          grpc_service: {envoy_grpc: {cluster_name: "outbound|8080||web.bank.svc.cluster.local"}}
"""


def gateway() -> ProxyIdentity:
    return parse_node(
        "router~10.0.0.5~gw-1.istio-system~istio-system.svc.cluster.local",
        {"NAMESPACE": "istio-system", "LABELS": {"istio": "ingressgateway"}},
    )


def test_a_service_only_an_envoy_filter_names_has_its_cluster_on_the_gateway() -> None:
    annotated = '{"envoyfilter.istio.io/referenced-services": "bank/web.bank.svc.cluster.local"}'
    for annotation in (annotated, "{}"):
        server = GenerationServer(MESH, ROUTE_TO_SHOP_ONLY, EXT_AUTHZ % annotation)
        generated = server.generate(gateway())
        assert AUTHZ in generated[CDS]  # no route reaches it; the patch names it
        assert "0.0.0.0_8081" in generated[LDS]
        assert b"envoy.filters.http.ext_authz" in generated[LDS]["0.0.0.0_8081"]
