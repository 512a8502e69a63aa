"""Gateway validation: servers, ports, hosts, TLS settings and conflicts between servers."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3.gateway_pb2 import Gateway
from pilothouse.config.validation import Report, validate_gateway

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning, run

EDGE: dict[str, Any] = {
    "selector": {"istio": "ingressgateway"},
    "servers": [
        {
            "port": {"number": 80, "name": "http", "protocol": "HTTP"},
            "hosts": ["prod/shop.example.com", "*/api.example.com"],
            "tls": {"httpsRedirect": True},
        },
        {
            "port": {"number": 443, "name": "https", "protocol": "HTTPS"},
            "hosts": ["prod/shop.example.com"],
            "tls": {
                "mode": "SIMPLE",
                "credentialName": "shop-cert",
                "minProtocolVersion": "TLSV1_2",
            },
        },
        {
            "port": {"number": 443, "name": "tls-passthrough", "protocol": "TLS"},
            "hosts": ["./login.example.com"],
            "tls": {"mode": "PASSTHROUGH"},
        },
        {
            "port": {"number": 8443, "name": "https-mtls", "protocol": "https"},
            "hosts": ["partners.example.com"],
            "tls": {
                "mode": "MUTUAL",
                "serverCertificate": "/etc/certs/server.pem",
                "privateKey": "/etc/certs/key.pem",
                "caCertificates": "/etc/certs/ca.pem",
                "subjectAltNames": ["partner.example"],
            },
        },
        {
            "port": {"number": 15443, "name": "tls-cross-network", "protocol": "TLS"},
            "hosts": ["*.local"],
            "tls": {"mode": "AUTO_PASSTHROUGH"},
        },
        {
            "port": {"number": 15012, "name": "tls-istiod", "protocol": "TLS"},
            "hosts": ["*"],
            "tls": {"mode": "ISTIO_MUTUAL"},
        },
        {
            "port": {"number": 9000, "name": "tcp-db", "protocol": "TCP"},
            "hosts": ["10.0.0.5"],
            "bind": "0.0.0.0",
        },
        {
            "port": {"number": 0, "name": "http-uds", "protocol": "HTTP"},
            "hosts": ["*"],
            "bind": "unix:///var/run/gateway.sock",
        },
    ],
}


def server(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "port": {"number": 80, "name": "http", "protocol": "HTTP"},
        "hosts": ["shop.example.com"],
    }
    base.update(fields)
    return {"servers": [base]}


def https(**tls: Any) -> dict[str, Any]:
    return server(port={"number": 443, "name": "https", "protocol": "HTTPS"}, tls=tls)


def check(spec: dict[str, Any], name: str = "edge-gateway") -> Report:
    return run(validate_gateway, Gateway, spec, name=name)


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(EDGE, id="edge"),
        pytest.param(
            https(mode="SIMPLE", serverCertificate="/c.pem", privateKey="/k.pem"), id="simple-files"
        ),
        pytest.param(https(mode="OPTIONAL_MUTUAL", credentialName="creds"), id="optional-mutual"),
        pytest.param(
            https(
                mode="SIMPLE",
                tlsCertificates=[
                    {"serverCertificate": "/rsa.pem", "privateKey": "/rsa.key"},
                    {"serverCertificate": "/ec.pem", "privateKey": "/ec.key"},
                ],
            ),
            id="tls-certificates",
        ),
        pytest.param(https(mode="MUTUAL", credentialNames=["rsa", "ecdsa"]), id="credential-names"),
        pytest.param(
            https(
                mode="MUTUAL",
                serverCertificate="/c.pem",
                privateKey="/k.pem",
                caCertCredentialName="client-ca",
                caCrl="/crl.pem",
            ),
            id="mutual-ca-credential-and-crl",
        ),
        pytest.param(
            https(
                mode="SIMPLE",
                credentialName="c",
                minProtocolVersion="TLSV1_0",
                cipherSuites=["AES256-SHA"],
            ),
            id="old-tls-with-ciphers",
        ),
        pytest.param(
            server(
                port={"number": 8080, "name": "grpc", "protocol": "GRPC"},
                defaultEndpoint="127.0.0.1:9090",
            ),
            id="default-endpoint",
        ),
    ],
)
def test_valid_gateways(spec: dict[str, Any]) -> None:
    assert_clean(check(spec))


S0 = "spec.servers[0]"

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "no-servers",
        {"selector": {"istio": "ingressgateway"}},
        "spec.servers",
        "at least one server",
    ),
    ("no-hosts", server(hosts=[]), f"{S0}.hosts", "at least one host"),
    ("short-host", server(hosts=["shop"]), f"{S0}.hosts[0]", "short name 'shop'"),
    (
        "bad-namespace",
        server(hosts=["Bad_NS/shop.example.com"]),
        f"{S0}.hosts[0]",
        "namespace 'Bad_NS'",
    ),
    (
        "tilde-namespace",
        server(hosts=["~/shop.example.com"]),
        f"{S0}.hosts[0]",
        "namespace '~'",
    ),
    (
        "partial-wildcard",
        server(hosts=["prod/*shop.example.com"]),
        f"{S0}.hosts[0]",
        "whole first label",
    ),
    ("empty-dns-name", server(hosts=["prod/"]), f"{S0}.hosts[0]", "must both be set"),
    ("no-port", {"servers": [{"hosts": ["a.example.com"]}]}, f"{S0}.port", "needs a port"),
    (
        "no-protocol",
        server(port={"number": 80, "name": "http"}),
        f"{S0}.port.protocol",
        "protocol is required",
    ),
    (
        "unknown-protocol",
        server(port={"number": 80, "name": "http", "protocol": "QUIC"}),
        f"{S0}.port.protocol",
        "unknown protocol 'QUIC'",
    ),
    (
        "port-zero",
        server(port={"number": 0, "name": "http", "protocol": "HTTP"}),
        f"{S0}.port.number",
        "must be in 1..65535",
    ),
    (
        "port-name-missing",
        server(port={"number": 80, "protocol": "HTTP"}),
        f"{S0}.port.name",
        "port name is required",
    ),
    (
        "port-name-invalid",
        server(port={"number": 80, "name": "http_80", "protocol": "HTTP"}),
        f"{S0}.port.name",
        "not a DNS-1123 label",
    ),
    (
        "duplicate-port-names",
        {
            "servers": [
                {
                    "port": {"number": 80, "name": "web", "protocol": "HTTP"},
                    "hosts": ["a.example.com"],
                },
                {
                    "port": {"number": 8080, "name": "web", "protocol": "HTTP"},
                    "hosts": ["b.example.com"],
                },
            ]
        },
        "spec.servers[1].port.name",
        "'web' is already used by servers[0]",
    ),
    (
        "https-without-tls",
        server(port={"number": 443, "name": "https", "protocol": "HTTPS"}),
        f"{S0}.tls",
        "HTTPS servers need tls settings",
    ),
    (
        "tls-without-tls",
        server(port={"number": 443, "name": "tls", "protocol": "TLS"}),
        f"{S0}.tls",
        "TLS servers need tls settings",
    ),
    (
        "tcp-with-tls",
        server(
            port={"number": 9000, "name": "tcp", "protocol": "TCP"}, tls={"mode": "PASSTHROUGH"}
        ),
        f"{S0}.tls",
        "apply only to HTTPS and TLS servers",
    ),
    (
        "http-with-simple-tls",
        server(tls={"mode": "SIMPLE", "credentialName": "c"}),
        f"{S0}.tls",
        "plain-text HTTP server can use tls only for httpsRedirect",
    ),
    (
        "http-with-auto-passthrough",
        server(tls={"mode": "AUTO_PASSTHROUGH"}),
        f"{S0}.tls",
        "plain-text HTTP server",
    ),
    (
        "simple-without-certificate",
        https(mode="SIMPLE", privateKey="/k.pem"),
        f"{S0}.tls.serverCertificate",
        "SIMPLE needs serverCertificate and privateKey, or credentialName",
    ),
    (
        "simple-without-key",
        https(mode="SIMPLE", serverCertificate="/c.pem"),
        f"{S0}.tls.privateKey",
        "SIMPLE needs",
    ),
    (
        "mutual-without-ca",
        https(mode="MUTUAL", serverCertificate="/c.pem", privateKey="/k.pem"),
        f"{S0}.tls.caCertificates",
        "MUTUAL needs caCertificates",
    ),
    (
        "optional-mutual-without-certificate",
        https(mode="OPTIONAL_MUTUAL", caCertificates="/ca.pem"),
        f"{S0}.tls.serverCertificate",
        "OPTIONAL_MUTUAL needs",
    ),
    (
        "istio-mutual-with-certificate",
        https(mode="ISTIO_MUTUAL", serverCertificate="/c.pem"),
        f"{S0}.tls.serverCertificate",
        "ISTIO_MUTUAL uses the mesh's own certificates",
    ),
    (
        "istio-mutual-with-credential",
        https(mode="ISTIO_MUTUAL", credentialName="c"),
        f"{S0}.tls.credentialName",
        "must not be set",
    ),
    (
        "credential-name-and-names",
        https(mode="SIMPLE", credentialName="a", credentialNames=["b"]),
        f"{S0}.tls.credentialNames",
        "mutually exclusive",
    ),
    (
        "crl-with-credential",
        https(mode="MUTUAL", credentialName="a", caCrl="/crl.pem"),
        f"{S0}.tls.caCrl",
        "cannot be used with a credential",
    ),
    (
        "crl-with-simple",
        https(mode="SIMPLE", serverCertificate="/c.pem", privateKey="/k.pem", caCrl="/crl.pem"),
        f"{S0}.tls.caCrl",
        "no use with SIMPLE",
    ),
    (
        "tls-certificate-without-key",
        https(mode="SIMPLE", tlsCertificates=[{"serverCertificate": "/c.pem"}]),
        f"{S0}.tls.tlsCertificates[0].privateKey",
        "privateKey is required",
    ),
    (
        "tls-certificates-and-files",
        https(
            mode="SIMPLE",
            serverCertificate="/c.pem",
            privateKey="/k.pem",
            tlsCertificates=[{"serverCertificate": "/c2.pem", "privateKey": "/k2.pem"}],
        ),
        f"{S0}.tls.tlsCertificates",
        "mutually exclusive",
    ),
    (
        "protocol-versions-reversed",
        https(
            mode="SIMPLE",
            credentialName="c",
            minProtocolVersion="TLSV1_3",
            maxProtocolVersion="TLSV1_2",
        ),
        f"{S0}.tls.minProtocolVersion",
        "above maxProtocolVersion",
    ),
    ("bad-bind", server(bind="localhost"), f"{S0}.bind", "not a valid IP address"),
    (
        "unix-bind-with-port",
        server(bind="unix:///var/run/gw.sock"),
        f"{S0}.port.number",
        "must be 0 with a unix socket bind",
    ),
    (
        "unix-bind-relative",
        server(bind="unix://gw.sock", port={"number": 0, "name": "http", "protocol": "HTTP"}),
        f"{S0}.bind",
        "not an absolute path",
    ),
    (
        "bad-default-endpoint",
        server(defaultEndpoint="10.0.0.1:8080"),
        f"{S0}.defaultEndpoint",
        "must be 127.0.0.1:<port>",
    ),
    (
        "protocol-conflict",
        {
            "servers": [
                {
                    "port": {"number": 80, "name": "http", "protocol": "HTTP"},
                    "hosts": ["a.example.com"],
                },
                {
                    "port": {"number": 80, "name": "tcp", "protocol": "TCP"},
                    "hosts": ["b.example.com"],
                },
            ]
        },
        "spec.servers[1].port.protocol",
        "port 80 is also used by servers[0] with protocol 'HTTP'",
    ),
    (
        "http-and-https-on-one-port",
        {
            "servers": [
                {
                    "port": {"number": 8000, "name": "a", "protocol": "HTTP"},
                    "hosts": ["a.example.com"],
                },
                {
                    "port": {"number": 8000, "name": "b", "protocol": "HTTPS"},
                    "hosts": ["b.example.com"],
                    "tls": {"mode": "SIMPLE", "credentialName": "c"},
                },
            ]
        },
        "spec.servers[1].port.protocol",
        "servers on one port must agree on the protocol",
    ),
    (
        "host-twice-on-port",
        {
            "servers": [
                {
                    "port": {"number": 443, "name": "https-a", "protocol": "HTTPS"},
                    "hosts": ["shop.example.com"],
                    "tls": {"mode": "SIMPLE", "credentialName": "a"},
                },
                {
                    "port": {"number": 443, "name": "https-b", "protocol": "HTTPS"},
                    "hosts": ["other.example.com", "shop.example.com"],
                    "tls": {"mode": "SIMPLE", "credentialName": "b"},
                },
            ]
        },
        "spec.servers[1].hosts[1]",
        "'shop.example.com' is already served on port 443 by servers[0]",
    ),
    (
        "selector-label",
        {**server(), "selector": {"istio": "ingress gateway"}},
        "spec.selector[istio]",
        "label value 'ingress gateway' is invalid",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_gateways(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)


def test_gateway_name_with_dots_is_rejected() -> None:
    assert_error(check(server(), name="edge.gateway"), "metadata.name", "must be a DNS-1123 label")


def test_same_port_on_different_binds_does_not_conflict() -> None:
    spec = {
        "servers": [
            {
                "port": {"number": 80, "name": "a", "protocol": "HTTP"},
                "hosts": ["a.example.com"],
                "bind": "10.0.0.1",
            },
            {
                "port": {"number": 80, "name": "b", "protocol": "TCP"},
                "hosts": ["a.example.com"],
                "bind": "10.0.0.2",
            },
        ]
    }
    assert_clean(check(spec))


WARNINGS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "https-redirect-on-https",
        https(mode="SIMPLE", credentialName="c", httpsRedirect=True),
        f"{S0}.tls.httpsRedirect",
        "only applies to HTTP servers",
    ),
    (
        "passthrough-with-certificates",
        server(
            port={"number": 443, "name": "tls", "protocol": "TLS"},
            tls={"mode": "PASSTHROUGH", "serverCertificate": "/c.pem"},
        ),
        f"{S0}.tls.serverCertificate",
        "does not terminate TLS",
    ),
    (
        "target-port-deprecated",
        server(port={"number": 80, "name": "http", "protocol": "HTTP", "targetPort": 8080}),
        f"{S0}.port.targetPort",
        "deprecated",
    ),
    (
        "old-tls-without-ciphers",
        https(mode="SIMPLE", credentialName="c", minProtocolVersion="TLSV1_1"),
        f"{S0}.tls.cipherSuites",
        "below 1.2 need cipherSuites",
    ),
    (
        "credential-overrides-files",
        https(mode="SIMPLE", credentialName="c", serverCertificate="/c.pem"),
        f"{S0}.tls.serverCertificate",
        "ignored: the credential supplies the certificates",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [case[1:] for case in WARNINGS],
    ids=[case[0] for case in WARNINGS],
)
def test_gateway_warnings(spec: dict[str, Any], path: str, fragment: str) -> None:
    report = check(spec)
    assert_no_errors(report)
    assert_warning(report, path, fragment)
