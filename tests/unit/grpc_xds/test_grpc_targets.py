"""Listener names a proxyless gRPC process asks for: client targets and server addresses."""

from __future__ import annotations

import pytest

from pilothouse.xds.generators.grpc_targets import (
    candidate_hosts,
    parse_server_listener_name,
    resolve_target,
    split_authority,
)
from tests.unit.grpc_xds.mesh import GREETER, Mesh, grpc_proxy

TWO_PORTS = """\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: billing, namespace: shop}
spec:
  hosts: [billing.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{name: grpc, number: 7070, protocol: GRPC}, {name: grpc-admin, number: 7071}]
  endpoints: [{address: 10.1.1.2}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: external, namespace: default}
spec:
  hosts: [api.example.com]
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{name: grpc, number: 443, protocol: GRPC}]
  endpoints: [{address: 10.1.1.1}]
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("greeter:50051", ("greeter", 50051)),
        ("greeter.default.svc.cluster.local:50051", ("greeter.default.svc.cluster.local", 50051)),
        ("greeter", ("greeter", None)),
        ("[::1]:50051", ("::1", 50051)),
        ("greeter:http", ("greeter:http", None)),
        ("greeter:0", ("greeter:0", None)),
        ("greeter:70000", ("greeter:70000", None)),
    ],
)
def test_split_authority(name: str, expected: tuple[str, int | None]) -> None:
    assert split_authority(name) == expected


def test_candidate_hosts_follow_kubernetes_short_names() -> None:
    suffix = "cluster.local"
    assert candidate_hosts("greeter", "default", suffix) == [
        "greeter",
        "greeter.default.svc.cluster.local",
    ]
    assert candidate_hosts("greeter.shop", "default", suffix)[1] == "greeter.shop.svc.cluster.local"
    assert candidate_hosts("greeter.shop.svc", "x", suffix)[1] == "greeter.shop.svc.cluster.local"
    assert candidate_hosts("api.example.com", "default", suffix) == ["api.example.com"]


GREETER_HOST = "greeter.default.svc.cluster.local"


@pytest.mark.parametrize(
    ("name", "namespace", "host", "port"),
    [
        (f"{GREETER_HOST}:50051", "default", GREETER_HOST, 50051),
        ("greeter:50051", "default", GREETER_HOST, 50051),
        ("greeter.default:50051", "shop", GREETER_HOST, 50051),
        ("greeter.default.svc:50051", "shop", GREETER_HOST, 50051),
        (GREETER_HOST, "default", GREETER_HOST, 50051),
        ("billing.shop:7071", "default", "billing.shop.svc.cluster.local", 7071),
        ("api.example.com:443", "default", "api.example.com", 443),
    ],
)
def test_targets_resolve_to_the_service_port(
    name: str, namespace: str, host: str, port: int
) -> None:
    mesh = Mesh(GREETER + TWO_PORTS)
    scope = mesh.given(None, grpc_proxy(namespace)).scope
    target = resolve_target(name, scope.by_hostname, scope.namespace, "cluster.local")
    assert target is not None
    assert (target.name, target.service.hostname, target.port.number) == (name, host, port)


@pytest.mark.parametrize(
    ("name", "namespace"),
    [
        ("greeter:50052", "default"),  # no such port
        ("greeter:50051", "shop"),  # a bare name means the proxy's own namespace
        ("billing.shop", "default"),  # two ports: the port must be given
        ("nothere:50051", "default"),
        (":50051", "default"),
    ],
)
def test_targets_that_resolve_to_nothing(name: str, namespace: str) -> None:
    mesh = Mesh(GREETER + TWO_PORTS)
    scope = mesh.given(None, grpc_proxy(namespace)).scope
    assert resolve_target(name, scope.by_hostname, scope.namespace, "cluster.local") is None


@pytest.mark.parametrize(
    ("name", "address", "port"),
    [
        ("xds.istio.io/grpc/lds/inbound/127.0.0.1:8080", "127.0.0.1", 8080),
        ("xds.istio.io/grpc/lds/inbound/0.0.0.0:50051", "0.0.0.0", 50051),
        ("xds.istio.io/grpc/lds/inbound/[::]:50051", "::", 50051),
        ("grpc/server?xds.resource.listening_address=10.0.0.5:9000", "10.0.0.5", 9000),
    ],
)
def test_server_listener_names(name: str, address: str, port: int) -> None:
    server = parse_server_listener_name(name)
    assert server is not None
    assert (server.name, server.address, server.port) == (name, address, port)


@pytest.mark.parametrize(
    "name",
    [
        "greeter:50051",
        "xds.istio.io/grpc/lds/inbound/127.0.0.1",
        "xds.istio.io/grpc/lds/inbound/greeter:50051",
        "xds.istio.io/grpc/lds/outbound/127.0.0.1:80",
    ],
)
def test_names_that_are_not_server_listeners(name: str) -> None:
    assert parse_server_listener_name(name) is None
