"""Sidecar listeners: outbound (per egress port), the iptables catch-all, and inbound.

pilothouse's sidecars run without iptables.  A Sidecar egress listener with
``bind: 127.0.0.1`` and ``captureMode: NONE`` makes Envoy listen on that
address and port itself: :func:`build_outbound_listener` with
``capture_none=True`` builds such a listener, named ``<address>_<port>`` as
istiod names it.  HTTP ports end in an HCM on RDS ``<port>`` (istiod's sidecar
route configurations are named by port); other protocols end in a
``tcp_proxy`` to the given cluster(s).  Protocol sniffing (no declared
protocol) is not supported: it would need an HTTP inspector and a second chain.

With ``capture_none=False`` the listener does not bind (``bind_to_port:
false``): it only receives connections handed over by
:func:`build_virtual_outbound_listener`, istiod's ``virtualOutbound`` on
15001 with ``use_original_dst``, which needs iptables to redirect traffic to
it.  Both are here for completeness; capture-less sidecars need neither.

Inbound, istiod normally uses one ``virtualInbound`` listener on 15006 with a
filter chain per workload port, again fed by iptables.  For capture-less
sidecars it builds a real listener per port instead, and so does
:func:`build_inbound_listener`: ``<address>_<port>``, direction INBOUND, one
chain matching the destination port, forwarding to ``inbound|<port>||``.  HTTP
ports get an HCM with an inline route configuration (:func:`inbound_route_config`:
one virtual host ``*`` routing everything to the cluster, no timeout);
other protocols get a ``tcp_proxy``.  ``tls`` (a Sidecar ingress listener's
TLS settings) terminates TLS on the chain, whatever the PeerAuthentication mode (as
in istiod); otherwise ``mtls``, the port's PeerAuthentication mode, picks the chains
(see :mod:`.listener_mtls`: mutual TLS only, mutual TLS or plaintext behind the TLS
inspector, or plaintext only).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import (  # type: ignore[import-untyped]
    listener_components_pb2,
    listener_pb2,
)
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.push.authorization import NO_AUTHORIZATION, WorkloadAuthorization
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.xds.builders.access_control import AccessFilters
from pilothouse.xds.builders.filter_chain import (
    WeightedCluster,
    build_filter_chain,
    build_tcp_proxy,
    http_connection_manager_filter,
    tcp_proxy_filter,
)
from pilothouse.xds.builders.http_connection_manager import (
    ListenerClass,
    build_http_connection_manager,
    is_http,
)
from pilothouse.xds.builders.listener import (
    INBOUND,
    OUTBOUND,
    PROXY_LISTEN_PORT,
    VIRTUAL_OUTBOUND_LISTENER,
    WILDCARD_ADDRESS,
    listener_name,
    socket_address,
    stat_prefix,
    tls_inspector,
)
from pilothouse.xds.builders.listener_mtls import build_inbound_chains, inspects_tls
from pilothouse.xds.builders.listener_tls import build_downstream_tls
from pilothouse.xds.builders.names import (
    BLACKHOLE_CLUSTER,
    PASSTHROUGH_CLUSTER,
    inbound_cluster_name,
)
from pilothouse.xds.builders.upstream_protocol import SNIFFED_PROTOCOLS

Listener = listener_pb2.Listener

VIRTUAL_OUTBOUND_BLACKHOLE_CHAIN = "virtualOutbound-blackhole"
VIRTUAL_OUTBOUND_CATCHALL_CHAIN = "virtualOutbound-catchall-tcp"
INBOUND_ROUTE_NAME = "default"


def build_outbound_listener(
    address: str,
    port: int,
    protocol: str,
    *,
    capture_none: bool = True,
    rds_name: str | None = None,
    destinations: Sequence[WeightedCluster] = (),
    idle_timeout: timedelta | None = None,
    access_log: bool = False,
) -> listener_pb2.Listener:
    """The sidecar listener for egress port ``port`` on ``address``.

    HTTP protocols: an HCM on RDS ``rds_name`` (default ``str(port)``).  Other
    protocols: a ``tcp_proxy`` to ``destinations``.  Raises ``ValueError`` for
    an undeclared protocol and for a TCP port without destinations.
    """
    name = listener_name(address, port)
    _check_declared(protocol, name)
    listener = outbound_listener_frame(address, port, bind=capture_none)
    if is_http(protocol):
        manager = build_http_connection_manager(
            stat_prefix(OUTBOUND, name),
            rds_name=rds_name if rds_name is not None else str(port),
            listener_class=ListenerClass.SIDECAR_OUTBOUND,
            protocol=protocol,
            access_log=access_log,
        )
        filters = [http_connection_manager_filter(manager)]
    else:
        proxy = build_tcp_proxy(
            destinations,
            stat_prefix=None if len(destinations) == 1 else stat_prefix(OUTBOUND, name),
            idle_timeout=idle_timeout,
            access_log=access_log,
        )
        filters = [tcp_proxy_filter(proxy)]
    listener.filter_chains.append(build_filter_chain(filters))
    return listener


def outbound_listener_frame(address: str, port: int, *, bind: bool) -> listener_pb2.Listener:
    """The outbound listener ``<address>_<port>`` without filter chains: its listener
    filters' timeout 0s (none: istiod's default protocol detection timeout), and, unless
    ``bind``, not bound (``virtualOutbound`` hands it its connections)."""
    listener = Listener(
        name=listener_name(address, port),
        address=socket_address(address, port),
        traffic_direction=base_pb2.OUTBOUND,
        continue_on_listener_filters_timeout=True,
    )
    listener.listener_filters_timeout.SetInParent()
    if not bind:
        listener.bind_to_port.value = False
    return listener


def build_virtual_outbound_listener(
    *,
    address: str = WILDCARD_ADDRESS,
    port: int = PROXY_LISTEN_PORT,
    allow_any: bool = True,
    access_log: bool = False,
) -> listener_pb2.Listener:
    """``virtualOutbound``: iptables-redirected traffic, handed to listeners by original dst.

    Connections no other listener takes go to ``PassthroughCluster``
    (``allow_any``, MeshConfig ``outboundTrafficPolicy`` ALLOW_ANY) or
    ``BlackHoleCluster`` (REGISTRY_ONLY); connections addressed to the port
    itself go to ``BlackHoleCluster`` so that they cannot loop.
    """
    catch_all = PASSTHROUGH_CLUSTER if allow_any else BLACKHOLE_CLUSTER
    listener = Listener(
        name=VIRTUAL_OUTBOUND_LISTENER,
        address=socket_address(address, port),
        traffic_direction=base_pb2.OUTBOUND,
    )
    listener.use_original_dst.value = True
    listener.filter_chains.append(
        build_filter_chain(
            [_tcp_to(BLACKHOLE_CLUSTER, access_log)],
            name=VIRTUAL_OUTBOUND_BLACKHOLE_CHAIN,
            destination_port=port,
            connect_timeout=None,
        )
    )
    listener.filter_chains.append(
        build_filter_chain(
            [_tcp_to(catch_all, access_log)],
            name=VIRTUAL_OUTBOUND_CATCHALL_CHAIN,
            connect_timeout=None,
        )
    )
    return listener


def build_inbound_listener(
    address: str,
    port: int,
    protocol: str,
    *,
    cluster: str | None = None,
    tls: gateway_pb2.ServerTLSSettings | None = None,
    mtls: MtlsMode = MtlsMode.DISABLE,
    idle_timeout: timedelta | None = None,
    access_log: bool = False,
    authorization: WorkloadAuthorization = NO_AUTHORIZATION,
    access: AccessFilters | None = None,
) -> listener_pb2.Listener:
    """The listener for the proxy's own workload port ``port``, bound on ``address``.

    Forwards to ``cluster`` (default ``inbound|<port>||``), accepting connections as
    ``mtls`` says unless ``tls`` terminates user TLS instead, behind the access-control
    filters of ``authorization`` (see access_control.py; ``access``: those filters, when
    the caller built them already).  Raises
    ``ValueError`` for an undeclared protocol or TLS settings it cannot
    terminate.
    """
    name = listener_name(address, port)
    _check_declared(protocol, name)
    if access is None:
        access = AccessFilters.of(authorization)
    target = cluster or inbound_cluster_name(port)
    context = None if tls is None else build_downstream_tls(tls, http=is_http(protocol))
    filter_list: list[listener_components_pb2.Filter]
    if is_http(protocol):
        manager = build_http_connection_manager(
            stat_prefix(INBOUND, name),
            route_config=inbound_route_config(port, target),
            listener_class=ListenerClass.SIDECAR_INBOUND,
            protocol=protocol,
            access_log=access_log,
            access_filters=access.http,
        )
        filter_list = [http_connection_manager_filter(manager)]
    else:
        proxy = build_tcp_proxy(
            [WeightedCluster(target)], idle_timeout=idle_timeout, access_log=access_log
        )
        filter_list = [*access.network, tcp_proxy_filter(proxy)]
    listener = Listener(
        name=name,
        address=socket_address(address, port),
        traffic_direction=base_pb2.INBOUND,
        continue_on_listener_filters_timeout=True,
    )
    if context is not None:
        listener.filter_chains.append(
            build_filter_chain(
                filter_list, name=name, destination_port=port, tls=context, connect_timeout=None
            )
        )
        return listener
    listener.filter_chains.extend(
        build_inbound_chains(filter_list, name=name, port=port, http=is_http(protocol), mode=mtls)
    )
    if inspects_tls(mtls):
        listener.listener_filters.append(tls_inspector())
    return listener


def inbound_route_config(port: int, cluster: str) -> route_pb2.RouteConfiguration:
    """istiod's inbound route configuration: everything to ``cluster``, without a timeout.

    Named like the cluster, one virtual host ``inbound|http|<port>`` for ``*``,
    one route ``default`` on prefix ``/`` with ``timeout: 0s`` and no stream
    duration limit (gRPC timeout headers are not capped).
    """
    config = route_pb2.RouteConfiguration(name=cluster)
    config.validate_clusters.value = False
    host = config.virtual_hosts.add(name=f"inbound|http|{port}", domains=["*"])
    route = host.routes.add(name=INBOUND_ROUTE_NAME)
    route.match.prefix = "/"
    route.route.cluster = cluster
    route.route.timeout.SetInParent()
    route.route.max_stream_duration.max_stream_duration.SetInParent()
    route.route.max_stream_duration.grpc_timeout_header_max.SetInParent()
    return config


def _check_declared(protocol: str, name: str) -> None:
    if protocol.upper() in SNIFFED_PROTOCOLS:
        raise ValueError(
            f"listener {name}: protocol sniffing is not supported; declare the port's protocol"
        )


def _tcp_to(cluster: str, access_log: bool) -> listener_components_pb2.Filter:
    return tcp_proxy_filter(build_tcp_proxy([WeightedCluster(cluster)], access_log=access_log))
