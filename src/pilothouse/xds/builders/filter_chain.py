"""Filter chains: ``tcp_proxy`` to one or several clusters, HCM chains, TLS and SNI matches.

A TCP destination is a :class:`WeightedCluster`.  One destination gives a
``tcp_proxy`` with ``cluster``; several give ``weighted_clusters`` (Envoy
needs every weight ≥ 1 there; a VirtualService's weights are copied as
given).  Like istiod, a single-cluster proxy is counted under the cluster's
name.

:func:`server_names` turns Istio hosts into ``filter_chain_match.server_names``:
the ``ns/`` part of a Gateway host is dropped, duplicates go, the result is
sorted, and a bare ``*`` means "any SNI" (no ``server_names`` at all).  Envoy
accepts wildcards of the form ``*.example.com`` as they are.

Gateway and sidecar outbound chains get istiod's 15 s
``transport_socket_connect_timeout`` (a bound on slow TLS handshakes; istiod
sets it on every such chain, plaintext ones included); inbound chains do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_components_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.tcp_proxy.v3 import (  # type: ignore[import-untyped]
    tcp_proxy_pb2,
)
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2  # type: ignore[import-untyped]

from pilothouse.xds.builders.http_connection_manager import STDOUT_ACCESS_LOG, stdout_access_log
from pilothouse.xds.builders.listener import (
    HTTP_CONNECTION_MANAGER,
    TCP_PROXY,
    TRANSPORT_SOCKET_CONNECT_TIMEOUT,
    network_filter,
    typed,
)
from pilothouse.xds.builders.route_l4 import ClusterWeight
from pilothouse.xds.builders.upstream_tls import TLS_TRANSPORT_SOCKET

FilterChain = listener_components_pb2.FilterChain
TcpProxy = tcp_proxy_pb2.TcpProxy


@dataclass(frozen=True, slots=True)
class WeightedCluster:
    """A TCP/TLS route destination: the cluster name and its weight."""

    name: str
    weight: int = 1


def weighted_clusters(clusters: Iterable[ClusterWeight]) -> tuple[WeightedCluster, ...]:
    """A TCP/TLS route's clusters and weights as :class:`WeightedCluster` destinations."""
    return tuple(WeightedCluster(c.cluster, c.weight) for c in clusters)


def build_tcp_proxy(
    destinations: Sequence[WeightedCluster],
    *,
    stat_prefix: str | None = None,
    idle_timeout: timedelta | None = None,
    access_log: bool = False,
) -> tcp_proxy_pb2.TcpProxy:
    """A ``tcp_proxy`` to ``destinations``; counted under the cluster name when there is one.

    Raises ``ValueError`` without destinations, for several destinations
    without a ``stat_prefix``, or for a weight below 1 among several.
    """
    if not destinations:
        raise ValueError("a tcp_proxy needs at least one destination cluster")
    proxy = TcpProxy()
    if len(destinations) == 1:
        proxy.cluster = destinations[0].name
        proxy.stat_prefix = stat_prefix or destinations[0].name
    else:
        if not stat_prefix:
            raise ValueError("a weighted tcp_proxy needs a stat_prefix")
        proxy.stat_prefix = stat_prefix
        for destination in destinations:
            if destination.weight < 1:
                raise ValueError(
                    f"cluster {destination.name}: weighted tcp_proxy weights must be >= 1"
                )
            proxy.weighted_clusters.clusters.add(name=destination.name, weight=destination.weight)
    if idle_timeout is not None:
        proxy.idle_timeout.FromTimedelta(idle_timeout)
    if access_log:
        proxy.access_log.add(name=STDOUT_ACCESS_LOG, typed_config=typed(stdout_access_log()))
    return proxy


def tcp_proxy_filter(proxy: tcp_proxy_pb2.TcpProxy) -> listener_components_pb2.Filter:
    """``envoy.filters.network.tcp_proxy`` carrying ``proxy``."""
    return network_filter(TCP_PROXY, proxy)


def http_connection_manager_filter(
    manager: hcm_pb2.HttpConnectionManager,
) -> listener_components_pb2.Filter:
    """``envoy.filters.network.http_connection_manager`` carrying ``manager``."""
    return network_filter(HTTP_CONNECTION_MANAGER, manager)


def downstream_transport_socket(context: tls_pb2.DownstreamTlsContext) -> base_pb2.TransportSocket:
    """``transport_socket{name: envoy.transport_sockets.tls, typed_config: context}``."""
    return base_pb2.TransportSocket(name=TLS_TRANSPORT_SOCKET, typed_config=typed(context))


def server_names(hosts: Iterable[str]) -> list[str]:
    """SNI names for ``hosts``: ``ns/`` dropped, deduplicated, sorted; ``[]`` if any is ``*``."""
    names = {host.split("/", 1)[1] if "/" in host else host for host in hosts}
    if "*" in names:
        return []
    return sorted(names)


def build_filter_chain(
    filters: Sequence[listener_components_pb2.Filter],
    *,
    name: str = "",
    sni: Sequence[str] = (),
    destination_port: int | None = None,
    tls: tls_pb2.DownstreamTlsContext | None = None,
    connect_timeout: timedelta | None = TRANSPORT_SOCKET_CONNECT_TIMEOUT,
) -> listener_components_pb2.FilterChain:
    """A filter chain running ``filters``, matched on ``sni`` / ``destination_port`` if given.

    ``tls`` terminates TLS with that context; ``connect_timeout`` (None: unset)
    becomes the chain's ``transport_socket_connect_timeout``.
    """
    chain = FilterChain(name=name, filters=filters)
    if sni:
        chain.filter_chain_match.server_names.extend(sni)
    if destination_port is not None:
        chain.filter_chain_match.destination_port.value = destination_port
    if tls is not None:
        chain.transport_socket.CopyFrom(downstream_transport_socket(tls))
    if connect_timeout is not None:
        chain.transport_socket_connect_timeout.FromTimedelta(connect_timeout)
    return chain


def needs_tls_inspector(chains: Iterable[listener_components_pb2.FilterChain]) -> bool:
    """istiod's rule: inspect TLS when a chain matches SNI or its TLS context offers ALPN."""
    for chain in chains:
        if chain.filter_chain_match.server_names:
            return True
        if chain.HasField("transport_socket"):
            context = tls_pb2.DownstreamTlsContext()
            chain.transport_socket.typed_config.Unpack(context)
            if context.common_tls_context.alpn_protocols:
                return True
    return False
