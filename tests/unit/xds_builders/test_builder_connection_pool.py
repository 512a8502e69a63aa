"""ConnectionPoolSettings → circuit breakers, timeouts, keepalive, HTTP protocol options."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from envoy.extensions.upstreams.http.v3 import http_protocol_options_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.xds.builders.cluster import ClusterInputs, build_cluster
from pilothouse.xds.builders.upstream_protocol import HTTP_PROTOCOL_OPTIONS_KEY
from tests.unit.xds_builders.policies import policy

NAME = "outbound|80||svc.example"
MAX = 4294967295
DEFAULT_THRESHOLDS = {
    "max_connections": MAX,
    "max_pending_requests": MAX,
    "max_requests": MAX,
    "max_retries": MAX,
    "track_remaining": True,
}


def built(spec: dict[str, Any] | None = None, **inputs: Any) -> Any:
    return build_cluster(
        ClusterInputs(name=inputs.pop("name", NAME), policy=policy(spec or {}), **inputs)
    )


def thresholds(spec: dict[str, Any] | None) -> dict[str, Any]:
    cluster = built(None if spec is None else {"connectionPool": spec})
    assert len(cluster.circuit_breakers.thresholds) == 1
    return json_format.MessageToDict(
        cluster.circuit_breakers.thresholds[0], preserving_proto_field_name=True
    )


def protocol_options(cluster: Any) -> dict[str, Any] | None:
    if HTTP_PROTOCOL_OPTIONS_KEY not in cluster.typed_extension_protocol_options:
        return None
    options = http_protocol_options_pb2.HttpProtocolOptions()
    assert cluster.typed_extension_protocol_options[HTTP_PROTOCOL_OPTIONS_KEY].Unpack(options)
    return json_format.MessageToDict(options, preserving_proto_field_name=True)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(None, DEFAULT_THRESHOLDS, id="defaults-without-policy"),
        pytest.param(
            {"tcp": {"maxConnections": 10}},
            {**DEFAULT_THRESHOLDS, "max_connections": 10},
            id="max-connections",
        ),
        pytest.param(
            {"http": {"http1MaxPendingRequests": 3, "http2MaxRequests": 4, "maxRetries": 5}},
            {
                **DEFAULT_THRESHOLDS,
                "max_pending_requests": 3,
                "max_requests": 4,
                "max_retries": 5,
            },
            id="http-limits",
        ),
        pytest.param(
            {"tcp": {"maxConnections": 0}, "http": {"maxRetries": 0}},
            DEFAULT_THRESHOLDS,
            id="zero-means-unset",
        ),
    ],
)
def test_builder_circuit_breakers(spec: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    assert thresholds(spec) == expected


def test_builder_connect_timeout() -> None:
    assert built().connect_timeout.ToTimedelta() == timedelta(seconds=10)
    assert built(connect_timeout=timedelta(seconds=2)).connect_timeout.seconds == 2
    cluster = built({"connectionPool": {"tcp": {"connectTimeout": "0.250s"}}})
    assert cluster.connect_timeout.ToTimedelta() == timedelta(milliseconds=250)


KeepaliveSpec = dr_pb2.ConnectionPoolSettings.TCPSettings.TcpKeepalive


@pytest.mark.parametrize(
    ("mesh", "rule", "expected"),
    [
        pytest.param(None, None, None, id="none"),
        pytest.param(None, {}, {}, id="empty-rule-keepalive-os-defaults"),
        pytest.param(
            None,
            {"probes": 3, "time": "60s", "interval": "10s"},
            {"keepalive_probes": 3, "keepalive_time": 60, "keepalive_interval": 10},
            id="rule",
        ),
        pytest.param(
            {"probes": 9, "time": "7200s"},
            None,
            {"keepalive_probes": 9, "keepalive_time": 7200},
            id="mesh",
        ),
        pytest.param(
            {"probes": 9, "time": "7200s"},
            {"time": "30s", "interval": "5s"},
            {"keepalive_probes": 9, "keepalive_time": 30, "keepalive_interval": 5},
            id="rule-overrides-mesh-attribute-by-attribute",
        ),
    ],
)
def test_builder_tcp_keepalive(
    mesh: dict[str, Any] | None, rule: dict[str, Any] | None, expected: dict[str, Any] | None
) -> None:
    spec = None if rule is None else {"connectionPool": {"tcp": {"tcpKeepalive": rule}}}
    mesh_keepalive = None if mesh is None else json_format.ParseDict(mesh, KeepaliveSpec())
    cluster = built(spec, mesh_tcp_keepalive=mesh_keepalive)
    if expected is None:
        assert not cluster.HasField("upstream_connection_options")
        return
    keepalive = cluster.upstream_connection_options.tcp_keepalive
    assert cluster.upstream_connection_options.HasField("tcp_keepalive")
    assert json_format.MessageToDict(keepalive, preserving_proto_field_name=True) == expected


H2 = {"explicit_http_config": {"http2_protocol_options": {}}}
H1 = {"explicit_http_config": {"http_protocol_options": {}}}
DOWNSTREAM = {
    "use_downstream_protocol_config": {"http_protocol_options": {}, "http2_protocol_options": {}}
}


@pytest.mark.parametrize(
    ("protocol", "http", "mesh_upgrade", "expected"),
    [
        pytest.param("HTTP", None, False, None, id="http-envoy-default"),
        pytest.param("TCP", None, False, None, id="tcp"),
        pytest.param("HTTP2", None, False, H2, id="http2"),
        pytest.param("GRPC", None, False, H2, id="grpc"),
        pytest.param("grpc-web", None, False, H2, id="grpc-web-any-case"),
        pytest.param("", None, False, DOWNSTREAM, id="sniffed"),
        pytest.param("HTTP", {"useClientProtocol": True}, False, DOWNSTREAM, id="client-proto"),
        pytest.param("HTTP", {"h2UpgradePolicy": "UPGRADE"}, False, H2, id="upgrade"),
        pytest.param("TCP", {"h2UpgradePolicy": "UPGRADE"}, False, H2, id="upgrade-any-port"),
        pytest.param(
            "HTTP",
            {"useClientProtocol": True, "h2UpgradePolicy": "UPGRADE"},
            False,
            H2,
            id="upgrade-beats-client-protocol",
        ),
        pytest.param("HTTP", None, True, H2, id="mesh-upgrade-http"),
        pytest.param("TCP", None, True, None, id="mesh-upgrade-skips-tcp"),
        pytest.param(
            "HTTP", {"h2UpgradePolicy": "DO_NOT_UPGRADE"}, True, None, id="rule-refuses-upgrade"
        ),
        pytest.param("HTTP2", {"h2UpgradePolicy": "DO_NOT_UPGRADE"}, False, H2, id="no-downgrade"),
    ],
)
def test_builder_upstream_protocol(
    protocol: str,
    http: dict[str, Any] | None,
    mesh_upgrade: bool,
    expected: dict[str, Any] | None,
) -> None:
    spec = None if http is None else {"connectionPool": {"http": http}}
    cluster = built(spec, protocol=protocol, mesh_h2_upgrade=mesh_upgrade)
    assert protocol_options(cluster) == expected


def test_builder_inbound_cluster_is_not_upgraded() -> None:
    cluster = built(
        {"connectionPool": {"http": {"h2UpgradePolicy": "UPGRADE"}}},
        name="inbound|8080||",
        protocol="HTTP",
    )
    assert protocol_options(cluster) is None


@pytest.mark.parametrize(
    ("protocol", "pool", "expected"),
    [
        pytest.param(
            "HTTP",
            {
                "http": {"idleTimeout": "60s", "maxRequestsPerConnection": 9},
                "tcp": {"idleTimeout": "30s", "maxConnectionDuration": "600s"},
            },
            {
                **H1,
                "common_http_protocol_options": {
                    "idle_timeout": "60s",
                    "max_requests_per_connection": 9,
                    "max_connection_duration": "600s",
                },
            },
            id="http-idle-wins-explicit-http1",
        ),
        pytest.param(
            "TCP",
            {"tcp": {"idleTimeout": "30s"}},
            {**H1, "common_http_protocol_options": {"idle_timeout": "30s"}},
            id="tcp-idle-fallback",
        ),
        pytest.param(
            "GRPC",
            {"http": {"maxConcurrentStreams": 100, "maxRequestsPerConnection": 1}},
            {
                "explicit_http_config": {"http2_protocol_options": {"max_concurrent_streams": 100}},
                "common_http_protocol_options": {"max_requests_per_connection": 1},
            },
            id="h2-concurrent-streams",
        ),
        pytest.param(
            "HTTP",
            {"http": {"maxConcurrentStreams": 100}},
            None,
            id="concurrent-streams-need-h2",
        ),
    ],
)
def test_builder_http_common_options(
    protocol: str, pool: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    cluster = built({"connectionPool": pool}, protocol=protocol)
    assert protocol_options(cluster) == expected


def test_builder_connection_pool_applies_to_inbound() -> None:
    spec = {
        "connectionPool": {"tcp": {"maxConnections": 7, "connectTimeout": "1s"}},
        "outlierDetection": {"consecutive5xxErrors": 1},
        "loadBalancer": {"simple": "RANDOM"},
        "tls": {"mode": "ISTIO_MUTUAL"},
    }
    cluster = built(spec, name="inbound|8080||")
    assert cluster.circuit_breakers.thresholds[0].max_connections.value == 7
    assert cluster.connect_timeout.seconds == 1
    # Everything else in the policy is outbound-only.
    assert not cluster.HasField("outlier_detection")
    assert not cluster.HasField("transport_socket")
    assert cluster.lb_policy == 0  # ROUND_ROBIN, Envoy's default: not set by the policy
