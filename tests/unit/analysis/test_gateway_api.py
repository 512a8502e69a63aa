"""Gateway API analysis: parentRefs and backendRefs to nothing (IST0101), negative
conditions of the computed status (IST0171: a reference across namespaces without a
ReferenceGrant, an invalid listener), a class this control plane does not handle
(PH0141), and agreement with the status ``/debug/gateway_apiz`` serves."""

from __future__ import annotations

from pilothouse.analysis.analyzers import ANALYZERS, analyze
from pilothouse.analysis.status import validation_messages
from pilothouse.kinds.gateway_api.status import gateway_api_status
from pilothouse.kinds.gateway_api.translation import translate
from tests.unit.analysis.mesh import findings, view_of

ANALYZER = "gatewayapi.ConditionAnalyzer"

GATEWAY = """
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
"""


def route(name: str, parents: str, backends: str) -> str:
    return (
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
        f"metadata: {{name: {name}, namespace: shop}}\n"
        f"spec:\n  parentRefs: {parents}\n  rules: [{{backendRefs: {backends}}}]\n---\n"
    )


def test_parents_and_backends_that_do_not_exist() -> None:
    text = GATEWAY + route(
        "broken",
        "[{name: wbe}, {name: web}, {group: '', kind: Service, name: detials}]",
        "[{name: ratingz, port: 9080}]",
    )
    assert findings(text, ANALYZER) == [
        "Error [IST0101] (HTTPRoute shop/broken mesh.yaml:42) Referenced Gateway not found:"
        ' "shop/wbe" (did you mean "shop/web"?)',
        "Error [IST0101] (HTTPRoute shop/broken mesh.yaml:42) Referenced Service not found:"
        ' "shop/detials" (did you mean "details"?)',
        "Error [IST0101] (HTTPRoute shop/broken mesh.yaml:42) Referenced backendRef not found:"
        ' "shop/ratingz"',
    ]
    fine = GATEWAY + route(
        "fine",
        "[{name: web}, {group: '', kind: Service, name: details}]",
        "[{name: reviews, port: 9080}]",
    )
    assert findings(fine, ANALYZER) == []


GRANT = """
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-shop, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: shop}]
  to: [{group: '', kind: Service}]
---
"""

OTHER = """
apiVersion: v1
kind: Service
metadata: {name: ratings, namespace: other}
spec: {selector: {app: ratings}, ports: [{port: 9080}]}
---
"""


def test_a_reference_across_namespaces_needs_a_reference_grant() -> None:
    text = (
        OTHER
        + GATEWAY
        + route("across", "[{name: web}]", "[{name: ratings, namespace: other, port: 9080}]")
    )
    assert findings(text, ANALYZER) == [
        "Warning [IST0171] (HTTPRoute shop/across mesh.yaml:48) A condition with a negative"
        " status is present: type=ResolvedRefs, reason=RefNotPermitted, message=no"
        " ReferenceGrant lets it reach other/ratings."
    ]
    assert findings(GRANT + text, ANALYZER) == []


def test_a_gateway_of_another_class_and_an_invalid_listener() -> None:
    text = """
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: nginx, namespace: shop}
spec:
  gatewayClassName: nginx
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: udp, namespace: shop}
spec:
  gatewayClassName: istio
  listeners: [{name: dns, port: 53, protocol: UDP}, {name: http, port: 80, protocol: HTTP}]
"""
    assert findings(text, ANALYZER) == [
        'Info [PH0141] (KubernetesGateway shop/nginx mesh.yaml:35) The Gateway\'s class "nginx"'
        " is not handled by this control plane (controller istio.io/gateway-controller): its"
        " listeners and the routes attached to them are not served here.",
        "Warning [IST0171] (KubernetesGateway shop/udp mesh.yaml:42) A condition with a"
        " negative status is present: type=Accepted, reason=UnsupportedProtocol,"
        " message=protocol UDP is not supported. (listener dns)",
    ]


def test_analysis_and_status_agree() -> None:
    """Every negative route condition of the status ``serve`` reports is one finding, and
    a route the status accepts has none."""
    text = OTHER + GATEWAY
    text += route("across", "[{name: web}]", "[{name: ratings, namespace: other, port: 9080}]")
    text += route("missing", "[{name: web}]", "[{name: ratingz, port: 9080}]")
    text += route("fine", "[{name: web}]", "[{name: reviews, port: 9080}]")
    view = view_of(text)
    domain = view.mesh.domain_suffix
    statuses = gateway_api_status(
        translate(view.of_kind, domain), view.of_kind, view.by_host.__contains__, domain
    )
    reasons = {
        key.name: sorted(
            c["reason"]
            for parent in status["parents"]
            for c in parent["conditions"]
            if c["status"] == "False"
        )
        for key, status in statuses.items()
        if key.kind == "HTTPRoute"
    }
    assert reasons == {"across": ["RefNotPermitted"], "missing": ["BackendNotFound"], "fine": []}
    chosen = [a for a in ANALYZERS if a.name == ANALYZER]
    found = {(m.key.name if m.key else "", m.type.code) for m in analyze(view, chosen)}
    assert found == {("across", "IST0171"), ("missing", "IST0101")}


def test_status_carries_no_validation_messages_for_the_gateway_api() -> None:
    """``serve --write-status`` writes a Gateway API object's findings as its conditions
    only: its CRD has no ``validationMessages``; an Istio kind's findings are written."""
    text = GATEWAY + route("missing", "[{name: web}]", "[{name: ratingz, port: 9080}]")
    text += "apiVersion: networking.istio.io/v1beta1\nkind: ProxyConfig\n"
    text += "metadata: {name: nobody, namespace: shop}\nspec: {selector: {matchLabels: {a: b}}}\n"
    messages = analyze(view_of(text))
    assert {m.key.kind for m in messages if m.key} == {"HTTPRoute", "ProxyConfig"}
    written = validation_messages(messages)
    assert [key.kind for key in written] == ["ProxyConfig"]
    assert written[next(iter(written))][0]["type"] == {
        "name": "NoMatchingWorkloadsFound",
        "code": "IST0127",
    }
