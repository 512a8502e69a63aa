"""Sidecar validation: listeners, egress hosts, capture modes, outbound traffic policy."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3.sidecar_pb2 import Sidecar
from pilothouse.config.validation import Report, validate_sidecar

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning, run

NO_IPTABLES: dict[str, Any] = {
    "workloadSelector": {"labels": {"app": "ratings"}},
    "ingress": [
        {
            "port": {"number": 9080, "protocol": "HTTP", "name": "http"},
            "defaultEndpoint": "127.0.0.1:8080",
            "connectionPool": {"http": {"http1MaxPendingRequests": 100}},
        },
        {
            "port": {"number": 9443, "protocol": "HTTPS", "name": "https"},
            "defaultEndpoint": "unix:///var/run/ratings.sock",
            "tls": {"mode": "SIMPLE", "serverCertificate": "/c.pem", "privateKey": "/k.pem"},
        },
        {
            "port": {"number": 9090, "protocol": "GRPC"},
            "bind": "0.0.0.0",
            "defaultEndpoint": "[::1]:9091",
        },
    ],
    "egress": [
        {
            "port": {"number": 9080, "protocol": "HTTP", "name": "egress-http"},
            "bind": "127.0.0.1",
            "captureMode": "NONE",
            "hosts": ["prod/reviews.prod.svc.cluster.local", "./*.internal.example"],
        },
        {
            "port": {"number": 0, "protocol": "HTTP", "name": "uds"},
            "bind": "unix:///var/run/egress.sock",
            "captureMode": "DEFAULT",
            "hosts": ["*/api.example.com"],
        },
        {"hosts": ["istio-system/*", "./*", "~legacy/*"]},
    ],
    "outboundTrafficPolicy": {
        "mode": "ALLOW_ANY",
        "egressProxy": {"host": "egress.proxy.example", "subset": "v1", "port": {"number": 3128}},
    },
    "inboundConnectionPool": {"tcp": {"maxConnections": 1000}},
}


def egress(*listeners: dict[str, Any]) -> dict[str, Any]:
    return {"egress": list(listeners)}


def ingress(**listener: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"port": {"number": 9080, "protocol": "HTTP", "name": "http"}}
    base.update(listener)
    return {"ingress": [base]}


def check(spec: dict[str, Any]) -> Report:
    return run(validate_sidecar, Sidecar, spec, namespace="ratings")


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(NO_IPTABLES, id="no-iptables"),
        pytest.param(egress({"hosts": ["./*", "istio-system/*"]}), id="namespace-default"),
        pytest.param(egress({"hosts": ["~/*"]}), id="nothing"),
        pytest.param({"outboundTrafficPolicy": {"mode": "REGISTRY_ONLY"}}, id="registry-only"),
        pytest.param({"inboundConnectionPool": {"http": {"maxRetries": 3}}}, id="inbound-pool"),
    ],
)
def test_valid_sidecars(spec: dict[str, Any]) -> None:
    assert_clean(check(spec))


E0 = "spec.egress[0]"
I0 = "spec.ingress[0]"
PROXY = "spec.outboundTrafficPolicy.egressProxy"

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("empty", {"workloadSelector": {"labels": {"app": "x"}}}, "spec", "needs ingress, egress"),
    ("egress-without-hosts", egress({"port": {"number": 80}}), f"{E0}.hosts", "at least one host"),
    (
        "egress-host-without-namespace",
        egress({"hosts": ["reviews.prod.svc.cluster.local"]}),
        f"{E0}.hosts[0]",
        "must have the form namespace/dnsName",
    ),
    (
        "egress-host-bad-namespace",
        egress({"hosts": ["prod.ns/reviews.example"]}),
        f"{E0}.hosts[0]",
        "namespace 'prod.ns'",
    ),
    (
        "egress-host-short-name",
        egress({"hosts": ["prod/reviews"]}),
        f"{E0}.hosts[0]",
        "short name 'reviews'",
    ),
    (
        "egress-host-partial-wildcard",
        egress({"hosts": ["prod/*reviews.example"]}),
        f"{E0}.hosts[0]",
        "whole first label",
    ),
    (
        "egress-host-ip",
        egress({"hosts": ["prod/10.0.0.1"]}),
        f"{E0}.hosts[0]",
        "all digits",
    ),
    (
        "two-catch-alls",
        egress({"hosts": ["./*"]}, {"hosts": ["istio-system/*"]}),
        "spec.egress[1]",
        "only one egress listener may omit the port (egress[0] does)",
    ),
    (
        "catch-all-not-last",
        egress({"hosts": ["./*"]}, {"port": {"number": 80}, "hosts": ["./*"]}),
        E0,
        "must be the last one",
    ),
    (
        "duplicate-egress-port",
        egress(
            {"port": {"number": 80}, "hosts": ["./*"]},
            {"port": {"number": 80, "protocol": "TCP"}, "hosts": ["a/*"]},
        ),
        "spec.egress[1].port.number",
        "port 80 is already used by egress[0]",
    ),
    (
        "egress-port-out-of-range",
        egress({"port": {"number": 70000}, "hosts": ["./*"]}),
        f"{E0}.port.number",
        "must be in 1..65535",
    ),
    (
        "port-zero-without-socket",
        egress({"port": {"number": 0}, "bind": "127.0.0.1", "hosts": ["./*"]}),
        f"{E0}.bind",
        "port 0 needs a unix:// bind address",
    ),
    (
        "socket-with-iptables",
        egress(
            {
                "port": {"number": 0},
                "bind": "unix:///var/run/e.sock",
                "captureMode": "IPTABLES",
                "hosts": ["./*"],
            }
        ),
        f"{E0}.captureMode",
        "need captureMode DEFAULT or NONE",
    ),
    (
        "duplicate-sockets",
        egress(
            {"port": {"number": 0}, "bind": "unix:///var/run/e.sock", "hosts": ["./*"]},
            {"port": {"number": 0}, "bind": "unix:///var/run/e.sock", "hosts": ["a/*"]},
        ),
        "spec.egress[1].bind",
        "already used by egress[0]",
    ),
    (
        "egress-bind-not-ip",
        egress({"port": {"number": 80}, "bind": "localhost", "hosts": ["./*"]}),
        f"{E0}.bind",
        "not a valid IP address",
    ),
    (
        "egress-unknown-protocol",
        egress({"port": {"number": 80, "protocol": "WEBSOCKET"}, "hosts": ["./*"]}),
        f"{E0}.port.protocol",
        "unknown protocol",
    ),
    (
        "egress-port-name",
        egress({"port": {"number": 80, "name": "HTTP_80"}, "hosts": ["./*"]}),
        f"{E0}.port.name",
        "not a DNS-1123 label",
    ),
    (
        "ingress-without-port",
        {"ingress": [{"defaultEndpoint": "127.0.0.1:80"}]},
        f"{I0}.port",
        "need a port",
    ),
    (
        "ingress-port-zero",
        ingress(port={"number": 0, "protocol": "HTTP"}),
        f"{I0}.port.number",
        "must be in 1..65535",
    ),
    (
        "duplicate-ingress-port",
        {"ingress": [{"port": {"number": 80}}, {"port": {"number": 80}}]},
        "spec.ingress[1].port.number",
        "already used by ingress[0]",
    ),
    (
        "default-endpoint-remote",
        ingress(defaultEndpoint="10.0.0.1:8080"),
        f"{I0}.defaultEndpoint",
        "must be 127.0.0.1:<port>, 0.0.0.0:<port>",
    ),
    (
        "default-endpoint-port-name",
        ingress(defaultEndpoint="127.0.0.1:http"),
        f"{I0}.defaultEndpoint",
        "port must be a number",
    ),
    (
        "default-endpoint-no-port",
        ingress(defaultEndpoint="127.0.0.1"),
        f"{I0}.defaultEndpoint",
        "must be 127.0.0.1:<port>",
    ),
    (
        "default-endpoint-relative-socket",
        ingress(defaultEndpoint="unix://app.sock"),
        f"{I0}.defaultEndpoint",
        "not an absolute path",
    ),
    (
        "ingress-bind-socket",
        ingress(bind="unix:///var/run/in.sock"),
        f"{I0}.bind",
        "not a valid IP address",
    ),
    (
        "ingress-tls-istio-mutual",
        ingress(tls={"mode": "ISTIO_MUTUAL"}),
        f"{I0}.tls.mode",
        "ISTIO_MUTUAL cannot be used on Sidecar ingress",
    ),
    (
        "ingress-tls-credential",
        ingress(tls={"mode": "SIMPLE", "credentialName": "c"}),
        f"{I0}.tls.credentialName",
        "not supported on Sidecars",
    ),
    (
        "ingress-tls-https-redirect",
        ingress(tls={"httpsRedirect": True}),
        f"{I0}.tls.httpsRedirect",
        "not supported on Sidecars",
    ),
    (
        "ingress-tls-subject-alt-names",
        ingress(tls={"mode": "MUTUAL", "subjectAltNames": ["a"]}),
        f"{I0}.tls.subjectAltNames",
        "not supported on ingress",
    ),
    (
        "ingress-tls-missing-key",
        ingress(tls={"mode": "SIMPLE", "serverCertificate": "/c.pem"}),
        f"{I0}.tls.privateKey",
        "SIMPLE needs",
    ),
    (
        "ingress-pool",
        ingress(connectionPool={"tcp": {"connectTimeout": "0s"}}),
        f"{I0}.connectionPool.tcp.connectTimeout",
        "at least 1ms",
    ),
    (
        "egress-proxy-registry-only",
        {"outboundTrafficPolicy": {"egressProxy": {"host": "p.example", "port": {"number": 3128}}}},
        PROXY,
        "only with mode ALLOW_ANY",
    ),
    (
        "egress-proxy-without-host",
        {"outboundTrafficPolicy": {"mode": "ALLOW_ANY", "egressProxy": {"port": {"number": 3128}}}},
        f"{PROXY}.host",
        "needs a host",
    ),
    (
        "egress-proxy-without-port",
        {"outboundTrafficPolicy": {"mode": "ALLOW_ANY", "egressProxy": {"host": "p.example"}}},
        f"{PROXY}.port",
        "needs a port",
    ),
    (
        "egress-proxy-wildcard",
        {
            "outboundTrafficPolicy": {
                "mode": "ALLOW_ANY",
                "egressProxy": {"host": "*.p.example", "port": {"number": 3128}},
            }
        },
        f"{PROXY}.host",
        "must not contain a wildcard",
    ),
    (
        "egress-proxy-port-range",
        {
            "outboundTrafficPolicy": {
                "mode": "ALLOW_ANY",
                "egressProxy": {"host": "p.example", "port": {"number": 0}},
            }
        },
        f"{PROXY}.port.number",
        "must be in 1..65535",
    ),
    (
        "selector-wildcard",
        {**egress({"hosts": ["./*"]}), "workloadSelector": {"labels": {"app": "*"}}},
        "spec.workloadSelector.labels[app]",
        "wildcards are not supported",
    ),
    (
        "inbound-pool",
        {"inboundConnectionPool": {"tcp": {"maxConnections": -1}}},
        "spec.inboundConnectionPool.tcp.maxConnections",
        "must not be negative",
    ),
    (
        "unknown-capture-mode",
        egress({"port": {"number": 80}, "captureMode": 5, "hosts": ["./*"]}),
        f"{E0}.captureMode",
        "unknown CaptureMode value 5",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_sidecars(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)


WARNINGS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "empty-selector",
        {**egress({"hosts": ["./*"]}), "workloadSelector": {}},
        "spec.workloadSelector.labels",
        "selects every workload",
    ),
    (
        "repeated-host",
        egress({"hosts": ["prod/a.example", "prod/a.example"]}),
        f"{E0}.hosts[1]",
        "repeats or is covered",
    ),
    (
        "covered-by-namespace-wildcard",
        egress({"hosts": ["./*", "ratings/a.example"]}),
        f"{E0}.hosts[1]",
        "repeats or is covered",
    ),
    (
        "everything-plus-more",
        egress({"hosts": ["*/*", "prod/a.example"]}),
        f"{E0}.hosts",
        "'*/*' already imports everything",
    ),
    (
        "target-port-deprecated",
        egress({"port": {"number": 80, "targetPort": 8080}, "hosts": ["./*"]}),
        f"{E0}.port.targetPort",
        "deprecated",
    ),
    (
        "http-pool-on-tcp-port",
        {
            "ingress": [
                {
                    "port": {"number": 3306, "protocol": "TCP"},
                    "connectionPool": {"http": {"maxRetries": 1}},
                }
            ]
        },
        f"{I0}.connectionPool.http",
        "only the tcp settings apply",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [case[1:] for case in WARNINGS],
    ids=[case[0] for case in WARNINGS],
)
def test_sidecar_warnings(spec: dict[str, Any], path: str, fragment: str) -> None:
    report = check(spec)
    assert_no_errors(report)
    assert_warning(report, path, fragment)
