"""The gRPC server's options come from XdsSettings; the defaults are istiod's."""

from __future__ import annotations

from pilothouse.settings import XdsSettings
from pilothouse.xds.server.grpc_options import grpc_server_options


def test_default_options_are_istiods_with_its_helm_charts_connection_age() -> None:
    assert grpc_server_options(XdsSettings()) == [
        ("grpc.so_reuseport", 0),
        ("grpc.max_receive_message_length", 4 * 1024 * 1024),
        ("grpc.max_send_message_length", 512 * 1024 * 1024),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.http2.ping_timeout_ms", 10_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 15_000),
        ("grpc.max_concurrent_streams", 100_000),
        ("grpc.server.max_pending_requests", 10_000),
        ("grpc.server.max_pending_requests_hard_limit", 10_000),
        ("grpc.max_connection_age_ms", 30 * 60 * 1000),
        ("grpc.max_connection_age_grace_ms", 10_000),
    ]


def test_each_transport_knob_becomes_its_option() -> None:
    settings = XdsSettings(
        max_connection_age=0,
        max_receive_bytes=1,
        max_send_bytes=2,
        keepalive_time=0.25,
        keepalive_timeout=1.5,
        min_ping_interval=60,
        max_concurrent_streams=7,
        max_pending_streams=9,
    )
    options = dict(grpc_server_options(settings, reuse_port=True))
    assert options == {
        "grpc.so_reuseport": 1,
        "grpc.max_receive_message_length": 1,
        "grpc.max_send_message_length": 2,
        "grpc.keepalive_time_ms": 250,
        "grpc.keepalive_timeout_ms": 1500,
        "grpc.http2.ping_timeout_ms": 1500,
        "grpc.http2.min_ping_interval_without_data_ms": 60_000,
        "grpc.max_concurrent_streams": 7,
        "grpc.server.max_pending_requests": 9,
        "grpc.server.max_pending_requests_hard_limit": 9,
    }


def test_connections_age_out_only_when_asked() -> None:
    never = dict(grpc_server_options(XdsSettings(max_connection_age=0)))
    assert "grpc.max_connection_age_ms" not in never
    aged = dict(grpc_server_options(XdsSettings(max_connection_age=1800)))
    assert aged["grpc.max_connection_age_ms"] == 1_800_000
    assert aged["grpc.max_connection_age_grace_ms"] == 10_000
