"""build_cluster: discovery types, EDS config, inline endpoints, inputs as cache keys."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2
from envoy.extensions.upstreams.http.v3 import http_protocol_options_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.xds.builders.cluster import (
    ClusterInputs,
    Discovery,
    build_blackhole_cluster,
    build_cluster,
    build_passthrough_cluster,
)
from pilothouse.xds.builders.endpoint import LbEndpointInput
from pilothouse.xds.builders.upstream_protocol import HTTP_PROTOCOL_OPTIONS_KEY
from tests.unit.xds_builders.policies import policy

Cluster = cluster_pb2.Cluster
NAME = "outbound|9080||reviews.default.svc.cluster.local"


def as_json(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def test_builder_cluster_eds_defaults() -> None:
    cluster = as_json(build_cluster(ClusterInputs(name=NAME)))
    assert cluster == {
        "name": NAME,
        "type": "EDS",
        "eds_cluster_config": {
            "eds_config": {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"},
            "service_name": NAME,
        },
        "connect_timeout": "10s",
        "lb_policy": "LEAST_REQUEST",
        "circuit_breakers": {
            "thresholds": [
                {
                    "max_connections": 4294967295,
                    "max_pending_requests": 4294967295,
                    "max_requests": 4294967295,
                    "max_retries": 4294967295,
                    "track_remaining": True,
                }
            ]
        },
        "common_lb_config": {},
    }


def test_builder_cluster_strict_dns_from_host() -> None:
    cluster = build_cluster(
        ClusterInputs(
            name="outbound|443||api.example.com",
            discovery=Discovery.STRICT_DNS,
            dns_host="api.example.com",
            dns_port=443,
        )
    )
    assert cluster.type == Cluster.STRICT_DNS
    assert cluster.dns_lookup_family == Cluster.V4_ONLY
    assert not cluster.HasField("eds_cluster_config")
    assert as_json(cluster.load_assignment) == {
        "cluster_name": "outbound|443||api.example.com",
        "endpoints": [
            {
                "locality": {},
                "lb_endpoints": [
                    {
                        "endpoint": {
                            "address": {
                                "socket_address": {
                                    "address": "api.example.com",
                                    "port_value": 443,
                                }
                            }
                        },
                        "health_status": "HEALTHY",
                        "load_balancing_weight": 1,
                    }
                ],
                "load_balancing_weight": 1,
            }
        ],
    }


def test_builder_cluster_dns_from_endpoints() -> None:
    endpoints = (
        LbEndpointInput("b.example.com", 80, "r/z"),
        LbEndpointInput("a.example.com", 80, "r/z", weight=3),
    )
    strict = build_cluster(
        ClusterInputs(
            name="outbound|80||x",
            discovery=Discovery.STRICT_DNS,
            endpoints=endpoints,
            dns_lookup_family="ALL",
        )
    )
    assert strict.dns_lookup_family == Cluster.ALL
    hosts = [
        e.endpoint.address.socket_address.address
        for e in strict.load_assignment.endpoints[0].lb_endpoints
    ]
    assert hosts == ["a.example.com", "b.example.com"]
    logical = build_cluster(
        ClusterInputs(name="outbound|80||x", discovery=Discovery.LOGICAL_DNS, endpoints=endpoints)
    )
    assert logical.type == Cluster.LOGICAL_DNS
    assert len(logical.load_assignment.endpoints) == 1
    (only,) = logical.load_assignment.endpoints[0].lb_endpoints
    assert only.endpoint.address.socket_address.address == "a.example.com"


def test_builder_cluster_dns_without_target_is_rejected() -> None:
    with pytest.raises(ValueError, match="needs endpoints or a host and port"):
        build_cluster(ClusterInputs(name="outbound|80||x", discovery=Discovery.STRICT_DNS))


def test_builder_cluster_static_with_pipe() -> None:
    cluster = build_cluster(
        ClusterInputs(
            name="inbound|8080||",
            discovery=Discovery.STATIC,
            endpoints=(LbEndpointInput("unix:///var/run/app.sock"),),
        )
    )
    assert cluster.type == Cluster.STATIC
    address = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address
    assert address.pipe.path == "/var/run/app.sock"
    assert not address.HasField("socket_address")


def test_builder_cluster_full_policy_sets_every_part() -> None:
    full = policy(
        {
            "loadBalancer": {"simple": "ROUND_ROBIN"},
            "connectionPool": {"tcp": {"connectTimeout": "2s"}, "http": {"idleTimeout": "9s"}},
            "outlierDetection": {"consecutive5xxErrors": 3},
            "tls": {"mode": "ISTIO_MUTUAL"},
        }
    )
    cluster = build_cluster(ClusterInputs(name=NAME, protocol="GRPC", policy=full))
    assert cluster.type == Cluster.EDS
    assert cluster.lb_policy == Cluster.ROUND_ROBIN
    assert cluster.connect_timeout.seconds == 2
    assert cluster.outlier_detection.consecutive_5xx.value == 3
    assert cluster.transport_socket.name == "envoy.transport_sockets.tls"
    options = http_protocol_options_pb2.HttpProtocolOptions()
    assert cluster.typed_extension_protocol_options[HTTP_PROTOCOL_OPTIONS_KEY].Unpack(options)
    assert options.explicit_http_config.HasField("http2_protocol_options")
    assert options.common_http_protocol_options.idle_timeout.seconds == 9


def test_builder_cluster_does_not_modify_policy() -> None:
    full = policy({"tls": {"mode": "SIMPLE"}, "loadBalancer": {"simple": "PASSTHROUGH"}})
    before = full.SerializeToString(deterministic=True)
    build_cluster(ClusterInputs(name=NAME, policy=full))
    assert full.SerializeToString(deterministic=True) == before


def test_builder_cluster_blackhole_and_passthrough() -> None:
    assert as_json(build_blackhole_cluster()) == {
        "name": "BlackHoleCluster",
        "type": "STATIC",
        "connect_timeout": "10s",
    }
    passthrough = build_passthrough_cluster(timedelta(seconds=3))
    assert passthrough.name == "PassthroughCluster"
    assert passthrough.type == Cluster.ORIGINAL_DST
    assert passthrough.lb_policy == Cluster.CLUSTER_PROVIDED
    assert passthrough.connect_timeout.seconds == 3
    options = http_protocol_options_pb2.HttpProtocolOptions()
    assert passthrough.typed_extension_protocol_options[HTTP_PROTOCOL_OPTIONS_KEY].Unpack(options)
    assert as_json(options) == {
        "common_http_protocol_options": {"idle_timeout": "300s"},
        "use_downstream_protocol_config": {
            "http_protocol_options": {},
            "http2_protocol_options": {},
        },
    }


def test_builder_cluster_inputs_are_cache_keys() -> None:
    first = ClusterInputs(name=NAME, policy=policy({"loadBalancer": {"simple": "RANDOM"}}))
    same = ClusterInputs(name=NAME, policy=policy({"loadBalancer": {"simple": "RANDOM"}}))
    other = ClusterInputs(name=NAME, policy=policy({"loadBalancer": {"simple": "ROUND_ROBIN"}}))
    none = ClusterInputs(name=NAME)
    empty = ClusterInputs(name=NAME, policy=dr_pb2.TrafficPolicy())
    assert first == same
    assert hash(first) == hash(same)
    assert first != other
    assert none != empty  # no policy and an empty policy are kept apart
    assert len({first, same, other, none, empty}) == 4
    keepalive = dr_pb2.ConnectionPoolSettings.TCPSettings.TcpKeepalive(probes=3)
    assert ClusterInputs(name=NAME, mesh_tcp_keepalive=keepalive) != none
    assert build_cluster(first) == build_cluster(same)
