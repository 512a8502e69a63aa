"""Auto-mTLS: transport socket matches on clusters, the tlsMode mark on endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2
from google.protobuf import json_format

from pilothouse.xds.builders.cluster import ClusterInputs, Discovery, build_cluster
from pilothouse.xds.builders.endpoint import LbEndpointInput, build_lb_endpoint
from tests.unit.xds_builders.policies import policy

NAME = "outbound|9080|v1|reviews.shop.svc.cluster.local"
SIDECAR_LABELS = (("app", "reviews"), ("security.istio.io/tlsMode", "istio"))


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def upstream(socket: Any) -> tls_pb2.UpstreamTlsContext:
    context = tls_pb2.UpstreamTlsContext()
    assert socket.typed_config.Unpack(context)
    return context


@pytest.mark.parametrize(("protocol", "alpn"), [("HTTP", ["istio"]), ("GRPC", ["istio", "h2"])])
def test_auto_mtls_cluster_takes_istio_mtls_for_sidecars_and_plaintext_otherwise(
    protocol: str, alpn: list[str]
) -> None:
    cluster = build_cluster(ClusterInputs(name=NAME, protocol=protocol, auto_mtls=True))
    assert not cluster.HasField("transport_socket")
    istio, disabled = cluster.transport_socket_matches
    assert istio.name == "tlsMode-istio"
    assert as_dict(istio.match) == {"tlsMode": "istio"}
    assert istio.transport_socket.name == "envoy.transport_sockets.tls"
    context = upstream(istio.transport_socket)
    assert context.sni == "outbound_.9080_.v1_.reviews.shop.svc.cluster.local"
    common = context.common_tls_context
    assert list(common.alpn_protocols) == alpn
    assert [s.name for s in common.tls_certificate_sds_secret_configs] == ["default"]
    assert common.combined_validation_context.validation_context_sds_secret_config.name == "ROOTCA"
    assert disabled.name == "tlsMode-disabled"
    assert as_dict(disabled.match) == {}
    assert disabled.HasField("match")
    assert disabled.transport_socket.name == "envoy.transport_sockets.raw_buffer"


def test_without_auto_mtls_a_cluster_is_plaintext() -> None:
    cluster = build_cluster(ClusterInputs(name=NAME, protocol="HTTP"))
    assert not cluster.transport_socket_matches
    assert not cluster.HasField("transport_socket")


def test_destination_rule_disable_wins_over_auto_mtls() -> None:
    inputs = ClusterInputs(name=NAME, policy=policy({"tls": {"mode": "DISABLE"}}), auto_mtls=True)
    cluster = build_cluster(inputs)
    assert not cluster.transport_socket_matches
    assert not cluster.HasField("transport_socket")


def test_destination_rule_istio_mutual_forces_mtls_to_every_endpoint() -> None:
    inputs = ClusterInputs(
        name=NAME, policy=policy({"tls": {"mode": "ISTIO_MUTUAL"}}), auto_mtls=True
    )
    cluster = build_cluster(inputs)
    assert not cluster.transport_socket_matches
    assert upstream(cluster.transport_socket).common_tls_context.tls_certificate_sds_secret_configs


def test_destination_rule_without_tls_keeps_auto_mtls() -> None:
    inputs = ClusterInputs(
        name=NAME,
        policy=policy({"connectionPool": {"tcp": {"maxConnections": 10}}}),
        auto_mtls=True,
    )
    assert len(build_cluster(inputs).transport_socket_matches) == 2


def test_original_dst_clusters_get_no_auto_mtls() -> None:
    inputs = ClusterInputs(name=NAME, discovery=Discovery.ORIGINAL_DST, auto_mtls=True)
    assert not build_cluster(inputs).transport_socket_matches


def test_endpoints_of_sidecars_are_marked_for_the_istio_socket() -> None:
    marked = build_lb_endpoint(LbEndpointInput("10.0.0.1", 9080, labels=SIDECAR_LABELS))
    assert as_dict(marked.metadata)["filter_metadata"]["envoy.transport_socket_match"] == {
        "tlsMode": "istio"
    }
    for labels in ((("app", "reviews"),), (("security.istio.io/tlsMode", "disabled"),)):
        plain = build_lb_endpoint(LbEndpointInput("10.0.0.2", 9080, labels=labels))
        assert "envoy.transport_socket_match" not in plain.metadata.filter_metadata
