"""The replica identity: its JSON, its name, and the encoded field on every response."""

from __future__ import annotations

import json

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse import __version__
from pilothouse.protocol.type_urls import CDS
from pilothouse.push.cache import Resource
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.protocol.wire import control_plane_field, delta_response, sotw_response
from pilothouse.xds.server.control_plane import (
    ControlPlaneIdentity,
    parse_identifier,
    replica_name,
)


def cluster(name: str) -> Resource:
    body = to_any_bytes(cluster_pb2.Cluster(name=name))
    return Resource(name, content_hash(body), body)


def test_identifier_is_istiods_shape_with_our_component() -> None:
    identity = ControlPlaneIdentity("vm:15010")
    assert json.loads(identity.identifier) == {
        "Component": "pilothouse",
        "ID": "vm:15010",
        "Info": {"version": __version__},
    }


def test_replica_name_is_the_setting_else_host_and_port() -> None:
    assert replica_name("pilothouse-0", 15010, "vm") == "pilothouse-0"
    assert replica_name("", 15010, "vm") == "vm:15010"


def test_parse_identifier_reads_ours_and_istiods_and_keeps_anything_else() -> None:
    assert parse_identifier(ControlPlaneIdentity("a:1").identifier) == "a:1"
    istiod = '{"Component":"istiod","ID":"istiod-5d8f7-abcde","Info":{"version":"1.28.0"}}'
    assert parse_identifier(istiod) == "istiod-5d8f7-abcde"
    assert parse_identifier("go-control-plane") == "go-control-plane"
    assert parse_identifier('["x"]') == '["x"]'


def test_sotw_response_carries_the_field_exactly_as_protobuf_writes_it() -> None:
    identity = ControlPlaneIdentity("vm:15010")
    resources = [cluster("a"), cluster("b")]
    data = sotw_response("v1", CDS, "n-1", [r.body for r in resources], identity.encoded)
    expected = discovery_pb2.DiscoveryResponse(version_info="v1", type_url=CDS, nonce="n-1")
    for r in resources:
        expected.resources.append(any_pb2.Any.FromString(r.body))
    expected.control_plane.identifier = identity.identifier
    assert data == expected.SerializeToString()


def test_delta_response_carries_the_field() -> None:
    identity = ControlPlaneIdentity("vm:15010")
    data = delta_response("s", CDS, "n", [cluster("a")], ["gone"], identity.encoded)
    parsed = discovery_pb2.DeltaDiscoveryResponse.FromString(data)
    assert parsed.control_plane.identifier == identity.identifier
    assert list(parsed.removed_resources) == ["gone"] and parsed.resources[0].name == "a"


def test_an_empty_identifier_adds_nothing() -> None:
    field = control_plane_field("")
    assert field.sotw == b"" and field.delta == b""
    assert sotw_response("v", CDS, "n", [], field) == sotw_response("v", CDS, "n", [])
