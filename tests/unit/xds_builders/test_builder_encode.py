"""to_any_bytes and content_hash."""

from __future__ import annotations

from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.endpoint.v3 import endpoint_pb2
from envoy.service.discovery.v3 import discovery_pb2
from google.protobuf import any_pb2
from google.protobuf.internal.encoder import _VarintBytes
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.xds.builders.cluster import ClusterInputs, build_cluster
from pilothouse.xds.builders.encode import content_hash, to_any_bytes, type_url
from pilothouse.xds.builders.endpoint import LbEndpointInput, build_load_assignment
from tests.unit.xds_builders.policies import policy


def packed(message: object) -> bytes:
    wrapper = any_pb2.Any()
    wrapper.Pack(message, deterministic=True)
    return wrapper.SerializeToString(deterministic=True)


def test_builder_any_bytes_equal_packed_any() -> None:
    cluster = build_cluster(
        ClusterInputs(
            name="outbound|80||a.example",
            protocol="GRPC",
            policy=policy({"tls": {"mode": "ISTIO_MUTUAL"}, "loadBalancer": {"simple": "RANDOM"}}),
        )
    )
    data = to_any_bytes(cluster)
    assert data == packed(cluster)
    decoded = any_pb2.Any.FromString(data)
    assert decoded.type_url == "type.googleapis.com/envoy.config.cluster.v3.Cluster"
    assert type_url(cluster) == decoded.type_url
    out = cluster_pb2.Cluster()
    assert decoded.Unpack(out)
    assert out == cluster


def test_builder_any_bytes_of_empty_message() -> None:
    empty = endpoint_pb2.ClusterLoadAssignment()
    assert to_any_bytes(empty) == packed(empty)


@settings(max_examples=100, deadline=None)
@given(
    name=st.text(max_size=300),
    addresses=st.lists(st.sampled_from(["10.0.0.1", "10.0.0.2", "h.example"]), max_size=40),
)
def test_builder_any_bytes_long_and_short_lengths(name: str, addresses: list[str]) -> None:
    # Long payloads exercise multi-byte varint lengths.
    message = build_load_assignment(name, [LbEndpointInput(a, 80) for a in addresses])
    assert to_any_bytes(message) == packed(message)


def test_builder_any_bytes_concatenate_into_a_response() -> None:
    clusters = [build_cluster(ClusterInputs(name=f"outbound|{p}||svc")) for p in (80, 81)]
    body = b"".join(
        b"\x12" + _VarintBytes(len(data)) + data for data in (to_any_bytes(c) for c in clusters)
    )
    response = discovery_pb2.DiscoveryResponse.FromString(body)
    assert [r.type_url for r in response.resources] == [type_url(clusters[0])] * 2
    unpacked = [cluster_pb2.Cluster() for _ in clusters]
    for resource, target in zip(response.resources, unpacked, strict=True):
        resource.Unpack(target)
    assert unpacked == clusters


def test_builder_content_hash() -> None:
    first = content_hash(b"cluster-a")
    assert first == content_hash(b"cluster-a")
    assert first != content_hash(b"cluster-b")
    assert len(first) == 16
    assert int(first, 16) >= 0
    # Versions must survive restarts and upgrades: pin the algorithm (BLAKE2b, 64-bit
    # digest) with its known value for empty input.
    assert content_hash(b"") == "e4a6a0577479b2b4"
