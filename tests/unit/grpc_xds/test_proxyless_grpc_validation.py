"""Validation warnings for VirtualServices and DestinationRules of gRPC-targeted hosts."""

from __future__ import annotations

import pytest

from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.config.validation.proxyless_grpc import (
    analyze_proxyless_grpc,
    grpc_hosts,
    is_grpc_port,
)
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import SCHEMAS

GRPC_SERVICE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: greeter, namespace: default}
spec:
  hosts: [greeter.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{name: grpc, number: 50051, protocol: GRPC}]
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: default}
spec:
  hosts: [web.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{name: http, number: 80, protocol: HTTP}]
  endpoints: [{address: 10.0.0.2}]
"""


def load(text: str) -> list[Config]:
    return Loader(SCHEMAS, source="test").load_strict(text, "mesh.yaml")


def warnings_for(text: str) -> dict[str, str]:
    """``{path: message}`` of every finding, all of which must be warnings."""
    found = analyze_proxyless_grpc(load(GRPC_SERVICE + text))
    assert all(f.severity is Severity.WARNING for _, f in found)
    return {f.path: f.message for _, f in found}


def virtual_service(host: str, http: str, extra: str = "") -> str:
    return f"""\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: vs, namespace: default}}
spec:
  hosts: [{host}]
{extra}  http:
{http}"""


def destination_rule(host: str, policy: str, subsets: str = "") -> str:
    return f"""\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: dr, namespace: default}}
spec:
  host: {host}
  trafficPolicy: {policy}
{subsets}"""


@pytest.mark.parametrize(
    ("protocol", "name", "expected"),
    [
        ("GRPC", "tcp", True),
        ("grpc", "", True),
        ("HTTP2", "grpc", False),
        ("", "grpc", True),
        ("", "grpc-admin", True),
        ("", "grpcweb", False),
        ("", "http", False),
    ],
)
def test_grpc_ports(protocol: str, name: str, expected: bool) -> None:
    assert is_grpc_port(protocol, name) is expected


def test_grpc_hosts_come_from_service_entries_with_grpc_ports() -> None:
    assert grpc_hosts(load(GRPC_SERVICE)) == {"greeter.default.svc.cluster.local"}


def test_supported_features_give_no_warning() -> None:
    http = """\
  - match: [{headers: {x-canary: {exact: "yes"}}, uri: {prefix: /helloworld.Greeter/}}]
    fault: {abort: {grpcStatus: UNAVAILABLE, percentage: {value: 10}}}
    timeout: 2s
    retries: {attempts: 3, retryOn: "unavailable,cancelled", backoff: 0.1s}
    route:
    - {destination: {host: greeter, subset: v1}, weight: 90}
    - {destination: {host: greeter, subset: v2}, weight: 10}
  - match: [{uri: {exact: /helloworld.Greeter/SayHello}}, {uri: {regex: "/.*"}}]
    route: [{destination: {host: greeter}}]
"""
    policy = (
        "{loadBalancer: {consistentHash: {httpHeaderName: x-user}}, "
        "connectionPool: {http: {http2MaxRequests: 100}}, "
        "outlierDetection: {interval: 5s, baseEjectionTime: 30s, maxEjectionPercent: 20}}"
    )
    subsets = """\
  subsets:
  - {name: v1, labels: {version: v1}, trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}}
  - {name: v2, labels: {version: v2}}
"""
    text = virtual_service("greeter", http) + destination_rule("greeter", policy, subsets)
    assert warnings_for(text) == {}


def test_route_features_grpc_does_not_honour() -> None:
    http = """\
  - match:
    - {queryParams: {debug: {exact: "1"}}}
    - {authority: {exact: greeter}, method: {exact: POST}, scheme: {exact: http}}
    - {uri: {prefix: /a/b/c}}
    - {uri: {exact: /health}}
    headers: {request: {set: {x-a: b}}}
    rewrite: {uri: /other}
    mirror: {host: greeter}
    corsPolicy: {allowOrigins: [{exact: "https://example.com"}]}
    retries: {attempts: 2, retryOn: "5xx,unavailable,connect-failure", perTryTimeout: 1s,
              retryRemoteLocalities: true}
    route: [{destination: {host: greeter}}]
  - directResponse: {status: 503}
"""
    found = warnings_for(virtual_service("greeter.default.svc.cluster.local", http))
    assert set(found) == {
        "spec.http[0].match[0].queryParams",
        "spec.http[0].match[1].authority",
        "spec.http[0].match[1].method",
        "spec.http[0].match[1].scheme",
        "spec.http[0].match[2].uri.prefix",
        "spec.http[0].match[3].uri.exact",
        "spec.http[0].headers",
        "spec.http[0].rewrite",
        "spec.http[0].mirror",
        "spec.http[0].corsPolicy",
        "spec.http[0].retries.retryOn",
        "spec.http[0].retries.perTryTimeout",
        "spec.http[0].retries.retryRemoteLocalities",
        "spec.http[1].directResponse",
    }
    assert "5xx, connect-failure" in found["spec.http[0].retries.retryOn"]
    assert "never matches" in found["spec.http[0].match[1].authority"]


def test_policy_features_grpc_does_not_honour() -> None:
    policy = (
        "{loadBalancer: {simple: LEAST_REQUEST, warmupDurationSecs: 10s, "
        "localityLbSetting: {enabled: true}}, "
        "connectionPool: {tcp: {maxConnections: 10}, http: {http2MaxRequests: 10}}, "
        "outlierDetection: {consecutive5xxErrors: 5}, tls: {mode: ISTIO_MUTUAL}}"
    )
    subsets = """\
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {loadBalancer: {consistentHash: {httpCookie: {name: c, ttl: 0s},
                    maglev: {tableSize: 65537}}}}
  - name: v2
    labels: {version: v2}
    trafficPolicy:
      portLevelSettings:
      - port: {number: 50051}
        loadBalancer: {simple: RANDOM}
"""
    found = warnings_for(destination_rule("greeter", policy, subsets))
    assert set(found) == {
        "spec.trafficPolicy.loadBalancer.simple",
        "spec.trafficPolicy.loadBalancer.warmup",
        "spec.trafficPolicy.loadBalancer.localityLbSetting",
        "spec.trafficPolicy.connectionPool",
        "spec.trafficPolicy.outlierDetection",
        "spec.trafficPolicy.tls",
        "spec.subsets[0].trafficPolicy.loadBalancer.consistentHash.maglev",
        "spec.subsets[0].trafficPolicy.loadBalancer.consistentHash.httpCookie",
        "spec.subsets[1].trafficPolicy.portLevelSettings[0].loadBalancer.simple",
    }
    simple = found["spec.trafficPolicy.loadBalancer.simple"]
    assert "LEAST_REQUEST is served as ROUND_ROBIN" in simple


def test_only_grpc_targeted_mesh_routes_are_checked() -> None:
    http = """\
  - match: [{queryParams: {debug: {exact: "1"}}}]
    route: [{destination: {host: greeter}}]
"""
    assert warnings_for(virtual_service("web", http)) == {}
    assert warnings_for(virtual_service("greeter", http, "  gateways: [ingress]\n")) == {}
    both = virtual_service("greeter", http, "  gateways: [ingress, mesh]\n")
    assert set(warnings_for(both)) == {"spec.http[0].match[0].queryParams"}
    wildcard = virtual_service('"*.default.svc.cluster.local"', http, "  gateways: [mesh]\n")
    assert set(warnings_for(wildcard)) == {"spec.http[0].match[0].queryParams"}
    assert warnings_for(destination_rule("web", "{loadBalancer: {simple: RANDOM}}")) == {}


def test_findings_name_their_object() -> None:
    text = GRPC_SERVICE + destination_rule("greeter", "{loadBalancer: {simple: RANDOM}}")
    ((key, finding),) = analyze_proxyless_grpc(load(text))
    assert (key.kind, key.namespace, key.name) == ("DestinationRule", "default", "dr")
    assert str(finding).startswith("warning: spec.trafficPolicy.loadBalancer.simple: ")


def test_no_grpc_service_no_findings() -> None:
    configs = [c for c in load(GRPC_SERVICE) if c.name == "web"]
    text = destination_rule("greeter", "{loadBalancer: {simple: RANDOM}}")
    assert analyze_proxyless_grpc([*configs, *load(text)]) == []
