"""Which proxies get the gRPC flavour, and the server's generators choosing it per proxy."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.endpoint.v3 import endpoint_pb2
from envoy.config.listener.v3 import listener_pb2
from google.protobuf import any_pb2

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.proxy import parse_node
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.base import GenerationInput, Generator, Resources
from pilothouse.xds.generators.eds import EndpointGenerator
from pilothouse.xds.generators.grpc_flavour import ByFlavour, is_proxyless
from pilothouse.xds.server.discovery import DiscoveryServer
from tests.unit.grpc_xds.mesh import CLUSTER, FQDN_TARGET, GREETER, SUBSETS, V1, Mesh, grpc_proxy

NODE = "sidecar~10.0.0.9~client-1.default~default.svc.cluster.local"


def generator_for(server: DiscoveryServer, type_url: str) -> Generator:
    found = server.generator(type_url)
    assert found is not None, type_url
    return found


@pytest.mark.parametrize(
    ("metadata", "agent", "expected"),
    [
        ({"GENERATOR": "grpc"}, "", True),
        ({}, "gRPC C-core linux Python/C-core 58.0.0 Python 1.85.1", True),
        ({}, "gRPC Go/1.70.0", True),
        ({}, "envoy/1.40.0", False),
        ({}, "", False),
        ({"GENERATOR": "api"}, "gRPC C-core linux Python/1.85.1", False),
        ({"GENERATOR": "envoy"}, "", False),
    ],
)
def test_is_proxyless(metadata: dict[str, str], agent: str, expected: bool) -> None:
    assert is_proxyless(parse_node(NODE, metadata, user_agent=agent)) is expected


class Named:
    def __init__(self, type_url: str, label: str) -> None:
        self.type_url = type_url
        self.label = label

    def generate(self, given: GenerationInput) -> Resources:
        return {self.label: None}  # type: ignore[dict-item]


def test_by_flavour_hands_each_proxy_to_its_generator() -> None:
    chooser = ByFlavour(Named(CDS, "envoy"), Named(CDS, "grpc"))
    mesh = Mesh(GREETER)
    assert chooser.type_url == CDS
    assert set(chooser.generate(mesh.given(None))) == {"grpc"}
    envoy = parse_node(NODE, {"NAMESPACE": "default"})
    assert set(chooser.generate(mesh.given(None, envoy))) == {"envoy"}


def test_by_flavour_refuses_generators_of_different_types() -> None:
    with pytest.raises(ValueError, match="different types"):
        ByFlavour(Named(CDS, "a"), Named(LDS, "b"))


def test_discovery_server_serves_grpc_flavour_to_proxyless_clients() -> None:
    mesh = Mesh(GREETER)
    server = DiscoveryServer(MemoryStore("unused"))
    try:
        for type_url in (CDS, LDS, RDS):
            assert isinstance(server.generator(type_url), ByFlavour)
        listeners = generator_for(server, LDS).generate(mesh.given({FQDN_TARGET}))
        assert set(listeners) == {FQDN_TARGET}
        envoy = parse_node(NODE, {"NAMESPACE": "default"})
        by_envoy = generator_for(server, LDS).generate(mesh.given({FQDN_TARGET}, envoy))
        assert by_envoy == {}  # Envoy has no API listeners
    finally:
        server.close()


def unpack(resources: Resources, message: type[Any]) -> dict[str, Any]:
    out = {}
    for name, resource in resources.items():
        decoded = message()
        assert any_pb2.Any.FromString(resource.body).Unpack(decoded)
        out[name] = decoded
    return out


def test_endpoints_for_grpc_have_a_locality_and_a_positive_weight_everywhere() -> None:
    mesh = Mesh(GREETER + SUBSETS)
    found = unpack(
        EndpointGenerator().generate(mesh.given({CLUSTER, V1}, grpc_proxy())),
        endpoint_pb2.ClusterLoadAssignment,
    )
    assert set(found) == {CLUSTER, V1}
    localities = list(found[CLUSTER].endpoints)
    assert len(localities) == 2  # eu/a and the endpoint without a locality
    for group in [*localities, *found[V1].endpoints]:
        assert group.HasField("locality")
        assert group.load_balancing_weight.value > 0
    (v1_group,) = found[V1].endpoints
    assert [e.endpoint.address.socket_address.port_value for e in v1_group.lb_endpoints] == [9001]


def test_cluster_and_listener_types_decode() -> None:
    mesh = Mesh(GREETER)
    server = DiscoveryServer(MemoryStore("unused"))
    try:
        clusters = unpack(
            generator_for(server, CDS).generate(mesh.given({CLUSTER})),
            cluster_pb2.Cluster,
        )
        assert clusters[CLUSTER].lb_policy == cluster_pb2.Cluster.ROUND_ROBIN
        listeners = unpack(
            generator_for(server, LDS).generate(mesh.given({"greeter:50051"})),
            listener_pb2.Listener,
        )
        assert listeners["greeter:50051"].HasField("api_listener")
        assert server.generator(EDS) is not None
    finally:
        server.close()
