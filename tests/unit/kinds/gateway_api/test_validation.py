"""The Gateway API kinds load from YAML in their v1 and older spellings, and bad objects
get the CRDs' rules (OpenAPI and CEL) as errors with file:line and field paths."""

from __future__ import annotations

import pytest

from pilothouse.config.load import Loader
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS

GATEWAY = """\
apiVersion: gateway.networking.k8s.io/{version}
kind: Gateway
metadata: {{name: web, namespace: edge}}
spec:
  gatewayClassName: istio
  listeners:
  - {{name: http, port: 8080, protocol: HTTP}}
"""


def _errors(text: str) -> list[str]:
    result = Loader(SCHEMAS, source="test").load_text(text, "gw.yaml")
    return [str(p) for p in result.errors]


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_a_gateway_loads_beside_istio_s_gateway_without_meeting_it(version: str) -> None:
    istio = (
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: web, namespace: "
        "edge}\n"
        "spec: {servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]}\n"
    )
    result = Loader(SCHEMAS, source="test").load_text(
        GATEWAY.format(version=version) + "---\n" + istio, "gw.yaml"
    )
    assert result.ok, result.errors
    assert [c.key for c in result.configs] == [
        ConfigKey("KubernetesGateway", "edge", "web"),
        ConfigKey("Gateway", "edge", "web"),
    ]


def test_every_kind_and_spelling_loads() -> None:
    text = "\n---\n".join(
        [
            "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: "
            "istio}\n"
            "spec: {controllerName: istio.io/gateway-controller}",
            "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: GRPCRoute\nmetadata: {name: g}\n"
            "spec: {parentRefs: [{name: web}], rules: [{matches: [{method: {service: a.B}}]}]}",
            "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TCPRoute\nmetadata: {name: t}\n"
            "spec: {parentRefs: [{name: web}], rules: [{backendRefs: [{name: db, port: 5432}]}]}",
            "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {name: s}\n"
            "spec: {hostnames: [a.example.com], rules: [{backendRefs: [{name: db, port: 443}]}]}",
            "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: "
            "{name: r}\n"
            "spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: edge}],"
            " to: [{group: '', kind: Service}]}",
            "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: HTTPRoute\nmetadata: {name: h}\n"
            "spec: {rules: [{backendRefs: [{name: app, port: 80}]}]}",
        ]
    )
    result = Loader(SCHEMAS, source="test").load_text(text, "all.yaml")
    assert result.ok, result.errors
    assert [c.kind for c in result.configs] == [
        "GatewayClass", "GRPCRoute", "TCPRoute", "TLSRoute", "ReferenceGrant", "HTTPRoute"
    ]  # fmt: skip
    assert result.configs[0].namespace == ""  # cluster-scoped


def test_gateway_rules_are_errors_at_their_paths() -> None:
    errors = _errors(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: web}\n"
        "spec:\n"
        "  gatewayClassName: istio\n"
        "  listeners:\n"
        "  - {name: a, port: 443, protocol: HTTPS}\n"
        "  - {name: a, port: 80, protocol: TCP, hostname: x.example.com}\n"
        "  - {name: c, port: 80, protocol: HTTP, tls: {mode: Terminate, certificateRefs: "
        "[{name: s}]}}\n"
        "  - {name: d, port: 0, protocol: HTTP, allowedRoutes: {namespaces: {from: Selector}}}\n"
    )
    assert errors == [
        "gw.yaml:8: Gateway default/web: spec.listeners[1].name: name 'a' must be unique",
        "gw.yaml:7: Gateway default/web: spec.listeners[0].tls: "
        "tls must be specified for protocol HTTPS",
        "gw.yaml:8: Gateway default/web: spec.listeners[1].hostname: "
        "hostname must not be specified for TCP",
        "gw.yaml:9: Gateway default/web: spec.listeners[2].tls: "
        "tls must not be specified for protocol HTTP",
        "gw.yaml:10: Gateway default/web: spec.listeners[3].port: "
        "port 0 must be between 1 and 65535",
        "gw.yaml:10: Gateway default/web: spec.listeners[3].allowedRoutes.namespaces."
        "selector: selector must be specified when from is Selector",
    ]


def test_http_route_rules_are_errors_at_their_paths() -> None:
    errors = _errors(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\n"
        "spec:\n"
        "  parentRefs: [{name: web}, {name: web}]\n"
        "  hostnames: ['*.example.com', 'Bad_Host']\n"
        "  rules:\n"
        "  - matches: [{path: {type: Exact, value: 'a//b'}, method: FETCH}]\n"
        "    filters: [{type: RequestRedirect, requestRedirect: {statusCode: 304}}]\n"
        "    backendRefs: [{name: app}]\n"
        "  - matches: [{path: {value: /a}}, {path: {value: /b}}]\n"
        "    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch}}}]\n"
        "    timeouts: {request: 1s, backendRequest: 2s}\n"
        "  - matches: [{path: {type: PathPrefix, value: /a//b}}]\n"
        "    backendRefs: [{name: app, port: 80, weight: -1}]\n"
        "    filters: [{type: RequestHeaderModifier}]\n"
    )
    lines = [5, 5, 6, 8, 8, 9, 8, 10, 12, 12, 13, 14, 16, 15]
    assert errors == [
        f"gw.yaml:{n}: HTTPRoute default/r: {e}"
        for n, e in zip(
            lines,
            [
                "spec.parentRefs[1]: sectionName or port must be specified when parentRefs "
                "includes 2 "
                "or more references to the same parent",
                "spec.parentRefs[1]: sectionName and port must be unique when parentRefs "
                "includes 2 or "
                "more references to the same parent",
                "spec.hostnames[1]: hostname 'Bad_Host' is not valid (must match "
                r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)",
                "spec.rules[0].matches[0].path.value: value must be an absolute path and start "
                "with "
                "'/' when type is Exact",
                "spec.rules[0].matches[0].method: unsupported value 'FETCH': must be one of "
                "GET, HEAD, "
                "POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH",
                "spec.rules[0].filters[0].requestRedirect.statusCode: unsupported value 304: "
                "must be "
                "one of 301, 302, 303, 307, 308",
                "spec.rules[0]: RequestRedirect filter must not be used together with backendRefs",
                "spec.rules[0].backendRefs[0].port: must have port for Service reference",
                "spec.rules[1].filters[0].urlRewrite.path.replacePrefixMatch: "
                "replacePrefixMatch must "
                "be specified when type is set to 'ReplacePrefixMatch'",
                "spec.rules[1].filters: when using URLRewrite filter with path.type "
                "ReplacePrefixMatch, "
                "exactly one PathPrefix match must be specified",
                "spec.rules[1].timeouts: backendRequest timeout cannot be longer than request "
                "timeout",
                "spec.rules[2].matches[0].path.value: must not contain '//' when type is "
                "PathPrefix",
                "spec.rules[2].filters[0].requestHeaderModifier: filter.requestHeaderModifier "
                "must be "
                "specified for RequestHeaderModifier filter.type",
                "spec.rules[2].backendRefs[0].weight: weight -1 must be between 0 and 1000000",
            ],
            strict=True,
        )
    ]


def test_unknown_fields_and_bad_route_kinds_are_refused() -> None:
    errors = _errors(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: g}\n"
        "spec: {rules: [{matches: [{method: {type: Exact}}]}], parentRef: []}\n"
        "---\n"
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: r}\n"
        "spec: {from: [{kind: HTTPRoute}], to: []}\n"
    )
    assert any("spec.parentRef" in e for e in errors), errors
    wanted = "gw.yaml:9: ReferenceGrant default/r: spec.to: a ReferenceGrant needs at least one to"
    assert wanted + " entry" in errors, errors
    assert any("spec.from[0].namespace: required" in e for e in errors), errors


def test_grpc_method_needs_a_service_or_a_method() -> None:
    errors = _errors(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: g}\n"
        "spec: {rules: [{matches: [{method: {type: Exact}}, {method: {service: 'a-b'}}]}]}\n"
    )
    assert errors == [
        "gw.yaml:4: GRPCRoute default/g: spec.rules[0].matches[0].method: one or both of "
        "'service' or 'method' must be specified",
        "gw.yaml:4: GRPCRoute default/g: spec.rules[0].matches[1].method.service: service "
        "'a-b' is not a valid gRPC service name",
    ]
