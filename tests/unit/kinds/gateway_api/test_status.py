"""The Gateway API status pilothouse reports: gateway, listener and route conditions
with the spec's reasons, attachedRoutes, and broken references."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pilothouse.config.load import Loader
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.gateway_api.status import gateway_api_status
from pilothouse.kinds.gateway_api.translation import translate
from pilothouse.kinds.table import SCHEMAS

MESH = """\
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: istio}
spec: {controllerName: istio.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: istio
  addresses: [{value: 10.0.0.9}]
  listeners:
  - {name: http, port: 8080, protocol: HTTP}
  - {name: tcp, port: 8080, protocol: TCP}
  - {name: udp, port: 53, protocol: UDP}
  - name: tls
    port: 8443
    protocol: HTTPS
    tls: {certificateRefs: [{name: cert, namespace: certs}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: good, namespace: edge}
spec:
  parentRefs: [{name: web, sectionName: http}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: edge}
spec:
  parentRefs: [{name: web, sectionName: nope}, {name: elsewhere}]
  rules: [{backendRefs: [{name: gone, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: far, namespace: edge}
spec:
  parentRefs: [{name: web, port: 8080}]
  rules: [{backendRefs: [{name: app, namespace: shop, port: 80}]}]
"""
HOSTS = {"app.edge.svc.cluster.local", "app.shop.svc.cluster.local"}


def _status() -> dict[ConfigKey, Any]:
    configs = Loader(SCHEMAS, source="test").load_strict(MESH, "m.yaml")

    def of(kind: str) -> Sequence[Config]:
        return [c for c in configs if c.kind == kind]

    return gateway_api_status(
        translate(of, "cluster.local"), of, HOSTS.__contains__, "cluster.local"
    )


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_gateway_and_listener_conditions() -> None:
    status = _status()
    assert _conditions(status[ConfigKey("GatewayClass", "", "istio")]) == {
        "Accepted": ("True", "Accepted")
    }
    gateway = status[ConfigKey("KubernetesGateway", "edge", "web")]
    assert _conditions(gateway) == {
        "Accepted": ("True", "ListenersNotValid"),
        "Programmed": ("True", "Programmed"),
    }
    assert gateway["addresses"] == [{"type": "IPAddress", "value": "10.0.0.9"}]
    listeners = {listener["name"]: listener for listener in gateway["listeners"]}
    assert _conditions(listeners["http"]) == {
        "Accepted": ("True", "Accepted"),
        "Conflicted": ("False", "NoConflicts"),
        "ResolvedRefs": ("True", "ResolvedRefs"),
        "Programmed": ("True", "Programmed"),
    }
    assert listeners["http"]["attachedRoutes"] == 2  # good, and far by port
    assert listeners["http"]["supportedKinds"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"},
        {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute"},
    ]
    assert _conditions(listeners["tcp"])["Conflicted"] == ("True", "ProtocolConflict")
    assert _conditions(listeners["udp"])["Accepted"] == ("False", "UnsupportedProtocol")
    assert _conditions(listeners["tls"])["ResolvedRefs"] == ("False", "RefNotPermitted")
    assert listeners["tls"]["attachedRoutes"] == 0


def test_route_conditions_per_parent() -> None:
    status = _status()
    (good,) = status[ConfigKey("HTTPRoute", "edge", "good")]["parents"]
    assert good["controllerName"] == "istio.io/gateway-controller"
    assert good["parentRef"] == {"name": "web", "sectionName": "http"}
    assert _conditions(good) == {
        "Accepted": ("True", "Accepted"),
        "ResolvedRefs": ("True", "ResolvedRefs"),
    }
    (broken,) = status[ConfigKey("HTTPRoute", "edge", "broken")]["parents"]  # not elsewhere
    assert _conditions(broken) == {
        "Accepted": ("False", "NoMatchingParent"),
        "ResolvedRefs": ("False", "BackendNotFound"),
    }
    (far,) = status[ConfigKey("HTTPRoute", "edge", "far")]["parents"]
    assert _conditions(far) == {
        "Accepted": ("True", "Accepted"),
        "ResolvedRefs": ("False", "RefNotPermitted"),
    }
