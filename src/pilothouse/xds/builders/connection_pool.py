"""``ConnectionPoolSettings`` → circuit breakers, connect timeout and TCP keepalive.

Istio applies a connection pool to every cluster, even when no rule sets one:

- ``circuit_breakers.thresholds[0]`` starts with ``max_connections``,
  ``max_pending_requests``, ``max_requests`` and ``max_retries`` all at
  2^32-1 and ``track_remaining`` on (Envoy's own defaults, e.g. 3 retries, are
  too small during pod churn); ``tcp.max_connections``,
  ``http.http1_max_pending_requests``, ``http.http2_max_requests`` and
  ``http.max_retries`` replace them when > 0 (0 cannot be told from unset);
- ``tcp.connect_timeout`` replaces the mesh-wide connect timeout (10 s);
- TCP keepalive: the mesh-wide setting, then the rule's, attribute by
  attribute; an empty ``tcp_keepalive`` (OS defaults) when either is present.

The HTTP-level parts (idle timeout, max requests per connection, max
connection duration, concurrent streams) are in :mod:`.upstream_protocol`.
"""

from __future__ import annotations

from typing import Final

from envoy.config.cluster.v3 import circuit_breaker_pb2  # type: ignore[import-untyped]
from envoy.config.core.v3 import address_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2

MAX_UINT32: Final = 2**32 - 1
IstioTcpKeepalive = dr_pb2.ConnectionPoolSettings.TCPSettings.TcpKeepalive


def circuit_breaker_thresholds(
    pool: dr_pb2.ConnectionPoolSettings | None,
) -> circuit_breaker_pb2.CircuitBreakers.Thresholds:
    """The single (default-priority) threshold set of a cluster."""
    thresholds = circuit_breaker_pb2.CircuitBreakers.Thresholds(track_remaining=True)
    thresholds.max_connections.value = MAX_UINT32
    thresholds.max_pending_requests.value = MAX_UINT32
    thresholds.max_requests.value = MAX_UINT32
    thresholds.max_retries.value = MAX_UINT32
    if pool is None:
        return thresholds
    if pool.HasField("http"):
        http = pool.http
        if http.http2_max_requests > 0:
            thresholds.max_requests.value = http.http2_max_requests
        if http.http1_max_pending_requests > 0:
            thresholds.max_pending_requests.value = http.http1_max_pending_requests
        if http.max_retries > 0:
            thresholds.max_retries.value = http.max_retries
    if pool.HasField("tcp") and pool.tcp.max_connections > 0:
        thresholds.max_connections.value = pool.tcp.max_connections
    return thresholds


def build_circuit_breakers(
    pool: dr_pb2.ConnectionPoolSettings | None,
) -> circuit_breaker_pb2.CircuitBreakers:
    """``circuit_breakers`` with the thresholds above."""
    return circuit_breaker_pb2.CircuitBreakers(thresholds=[circuit_breaker_thresholds(pool)])


def tcp_keepalive(
    pool: dr_pb2.ConnectionPoolSettings | None, mesh_keepalive: IstioTcpKeepalive | None
) -> address_pb2.TcpKeepalive | None:
    """``upstream_connection_options.tcp_keepalive``, or ``None`` when nobody sets one.

    Envoy counts keepalive time and interval in whole seconds.
    """
    layers = []
    if mesh_keepalive is not None:
        layers.append(mesh_keepalive)
    if pool is not None and pool.HasField("tcp") and pool.tcp.HasField("tcp_keepalive"):
        layers.append(pool.tcp.tcp_keepalive)
    if not layers:
        return None
    keepalive = address_pb2.TcpKeepalive()
    for layer in layers:
        if layer.probes > 0:
            keepalive.keepalive_probes.value = layer.probes
        if layer.HasField("time"):
            keepalive.keepalive_time.value = layer.time.seconds
        if layer.HasField("interval"):
            keepalive.keepalive_interval.value = layer.interval.seconds
    return keepalive
