"""The grpc.aio server options pilothouse serves xDS and MCP with, from ``XdsSettings``.

``grpc.so_reuseport`` is off unless asked for, so a port already in use fails loudly
instead of silently sharing connections with another process (grpcio turns it on by
default). Keepalive follows istiod: the server pings an idle connection every
``keepalive_time`` and closes it when a ping goes unanswered for ``keepalive_timeout``;
clients may ping no more often than ``min_ping_interval``. gRPC core takes the wait for
a ping's answer from ``grpc.http2.ping_timeout_ms`` (one minute unless set), not from
``grpc.keepalive_timeout_ms`` alone: both are set, or a proxy that vanished without
closing its connection would be dropped only after a minute. With ``max_connection_age``
set, a connection is asked to go away (GOAWAY) after about that long, gRPC adding its
own jitter, and given ``max_connection_age_grace`` to finish. New streams that the
server has not taken up yet (a storm of them arriving at once) are held up to
``max_pending_streams``: gRPC's own limit (1,000, with random cancellations above it)
would cancel streams of a 2,000-proxy storm before admission control
(:mod:`pilothouse.xds.server.admission`) could pace them.
"""

from __future__ import annotations

from pilothouse.settings import XdsSettings


def grpc_server_options(
    settings: XdsSettings, *, reuse_port: bool = False
) -> list[tuple[str, int]]:
    """Channel arguments for ``grpc.aio.server(options=...)``."""
    options = [
        ("grpc.so_reuseport", 1 if reuse_port else 0),
        ("grpc.max_receive_message_length", settings.max_receive_bytes),
        ("grpc.max_send_message_length", settings.max_send_bytes),
        ("grpc.keepalive_time_ms", _milliseconds(settings.keepalive_time)),
        ("grpc.keepalive_timeout_ms", _milliseconds(settings.keepalive_timeout)),
        ("grpc.http2.ping_timeout_ms", _milliseconds(settings.keepalive_timeout)),
        (
            "grpc.http2.min_ping_interval_without_data_ms",
            _milliseconds(settings.min_ping_interval),
        ),
        ("grpc.max_concurrent_streams", settings.max_concurrent_streams),
        ("grpc.server.max_pending_requests", settings.max_pending_streams),
        ("grpc.server.max_pending_requests_hard_limit", settings.max_pending_streams),
    ]
    if settings.max_connection_age > 0:
        options += [
            ("grpc.max_connection_age_ms", _milliseconds(settings.max_connection_age)),
            (
                "grpc.max_connection_age_grace_ms",
                _milliseconds(settings.max_connection_age_grace),
            ),
        ]
    return options


def _milliseconds(seconds: float) -> int:
    return round(seconds * 1000)
