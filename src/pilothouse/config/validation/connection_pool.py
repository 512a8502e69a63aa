"""Connection pool settings (DestinationRule traffic policies, Sidecar inbound pools)."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import ConnectionPoolSettings
from pilothouse.config.validation.quantities import check_duration, check_non_negative
from pilothouse.config.validation.report import Report

_HTTP_COUNTS = (
    ("http1_max_pending_requests", "http1MaxPendingRequests"),
    ("http2_max_requests", "http2MaxRequests"),
    ("max_requests_per_connection", "maxRequestsPerConnection"),
    ("max_retries", "maxRetries"),
    ("max_concurrent_streams", "maxConcurrentStreams"),
)
_TCP_DURATIONS = (
    ("connect_timeout", "connectTimeout"),
    ("max_connection_duration", "maxConnectionDuration"),
    ("idle_timeout", "idleTimeout"),
)


def check_connection_pool(pool: ConnectionPoolSettings, path: str, report: Report) -> None:
    if not pool.HasField("tcp") and not pool.HasField("http"):
        report.error(path, "connection pool needs tcp or http settings")
        return
    if pool.HasField("http"):
        http = pool.http
        http_path = f"{path}.http"
        for field, json_name in _HTTP_COUNTS:
            check_non_negative(getattr(http, field), f"{http_path}.{json_name}", report)
        if http.HasField("idle_timeout"):
            check_duration(http.idle_timeout, f"{http_path}.idleTimeout", report)
        if (
            http.h2_upgrade_policy == ConnectionPoolSettings.HTTPSettings.UPGRADE
            and http.use_client_protocol
        ):
            report.error(
                f"{http_path}.useClientProtocol",
                "useClientProtocol cannot be true when h2UpgradePolicy is UPGRADE",
            )
        if http.HasField("http2_keep_alive"):
            keep_alive = http.http2_keep_alive
            for field, json_name in (("interval", "interval"), ("timeout", "timeout")):
                if keep_alive.HasField(field):
                    check_duration(
                        getattr(keep_alive, field),
                        f"{http_path}.http2KeepAlive.{json_name}",
                        report,
                    )
    if pool.HasField("tcp"):
        tcp = pool.tcp
        tcp_path = f"{path}.tcp"
        check_non_negative(tcp.max_connections, f"{tcp_path}.maxConnections", report)
        for field, json_name in _TCP_DURATIONS:
            if tcp.HasField(field):
                check_duration(getattr(tcp, field), f"{tcp_path}.{json_name}", report)
        if tcp.HasField("tcp_keepalive"):
            for field in ("time", "interval"):
                if tcp.tcp_keepalive.HasField(field):
                    check_duration(
                        getattr(tcp.tcp_keepalive, field),
                        f"{tcp_path}.tcpKeepalive.{field}",
                        report,
                    )
