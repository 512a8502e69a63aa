"""WorkloadEntry and WorkloadGroup validation."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3.workload_entry_pb2 import WorkloadEntry
from pilothouse.api.istio.networking.v1alpha3.workload_group_pb2 import WorkloadGroup
from pilothouse.config.validation import validate_workload_entry, validate_workload_group

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning, run

VM_ENTRY: dict[str, Any] = {
    "address": "10.128.0.12",
    "ports": {"http": 8080, "grpc-admin": 9090},
    "labels": {"app": "ratings", "version": "v1", "topology.istio.io/network": "vm-net"},
    "network": "vm-net",
    "locality": "us-central1/us-central1-a",
    "weight": 10,
    "serviceAccount": "ratings-sa",
}

VM_GROUP: dict[str, Any] = {
    "metadata": {"labels": {"app": "ratings"}, "annotations": {"owner": "team-a"}},
    "template": {
        "ports": {"http": 8080},
        "serviceAccount": "ratings-sa",
        "network": "vm-net",
        "labels": {"class": "vm"},
    },
    "probe": {
        "initialDelaySeconds": 5,
        "timeoutSeconds": 3,
        "periodSeconds": 4,
        "successThreshold": 3,
        "failureThreshold": 3,
        "httpGet": {
            "path": "/ready",
            "port": 8080,
            "scheme": "HTTPS",
            "httpHeaders": [{"name": "x-probe", "value": "1"}],
        },
    },
}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(VM_ENTRY, id="vm"),
        pytest.param({"address": "2001:db8::12"}, id="ipv6"),
        pytest.param({"address": "vm-1.corp.example.com", "ports": {"http": 80}}, id="hostname"),
        pytest.param({"address": "unix:///var/run/ratings.sock"}, id="unix-socket"),
        pytest.param({"address": "unix://@ratings"}, id="abstract-socket"),
    ],
)
def test_valid_workload_entries(spec: dict[str, Any]) -> None:
    assert_clean(run(validate_workload_entry, WorkloadEntry, spec))


WORKLOAD_ENTRY_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("no-address", {"labels": {"app": "x"}}, "spec.address", "address is required"),
    ("bad-address", {"address": "foo_bar"}, "spec.address", "not an IP address or FQDN"),
    ("wildcard-address", {"address": "*.example.com"}, "spec.address", "not an IP address"),
    (
        "relative-socket",
        {"address": "unix://var/run/a.sock"},
        "spec.address",
        "not an absolute path",
    ),
    (
        "socket-with-ports",
        {"address": "unix:///var/run/a.sock", "ports": {"http": 80}},
        "spec.ports",
        "must not list ports",
    ),
    (
        "port-name",
        {"address": "10.0.0.1", "ports": {"Http_1": 80}},
        "spec.ports[Http_1]",
        "not a DNS-1123 label",
    ),
    (
        "port-number",
        {"address": "10.0.0.1", "ports": {"http": 0}},
        "spec.ports[http]",
        "must be in 1..65535",
    ),
    (
        "label-key",
        {"address": "10.0.0.1", "labels": {"bad key": "v"}},
        "spec.labels[bad key]",
        "label key 'bad key' is invalid",
    ),
    (
        "service-account",
        {"address": "10.0.0.1", "serviceAccount": "Ratings/SA"},
        "spec.serviceAccount",
        "not a valid Kubernetes name",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [case[1:] for case in WORKLOAD_ENTRY_INVALID],
    ids=[case[0] for case in WORKLOAD_ENTRY_INVALID],
)
def test_invalid_workload_entries(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(run(validate_workload_entry, WorkloadEntry, spec), path, fragment)


def test_network_without_address_is_a_warning() -> None:
    report = run(validate_workload_entry, WorkloadEntry, {"network": "remote"})
    assert_no_errors(report)
    assert_warning(report, "spec.address", "gateway of network 'remote'")


@pytest.mark.parametrize(
    "probe",
    [
        pytest.param(VM_GROUP["probe"], id="http-get"),
        pytest.param({"tcpSocket": {"port": 3306}}, id="tcp"),
        pytest.param({"exec": {"command": ["cat", "/tmp/healthy"]}}, id="exec"),
        pytest.param({"grpc": {"port": 9090, "service": "health"}}, id="grpc"),
    ],
)
def test_valid_workload_groups(probe: dict[str, Any]) -> None:
    spec = {**VM_GROUP, "probe": probe}
    assert_clean(run(validate_workload_group, WorkloadGroup, spec))


def test_workload_group_without_probe_is_valid() -> None:
    spec = {"template": {"serviceAccount": "default"}}
    assert_clean(run(validate_workload_group, WorkloadGroup, spec))


WORKLOAD_GROUP_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "no-template",
        {"metadata": {"labels": {"app": "x"}}},
        "spec.template",
        "template is required",
    ),
    (
        "metadata-label",
        {"metadata": {"labels": {"app": "-x"}}, "template": {}},
        "spec.metadata.labels[app]",
        "label value '-x' is invalid",
    ),
    (
        "template-port",
        {"template": {"ports": {"http": 70000}}},
        "spec.template.ports[http]",
        "must be in 1..65535",
    ),
    (
        "template-label",
        {"template": {"labels": {"a/b/c": "x"}}},
        "spec.template.labels[a/b/c]",
        "invalid prefix",
    ),
    (
        "negative-period",
        {"template": {}, "probe": {"periodSeconds": -1, "tcpSocket": {"port": 80}}},
        "spec.probe.periodSeconds",
        "must not be negative",
    ),
    (
        "negative-failure-threshold",
        {"template": {}, "probe": {"failureThreshold": -3, "tcpSocket": {"port": 80}}},
        "spec.probe.failureThreshold",
        "must not be negative",
    ),
    (
        "no-method",
        {"template": {}, "probe": {"periodSeconds": 5}},
        "spec.probe",
        "one health check method",
    ),
    (
        "http-get-port",
        {"template": {}, "probe": {"httpGet": {"path": "/", "port": 0}}},
        "spec.probe.httpGet.port",
        "must be in 1..65535",
    ),
    (
        "http-get-scheme",
        {"template": {}, "probe": {"httpGet": {"port": 80, "scheme": "ftp"}}},
        "spec.probe.httpGet.scheme",
        "must be HTTP or HTTPS",
    ),
    (
        "http-get-header",
        {
            "template": {},
            "probe": {"httpGet": {"port": 80, "httpHeaders": [{"name": "x probe", "value": "1"}]}},
        },
        "spec.probe.httpGet.httpHeaders[0].name",
        "may contain only letters",
    ),
    (
        "tcp-port",
        {"template": {}, "probe": {"tcpSocket": {"port": 70000}}},
        "spec.probe.tcpSocket.port",
        "must be in 1..65535",
    ),
    (
        "exec-command",
        {"template": {}, "probe": {"exec": {}}},
        "spec.probe.exec.command",
        "needs a command",
    ),
    (
        "grpc-port",
        {"template": {}, "probe": {"grpc": {"port": 0}}},
        "spec.probe.grpc.port",
        "must be in 1..65535",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [case[1:] for case in WORKLOAD_GROUP_INVALID],
    ids=[case[0] for case in WORKLOAD_GROUP_INVALID],
)
def test_invalid_workload_groups(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(run(validate_workload_group, WorkloadGroup, spec), path, fragment)


def test_template_address_is_ignored_with_a_warning() -> None:
    spec = {"template": {"address": "10.0.0.1", "ports": {"http": 80}}}
    report = run(validate_workload_group, WorkloadGroup, spec)
    assert_no_errors(report)
    assert_warning(report, "spec.template.address", "each registering workload")
