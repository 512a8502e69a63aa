"""ServiceEntry validation."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3.service_entry_pb2 import ServiceEntry
from pilothouse.config.validation import Report, validate_service_entry

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning, run

EXTERNAL_API: dict[str, Any] = {
    "hosts": ["api.example.com"],
    "location": "MESH_EXTERNAL",
    "ports": [
        {"number": 443, "name": "https", "protocol": "TLS"},
        {"number": 80, "name": "http", "protocol": "HTTP", "targetPort": 8080},
    ],
    "resolution": "DNS",
    "exportTo": ["."],
}


def check(spec: dict[str, Any], namespace: str = "default") -> Report:
    return run(validate_service_entry, ServiceEntry, spec, namespace=namespace)


def with_resolution(resolution: str, **fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "hosts": ["db.internal.example"],
        "ports": [{"number": 5432, "name": "tcp-postgres", "protocol": "TCP"}],
        "resolution": resolution,
    }
    spec.update(fields)
    return spec


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(EXTERNAL_API, id="dns-external"),
        pytest.param(
            {
                "hosts": ["payments.internal", "payments.internal."],
                "addresses": ["240.0.0.10"],
                "ports": [{"number": 8080, "name": "http", "protocol": "http"}],
                "location": "MESH_INTERNAL",
                "resolution": "STATIC",
                "endpoints": [
                    {"address": "10.1.0.5", "labels": {"version": "v1"}, "ports": {"http": 9080}},
                    {"address": "10.1.0.6", "network": "net-2", "locality": "us-east1/b"},
                ],
                "subjectAltNames": ["spiffe://cluster.local/ns/pay/sa/payments"],
            },
            id="static-endpoints",
        ),
        pytest.param(
            with_resolution("STATIC", workloadSelector={"labels": {"app": "postgres"}}),
            id="static-selector",
        ),
        pytest.param(
            {
                "hosts": ["local.socket"],
                "ports": [{"number": 80, "name": "http", "protocol": "HTTP"}],
                "resolution": "STATIC",
                "endpoints": [{"address": "unix:///var/run/app.sock"}],
            },
            id="static-unix-endpoint",
        ),
        pytest.param(
            with_resolution("NONE", addresses=["10.20.0.0/16"], exportTo=["~"]),
            id="none-cidr-private",
        ),
        pytest.param(
            with_resolution(
                "DNS",
                hosts=["*.db.example"],
                endpoints=[{"address": "db.example", "ports": {"tcp-postgres": 15432}}],
            ),
            id="dns-wildcard-with-endpoint",
        ),
        pytest.param(
            with_resolution("DNS_ROUND_ROBIN", endpoints=[{"address": "10.0.0.7"}]),
            id="dns-round-robin-one-endpoint",
        ),
        pytest.param(
            with_resolution(
                "DNS",
                hosts=["a.example", "b.example"],
                ports=[
                    {"number": 443, "name": "tls", "protocol": "TLS"},
                    {"number": 80, "name": "http", "protocol": "HTTP2"},
                ],
            ),
            id="several-hosts-http-and-tls",
        ),
        pytest.param(
            with_resolution("NONE", hosts=["a.example", "b.example"]),
            id="several-hosts-tcp-resolution-none",
        ),
        pytest.param(with_resolution("DNS", exportTo=["*"]), id="export-public"),
        pytest.param(with_resolution("DNS", exportTo=[".", "istio-system"]), id="export-some"),
    ],
)
def test_valid_service_entries(spec: dict[str, Any]) -> None:
    assert_clean(check(spec))


INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("no-hosts", {"ports": [{"number": 80, "name": "http"}]}, "spec.hosts", "at least one host"),
    ("bare-wildcard", with_resolution("NONE", hosts=["*"]), "spec.hosts[0]", "bare wildcard"),
    ("ip-host", with_resolution("NONE", hosts=["10.0.0.1"]), "spec.hosts[0]", "put IP addresses"),
    (
        "wildcard-inside-name",
        with_resolution("NONE", hosts=["foo.*.example.com"]),
        "spec.hosts[0]",
        "whole first label",
    ),
    (
        "partial-wildcard-bad-label",
        with_resolution("NONE", hosts=["*_x.example.com"]),
        "spec.hosts[0]",
        "whole first label",
    ),
    ("empty-label", with_resolution("NONE", hosts=["foo..com"]), "spec.hosts[0]", "DNS-1123"),
    (
        "host-too-long",
        with_resolution("NONE", hosts=["a." * 127 + "com"]),
        "spec.hosts[0]",
        "too long",
    ),
    (
        "bad-address",
        with_resolution("STATIC", addresses=["10.0.0.300"], endpoints=[{"address": "10.0.0.1"}]),
        "spec.addresses[0]",
        "not a valid IP address or CIDR",
    ),
    (
        "bad-cidr",
        with_resolution("NONE", addresses=["10.0.0.0/33"]),
        "spec.addresses[0]",
        "not a valid CIDR block",
    ),
    (
        "cidr-with-dns",
        with_resolution("DNS", addresses=["10.0.0.0/8"]),
        "spec.addresses",
        "CIDR addresses need resolution NONE or STATIC",
    ),
    (
        "port-zero",
        with_resolution("NONE", ports=[{"number": 0, "name": "tcp"}]),
        "spec.ports[0].number",
        "must be in 1..65535",
    ),
    (
        "port-too-big",
        with_resolution("NONE", ports=[{"number": 70000, "name": "tcp"}]),
        "spec.ports[0].number",
        "70000 must be in 1..65535",
    ),
    (
        "duplicate-port-number",
        with_resolution("NONE", ports=[{"number": 80, "name": "a"}, {"number": 80, "name": "b"}]),
        "spec.ports[1].number",
        "already used by ports[0]",
    ),
    (
        "duplicate-port-name",
        with_resolution(
            "NONE", ports=[{"number": 80, "name": "web"}, {"number": 81, "name": "web"}]
        ),
        "spec.ports[1].name",
        "'web' is already used by ports[0]",
    ),
    (
        "port-name-missing",
        with_resolution("NONE", ports=[{"number": 80, "protocol": "HTTP"}]),
        "spec.ports[0].name",
        "port name is required",
    ),
    (
        "port-name-invalid",
        with_resolution("NONE", ports=[{"number": 80, "name": "http_web"}]),
        "spec.ports[0].name",
        "not a DNS-1123 label",
    ),
    (
        "unknown-protocol",
        with_resolution("NONE", ports=[{"number": 80, "name": "web", "protocol": "SPDY"}]),
        "spec.ports[0].protocol",
        "unknown protocol 'SPDY'",
    ),
    (
        "target-port-out-of-range",
        with_resolution("DNS", ports=[{"number": 80, "name": "web", "targetPort": 70000}]),
        "spec.ports[0].targetPort",
        "must be in 1..65535",
    ),
    (
        "selector-and-endpoints",
        with_resolution(
            "STATIC",
            workloadSelector={"labels": {"app": "db"}},
            endpoints=[{"address": "10.0.0.1"}],
        ),
        "spec.workloadSelector",
        "mutually exclusive",
    ),
    (
        "none-with-endpoints",
        with_resolution("NONE", endpoints=[{"address": "10.0.0.1"}]),
        "spec.endpoints",
        "resolution NONE takes no endpoints",
    ),
    (
        "static-without-endpoints",
        with_resolution("STATIC"),
        "spec.endpoints",
        "needs endpoints or a workloadSelector",
    ),
    (
        "static-hostname-endpoint",
        with_resolution("STATIC", endpoints=[{"address": "db.example.com"}]),
        "spec.endpoints[0].address",
        "is not an IP address",
    ),
    (
        "dns-wildcard-without-endpoints",
        with_resolution("DNS", hosts=["*.example.com"]),
        "spec.hosts[0]",
        "cannot be wildcards",
    ),
    (
        "dns-round-robin-two-endpoints",
        with_resolution(
            "DNS_ROUND_ROBIN", endpoints=[{"address": "a.example"}, {"address": "b.example"}]
        ),
        "spec.endpoints",
        "at most one endpoint",
    ),
    (
        "dns-bad-endpoint-address",
        with_resolution("DNS", endpoints=[{"address": "bad_host"}]),
        "spec.endpoints[0].address",
        "not an IP address or FQDN",
    ),
    (
        "dns-unix-endpoint",
        with_resolution("DNS", endpoints=[{"address": "unix:///var/run/a.sock"}]),
        "spec.endpoints[0].address",
        "need resolution STATIC",
    ),
    (
        "endpoint-port-undeclared",
        with_resolution("STATIC", endpoints=[{"address": "10.0.0.1", "ports": {"grpc": 9000}}]),
        "spec.endpoints[0].ports[grpc]",
        "not declared in the ServiceEntry ports",
    ),
    (
        "endpoint-port-out-of-range",
        with_resolution(
            "STATIC", endpoints=[{"address": "10.0.0.1", "ports": {"tcp-postgres": 0}}]
        ),
        "spec.endpoints[0].ports[tcp-postgres]",
        "must be in 1..65535",
    ),
    (
        "endpoint-label-value",
        with_resolution(
            "STATIC", endpoints=[{"address": "10.0.0.1", "labels": {"version": "v 1"}}]
        ),
        "spec.endpoints[0].labels[version]",
        "label value 'v 1' is invalid",
    ),
    (
        "endpoint-label-key",
        with_resolution("STATIC", endpoints=[{"address": "10.0.0.1", "labels": {"-app": "x"}}]),
        "spec.endpoints[0].labels[-app]",
        "label key '-app' is invalid",
    ),
    (
        "endpoint-without-address",
        with_resolution("STATIC", endpoints=[{"labels": {"app": "x"}}]),
        "spec.endpoints[0].address",
        "address is required",
    ),
    (
        "unix-endpoint-several-ports",
        with_resolution(
            "STATIC",
            ports=[{"number": 80, "name": "a"}, {"number": 81, "name": "b"}],
            endpoints=[{"address": "unix:///var/run/a.sock"}],
        ),
        "spec.endpoints[0].address",
        "exactly one port",
    ),
    (
        "unix-endpoint-relative",
        with_resolution("STATIC", endpoints=[{"address": "unix://a.sock"}]),
        "spec.endpoints[0].address",
        "not an absolute path",
    ),
    (
        "export-public-and-private",
        with_resolution("DNS", exportTo=["*", "."]),
        "spec.exportTo",
        "cannot be combined",
    ),
    (
        "export-invalid-namespace",
        with_resolution("DNS", exportTo=["Bad_NS"]),
        "spec.exportTo[0]",
        "is not '.', '*', '~' or a namespace name",
    ),
    (
        "export-duplicate",
        with_resolution("DNS", exportTo=["prod", "prod"]),
        "spec.exportTo[1]",
        "duplicate exportTo entry 'prod'",
    ),
    (
        "export-dot-and-own-namespace",
        with_resolution("DNS", exportTo=[".", "default"]),
        "spec.exportTo[1]",
        "name the same namespace",
    ),
    (
        "export-none-and-other",
        with_resolution("DNS", exportTo=["~", "prod"]),
        "spec.exportTo",
        "'~' exports to no namespace",
    ),
    (
        "empty-subject-alt-name",
        with_resolution("DNS", subjectAltNames=["spiffe://td/ns/a/sa/b", ""]),
        "spec.subjectAltNames[1]",
        "must not be empty",
    ),
    (
        "several-hosts-tcp",
        with_resolution("DNS", hosts=["a.example", "b.example"]),
        "spec.ports[0].protocol",
        "several hosts",
    ),
    (
        "selector-wildcard",
        with_resolution("STATIC", workloadSelector={"labels": {"app": "*"}}),
        "spec.workloadSelector.labels[app]",
        "wildcards are not supported",
    ),
    (
        "unknown-resolution",
        with_resolution(9),  # type: ignore[arg-type]
        "spec.resolution",
        "unknown Resolution value 9",
    ),
    (
        "dynamic-dns-endpoints",
        with_resolution("DYNAMIC_DNS", endpoints=[{"address": "10.0.0.1"}]),
        "spec.endpoints",
        "DYNAMIC_DNS takes no endpoints",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_service_entries(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [
        (
            with_resolution("NONE", workloadSelector={"labels": {"app": "db"}}),
            "spec.workloadSelector",
            "no effect with resolution NONE",
        ),
        (
            with_resolution("DNS", workloadSelector={"labels": {"app": "db"}}),
            "spec.workloadSelector",
            "no effect with resolution DNS",
        ),
        (
            with_resolution("NONE", ports=[{"number": 80, "name": "a", "targetPort": 8080}]),
            "spec.ports[0].targetPort",
            "no effect with resolution NONE",
        ),
        (
            with_resolution("STATIC", endpoints=[{"network": "net-3", "weight": 3}]),
            "spec.endpoints[0].address",
            "gateway of network 'net-3'",
        ),
        (
            with_resolution("STATIC", workloadSelector={}),
            "spec.workloadSelector.labels",
            "selects every workload",
        ),
        # Istio accepts a first label of '*' glued to a DNS label (``*x``, ``*-x``)
        (with_resolution("NONE", hosts=["*x"]), "spec.hosts[0]", "partial wildcard host '*x'"),
        (
            with_resolution("NONE", hosts=["*foo.example.com"]),
            "spec.hosts[0]",
            "partial wildcard host",
        ),
        (
            with_resolution("NONE", hosts=["*-foo.example.com"]),
            "spec.hosts[0]",
            "partial wildcard host",
        ),
    ],
)
def test_service_entry_warnings(spec: dict[str, Any], path: str, fragment: str) -> None:
    report = check(spec)
    assert_no_errors(report)
    assert_warning(report, path, fragment)


def test_own_namespace_in_export_to_uses_report_namespace() -> None:
    assert_clean(check(with_resolution("DNS", exportTo=[".", "default"]), namespace="other"))
