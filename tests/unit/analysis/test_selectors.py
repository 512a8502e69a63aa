"""Selectors that select nothing (Gateways, Sidecars, policies), Sidecars that collide,
Sidecar egress hosts, and AuthorizationPolicy namespaces and identities."""

from __future__ import annotations

from tests.unit.analysis.mesh import findings

SELECTING = """
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress-two, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: nobody, namespace: shop}
spec:
  workloadSelector: {labels: {app: nobody}}
  egress: [{hosts: ["./*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: reviews, namespace: shop}
spec:
  workloadSelector: {labels: {app: reviews}}
  egress:
  - hosts:
    - ./detials.shop.svc.cluster.local
    - nowhere/*
    - "*/details.shop.svc.cluster.local"
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: reviews-v1, namespace: shop}
spec:
  workloadSelector: {labels: {version: v1, app: reviews}}
  egress: [{hosts: ["./*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop}
spec: {egress: [{hosts: ["./*"]}]}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default-two, namespace: shop}
spec: {egress: [{hosts: ["./*"]}]}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: details-plain, namespace: shop}
spec:
  selector: {matchLabels: {app: details}}
  mtls: {mode: DISABLE}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: details, namespace: shop}
spec:
  selector: {matchLabels: {app: details}}
  rules: [{from: [{source: {principals: ["cluster.local/ns/shop/sa/front"]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: from-front, namespace: shop}
spec:
  selector: {matchLabels: {app: reviews}}
  rules: [{from: [{source: {namespaces: [frontend, "prod-*"]}}]}]
"""


def test_gateway_selector_and_conflicting_gateways() -> None:
    conflict = "(workload selector istio=ingressgateway, port 8080, hosts [*])."
    assert findings(SELECTING, "gateway.GatewayAnalyzer") == [
        "Error [IST0101] (Gateway shop/ingress mesh.yaml:35) Referenced selector not found:"
        ' "istio=ingressgateway"',
        f"Error [IST0145] (Gateway shop/ingress mesh.yaml:35) Conflict with gateways"
        f" shop/ingress-two {conflict}",
        "Error [IST0101] (Gateway shop/ingress-two mesh.yaml:42) Referenced selector not"
        ' found: "istio=ingressgateway"',
        f"Error [IST0145] (Gateway shop/ingress-two mesh.yaml:42) Conflict with gateways"
        f" shop/ingress {conflict}",
    ]


def test_a_config_set_without_workloads_has_no_selector_findings() -> None:
    """Routing alone (no workload anywhere): selectors have nothing to be judged by."""
    gateway = SELECTING.split("---")[0]
    assert findings(gateway, "gateway.GatewayAnalyzer", with_services=False) == []


def test_workload_selectors_and_sidecar_collisions() -> None:
    assert findings(SELECTING, "selector.WorkloadSelectorAnalyzer") == [
        "Error [IST0111] (Sidecar shop/default mesh.yaml:74) The Sidecars [default default-two]"
        ' in namespace "shop" have no workload selector, which can lead to undefined behavior.',
        "Error [IST0111] (Sidecar shop/default-two mesh.yaml:79) The Sidecars [default"
        ' default-two] in namespace "shop" have no workload selector, which can lead to'
        " undefined behavior.",
        "Warning [IST0127] (Sidecar shop/nobody mesh.yaml:49) No matching workloads for this"
        " resource with the following labels: app=nobody",
        "Error [IST0110] (Sidecar shop/reviews mesh.yaml:56) The Sidecars [reviews reviews-v1]"
        ' in namespace "shop" select the same workload "shop/reviews-v1", which can lead to'
        " undefined behavior.",
        "Error [IST0110] (Sidecar shop/reviews-v1 mesh.yaml:67) The Sidecars [reviews"
        ' reviews-v1] in namespace "shop" select the same workload "shop/reviews-v1", which'
        " can lead to undefined behavior.",
    ]


def test_sidecar_egress_hosts() -> None:
    assert findings(SELECTING, "sidecar.EgressHostAnalyzer") == [
        "Error [IST0101] (Sidecar shop/reviews mesh.yaml:56) Referenced namespace not found:"
        ' "nowhere"',
        "Warning [PH0103] (Sidecar shop/reviews mesh.yaml:56) The egress host"
        " ./detials.shop.svc.cluster.local of the Sidecar matches no service in the mesh."
        ' (did you mean "details.shop.svc.cluster.local"?)',
    ]


def test_authorization_namespaces_and_identities_without_mtls() -> None:
    assert findings(SELECTING, "authorization.AuthorizationPoliciesAnalyzer") == [
        "Warning [IST0167] (AuthorizationPolicy shop/details mesh.yaml:91) The policy has no"
        " impact: its rules name peer principals or namespaces, but PeerAuthentication"
        " shop/details-plain disables mutual TLS for shop/details-v1, so no peer has an"
        " identity to match.",
        "Error [IST0101] (AuthorizationPolicy shop/from-front mesh.yaml:98) Referenced"
        ' namespace not found: "frontend"',
    ]


GATEWAY_BEHIND_SERVICE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: ingressgateway, namespace: istio-system}
spec:
  template:
    metadata: {labels: {istio: ingressgateway}}
---
apiVersion: v1
kind: Service
metadata: {name: ingressgateway, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 8443, name: https, protocol: HTTPS}
    hosts: ["*"]
    tls: {mode: SIMPLE, credentialName: shop-cert}
"""


def test_gateway_ports_the_service_in_front_does_not_target() -> None:
    assert findings(GATEWAY_BEHIND_SERVICE, "gateway.GatewayAnalyzer") == [
        "Warning [IST0162] (Gateway shop/ingress mesh.yaml:49) The gateway is listening on a"
        " target port (port 8443) that is not defined in the Service associated with its"
        " workload instances (Pod selector istio=ingressgateway). If you need to access the"
        " gateway port through the gateway Service, it will not be available.",
    ]
    without_service = GATEWAY_BEHIND_SERVICE.replace("kind: Service", "kind: ConfigMap")
    assert findings(without_service, "gateway.GatewayAnalyzer") == []
