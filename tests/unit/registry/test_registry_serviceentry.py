"""ServiceEntry / WorkloadEntry conversion into services and endpoints, field by field."""

from __future__ import annotations

import datetime

import pytest

from pilothouse.config.model import ConfigKey
from pilothouse.registry.model import (
    Endpoint,
    Labels,
    Location,
    Resolution,
    ServiceKey,
    ServicePort,
)
from pilothouse.registry.serviceentry import (
    inline_endpoints,
    selects,
    services_of,
    workload_endpoints,
    workload_of,
)

from .registry_configs import load_one, service_entry, workload_entry

SE_KEY = ConfigKey("ServiceEntry", "shop", "payments")

FULL_SE = """
  hosts: [pay.example.com, pay2.example.com]
  addresses: [10.0.0.1, 10.0.0.2]
  ports:
  - {number: 80, name: http, protocol: http, targetPort: 8080}
  - {number: 443, name: https, protocol: HTTPS}
  - {number: 9000, name: grpc, protocol: GRPC}
  location: MESH_INTERNAL
  resolution: STATIC
  exportTo: [".", "other"]
  subjectAltNames: ["spiffe://cluster.local/ns/shop/sa/pay"]
  endpoints:
  - address: 1.1.1.1
    ports: {https: 8443}
    labels: {app: pay, version: v1}
    locality: us-east1/us-east1-b/rack1
    weight: 7
    network: net-a
    serviceAccount: pay
  - address: 1.1.1.2
"""


def test_registry_service_fields() -> None:
    config = service_entry("payments", FULL_SE, namespace="shop")
    services = services_of(config)
    assert [s.hostname for s in services] == ["pay.example.com", "pay2.example.com"]
    service = services[0]
    assert service.key == ServiceKey("pay.example.com", "shop")
    assert service.namespace == "shop"
    assert service.ports == (
        ServicePort("http", 80, "HTTP", 8080),
        ServicePort("https", 443, "HTTPS", 0),
        ServicePort("grpc", 9000, "GRPC", 0),
    )
    assert service.resolution is Resolution.STATIC
    assert service.location is Location.MESH_INTERNAL
    assert service.addresses == ("10.0.0.1", "10.0.0.2")
    assert service.export_to == frozenset({"shop", "other"})
    assert service.subject_alt_names == ("spiffe://cluster.local/ns/shop/sa/pay",)
    assert service.source == SE_KEY
    assert service.workload_selector is None
    assert service.port_by_number(443) == ServicePort("https", 443, "HTTPS", 0)
    assert service.port_by_name("grpc") == ServicePort("grpc", 9000, "GRPC", 0)
    assert service.port_by_number(81) is None
    assert service.port_by_name("nope") is None
    # Both hosts share everything but the hostname.
    assert services[1].ports == service.ports
    assert services[1].key == ServiceKey("pay2.example.com", "shop")


def test_registry_service_defaults() -> None:
    config = service_entry("ext", "  hosts: [ext.example.com]\n  ports: [{number: 80, name: http}]")
    (service,) = services_of(config)
    assert service.resolution is Resolution.NONE
    assert service.location is Location.MESH_EXTERNAL
    assert service.export_to == frozenset()
    assert service.ports == (ServicePort("http", 80, "", 0),)
    assert service.addresses == ()
    assert inline_endpoints(config) == {}


def test_registry_creation_time_carried() -> None:
    config = load_one(
        """
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: t, namespace: default, creationTimestamp: "2024-01-02T03:04:05Z"}
spec:
  hosts: [t.example.com]
  ports: [{number: 80, name: http}]
"""
    )
    (service,) = services_of(config)
    assert service.creation_time == datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def test_registry_inline_endpoint_fields_and_port_mapping() -> None:
    config = service_entry("payments", FULL_SE, namespace="shop")
    endpoints = inline_endpoints(config)
    assert set(endpoints) == {
        ServiceKey("pay.example.com", "shop"),
        ServiceKey("pay2.example.com", "shop"),
    }
    by_port = {
        (e.address, e.service_port_name): e
        for e in endpoints[ServiceKey("pay.example.com", "shop")]
    }
    assert len(by_port) == 6  # 2 endpoints x 3 ports
    # Endpoint's own port map wins; else the target port; else the service port.
    assert by_port[("1.1.1.1", "https")].port == 8443
    assert by_port[("1.1.1.1", "http")].port == 8080
    assert by_port[("1.1.1.1", "grpc")].port == 9000
    assert by_port[("1.1.1.2", "https")].port == 443
    first = by_port[("1.1.1.1", "http")]
    assert first == Endpoint(
        address="1.1.1.1",
        port=8080,
        service_port_name="http",
        source=SE_KEY,
        labels=Labels.of({"app": "pay", "version": "v1"}),
        locality="us-east1/us-east1-b/rack1",
        weight=7,
        network="net-a",
        service_account="pay",
    )
    bare = by_port[("1.1.1.2", "http")]
    assert bare.weight == 1  # 0 = unset = 1
    assert bare.labels == Labels()
    assert (bare.locality, bare.network, bare.service_account) == ("", "", "")
    # Every host gets every inline endpoint.
    assert {(e.address, e.port) for e in endpoints[ServiceKey("pay2.example.com", "shop")]} == {
        (e.address, e.port) for e in by_port.values()
    }


def test_registry_dns_without_endpoints_uses_the_host() -> None:
    config = service_entry(
        "ext",
        """
  hosts: [a.example.com, b.example.com]
  ports:
  - {number: 443, name: https, protocol: TLS, targetPort: 8443}
  - {number: 80, name: http, protocol: HTTP}
  resolution: DNS
""",
    )
    endpoints = inline_endpoints(config)
    for host in ("a.example.com", "b.example.com"):
        got = endpoints[ServiceKey(host, "default")]
        assert {(e.address, e.port, e.service_port_name, e.weight) for e in got} == {
            (host, 8443, "https", 1),
            (host, 80, "http", 1),
        }


def test_registry_dns_with_endpoints_uses_them() -> None:
    config = service_entry(
        "ext",
        """
  hosts: [a.example.com]
  ports: [{number: 80, name: http}]
  resolution: DNS
  endpoints: [{address: backend.example.org}]
""",
    )
    (got,) = inline_endpoints(config).values()
    assert [(e.address, e.port) for e in got] == [("backend.example.org", 80)]


@pytest.mark.parametrize("resolution", ["NONE", "DYNAMIC_DNS"])
def test_registry_no_host_endpoint_without_dns(resolution: str) -> None:
    config = service_entry(
        "ext",
        f"  hosts: [a.example.com]\n  ports: [{{number: 80, name: http}}]\n"
        f"  resolution: {resolution}",
    )
    assert inline_endpoints(config) == {}


def test_registry_unix_socket_endpoint_has_port_zero() -> None:
    config = service_entry(
        "uds",
        """
  hosts: [uds.example.com]
  ports: [{number: 80, name: http}]
  resolution: STATIC
  endpoints: [{address: "unix:///var/run/app.sock"}]
""",
    )
    (got,) = inline_endpoints(config).values()
    assert [(e.address, e.port) for e in got] == [("unix:///var/run/app.sock", 0)]


def test_registry_workload_entry_conversion_and_selection() -> None:
    se = service_entry(
        "api",
        """
  hosts: [api.internal]
  ports: [{number: 80, name: http, targetPort: 8080}, {number: 81, name: admin}]
  resolution: STATIC
  workloadSelector: {labels: {app: api}}
""",
        namespace="prod",
    )
    we = workload_entry(
        "vm1",
        """
  address: 2.2.2.2
  ports: {admin: 9001}
  labels: {app: api, track: stable}
  locality: eu/west
  weight: 3
  network: vpc-1
  serviceAccount: api-sa
""",
        namespace="prod",
        labels="{track: canary}",
    )
    (service,) = services_of(se)
    assert service.workload_selector == Labels.of({"app": "api"})
    workload = workload_of(we)
    # Metadata labels win over spec labels.
    assert workload.labels == Labels.of({"app": "api", "track": "canary"})
    assert selects(service, workload)
    got = {e.service_port_name: e for e in workload_endpoints(workload, service)}
    assert got["http"].port == 8080
    assert got["admin"].port == 9001
    assert got["http"] == Endpoint(
        address="2.2.2.2",
        port=8080,
        service_port_name="http",
        source=ConfigKey("WorkloadEntry", "prod", "vm1"),
        labels=Labels.of({"app": "api", "track": "canary"}),
        locality="eu/west",
        weight=3,
        network="vpc-1",
        service_account="api-sa",
    )
    # A selector with an inline endpoint list has no inline endpoints and no host endpoint.
    assert inline_endpoints(se) == {}


def test_registry_selection_needs_same_namespace_and_all_labels() -> None:
    se = service_entry(
        "api",
        """
  hosts: [api.internal]
  ports: [{number: 80, name: http}]
  resolution: STATIC
  workloadSelector: {labels: {app: api, tier: web}}
""",
        namespace="prod",
    )
    (service,) = services_of(se)
    match = workload_of(
        workload_entry("a", "  address: 1.0.0.1\n  labels: {app: api, tier: web, x: y}", "prod")
    )
    partial = workload_of(workload_entry("b", "  address: 1.0.0.2\n  labels: {app: api}", "prod"))
    elsewhere = workload_of(
        workload_entry("c", "  address: 1.0.0.3\n  labels: {app: api, tier: web}", "dev")
    )
    assert selects(service, match)
    assert not selects(service, partial)
    assert not selects(service, elsewhere)


def test_registry_duplicate_hosts_give_one_service() -> None:
    config = service_entry(
        "dup", "  hosts: [a.example.com, a.example.com]\n  ports: [{number: 80, name: http}]"
    )
    assert [s.hostname for s in services_of(config)] == ["a.example.com"]
