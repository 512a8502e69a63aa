"""A FILTER_CHAIN or CLUSTER MERGE whose transport socket ``typed_config`` is of another
type than the generated one cannot be merged: that patch is skipped with a warning and
the rest of the pass goes on (before, the error escaped and failed the generation)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.xds.builders.envoy_patch_cluster import patch_clusters
from pilothouse.xds.builders.envoy_patch_listener import patch_listeners
from pilothouse.xds.builders.envoy_patch_match import Applied
from pilothouse.xds.builders.listener_sidecar import build_outbound_listener

from .patching import rules

OUTBOUND = EnvoyFilter.SIDECAR_OUTBOUND
TLS_SOCKET = "envoy.transport_sockets.tls"
UPSTREAM = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
DOWNSTREAM = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"


def socket_patch(apply_to: str, type_url: str, match: dict[str, Any]) -> dict[str, Any]:
    return {
        "applyTo": apply_to,
        "match": match,
        "patch": {
            "operation": "MERGE",
            "value": {
                "transport_socket": {"name": TLS_SOCKET, "typed_config": {"@type": type_url}}
            },
        },
    }


def test_a_filter_chain_socket_of_another_type_is_skipped_and_the_pass_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    listener = build_outbound_listener("0.0.0.0", 8080, "HTTP", capture_none=False)
    for chain in listener.filter_chains:
        chain.transport_socket.name = TLS_SOCKET
        chain.transport_socket.typed_config.Pack(tls_pb2.DownstreamTlsContext())
    rename = {
        "applyTo": "FILTER_CHAIN",
        "patch": {"operation": "MERGE", "value": {"name": "renamed"}},
    }
    applied: Applied = set()
    with caplog.at_level(logging.WARNING, "pilothouse.xds"):
        (patched,) = patch_listeners(
            [listener],
            rules(socket_patch("FILTER_CHAIN", UPSTREAM, {}), rename),
            OUTBOUND,
            applied,
        )
    assert all(c.name == "renamed" for c in patched.filter_chains)  # the next patch ran
    assert all(
        c.transport_socket.typed_config.type_url == DOWNSTREAM for c in patched.filter_chains
    )
    assert {position for _, position in applied} == {1}
    assert any(r.getMessage() == "EnvoyFilter merge skipped" for r in caplog.records)


def test_a_cluster_socket_of_another_type_is_skipped() -> None:
    cluster = cluster_pb2.Cluster(name="outbound|5432||db.shop.svc.cluster.local")
    cluster.transport_socket.name = TLS_SOCKET
    cluster.transport_socket.typed_config.Pack(tls_pb2.UpstreamTlsContext(sni="db"))
    applied: Applied = set()
    (patched,) = patch_clusters(
        [cluster],
        rules(
            socket_patch("CLUSTER", DOWNSTREAM, {"cluster": {"name": cluster.name}}),
            {
                "applyTo": "CLUSTER",
                "patch": {"operation": "MERGE", "value": {"alt_stat_name": "x"}},
            },
        ),
        OUTBOUND,
        applied,
    )
    assert patched.transport_socket.typed_config.type_url == UPSTREAM
    assert patched.alt_stat_name == "x"
    assert {position for _, position in applied} == {1}
