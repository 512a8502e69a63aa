"""VirtualService references: gateways, destination hosts (with a did-you-mean),
ports, subsets, and two mesh VirtualServices for one host."""

from __future__ import annotations

from tests.unit.analysis.mesh import findings

ROUTES = """
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: shop-gateway, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["shop.example.com"]}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: shop}
spec:
  host: reviews
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: front, namespace: shop}
spec:
  hosts: [shop.example.com, other.example.com]
  gateways: [shop-gateway, no-such-gateway, shop-gatway]
  http:
  - route: [{destination: {host: reviews, subset: v1}}]
  - route: [{destination: {host: reviews, subset: v9}}]
  - route: [{destination: {host: reviews, subset: v}}]
  - route: [{destination: {host: detials}}]
  - route: [{destination: {host: details}}]
  - route: [{destination: {host: reviews, port: {number: 9999}}}]
    mirror: {host: ratings}
"""


def test_gateways_must_exist_and_serve_the_hosts() -> None:
    assert findings(ROUTES, "virtualservice.GatewayAnalyzer") == [
        "Error [IST0101] (VirtualService shop/front mesh.yaml:49) Referenced gateway not found:"
        ' "shop/no-such-gateway"',
        "Error [IST0101] (VirtualService shop/front mesh.yaml:49) Referenced gateway not found:"
        ' "shop/shop-gatway" (did you mean "shop/shop-gateway"?)',
        "Warning [IST0132] (VirtualService shop/front mesh.yaml:49) one or more host"
        " [other.example.com] defined in VirtualService shop/front not found in Gateway"
        " shop/shop-gateway.",
    ]


def test_destination_hosts_ports_and_a_misspelt_host() -> None:
    found = findings(ROUTES, "virtualservice.DestinationHostAnalyzer")
    assert found == [
        "Error [IST0101] (VirtualService shop/front mesh.yaml:49) Referenced host not found:"
        ' "detials.shop.svc.cluster.local" (did you mean "details.shop.svc.cluster.local"?)',
        "Error [IST0101] (VirtualService shop/front mesh.yaml:49) Referenced host:port not"
        ' found: "reviews.shop.svc.cluster.local:9999"',
        "Error [IST0101] (VirtualService shop/front mesh.yaml:49) Referenced mirror host not"
        ' found: "ratings.shop.svc.cluster.local"',
        "Error [IST0112] (VirtualService shop/front mesh.yaml:49) This VirtualService routes"
        ' to a service "details.shop.svc.cluster.local" that exposes multiple ports'
        " [9080 9443]. Specifying a port in the destination is required to disambiguate.",
    ]


def test_subsets_must_be_defined_by_a_destination_rule() -> None:
    assert findings(ROUTES, "virtualservice.DestinationRuleAnalyzer") == [
        "Error [IST0101] (VirtualService shop/front mesh.yaml:49) Referenced host+subset in"
        ' destinationrule not found: "reviews.shop.svc.cluster.local+v" (did you mean "v1"?)',
        "Error [IST0101] (VirtualService shop/front mesh.yaml:49) Referenced host+subset in"
        ' destinationrule not found: "reviews.shop.svc.cluster.local+v9"',
    ]


MESH_ROUTES = """
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews-a, namespace: shop}
spec:
  hosts: [reviews]
  http: [{route: [{destination: {host: reviews}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews-b, namespace: shop}
spec:
  hosts: [reviews.shop.svc.cluster.local, ghost]
  http: [{route: [{destination: {host: reviews}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews-private, namespace: other}
spec:
  hosts: [reviews.shop.svc.cluster.local]
  exportTo: ["."]
  http: [{route: [{destination: {host: reviews.shop.svc.cluster.local}}]}]
"""


def test_two_mesh_virtual_services_for_one_host_conflict() -> None:
    conflict = (
        " The VirtualServices shop/reviews-a,shop/reviews-b associated with mesh gateway define"
        " the same host reviews.shop.svc.cluster.local which can lead to undefined behavior."
        " This can be fixed by merging the conflicting VirtualServices into a single resource."
    )
    assert findings(MESH_ROUTES, "virtualservice.ConflictingMeshGatewayHostsAnalyzer") == [
        "Error [IST0109] (VirtualService shop/reviews-a mesh.yaml:35)" + conflict,
        "Error [IST0109] (VirtualService shop/reviews-b mesh.yaml:42)" + conflict,
    ]


def test_a_mesh_virtual_service_for_no_service_is_named() -> None:
    assert findings(MESH_ROUTES, "virtualservice.DestinationHostAnalyzer") == [
        "Warning [PH0102] (VirtualService shop/reviews-b mesh.yaml:42) The host"
        " ghost.shop.svc.cluster.local defined in the VirtualService does not match any"
        " services in the mesh: sidecars get no route for it.",
    ]
