"""Gateway listeners: the Gateway servers that select a proxy → one listener per address and port.

Each :class:`GatewayServer` is one ``Server`` of one Gateway plus what the
caller resolved for it: the listen address when the server has no ``bind``
(istiod's ``0.0.0.0``; pilothouse's tests use ``127.0.0.1``), the listen port
(default: the server's port number), and the L4 routes a TCP or TLS
passthrough server forwards to.  Servers sharing an address and port share a
listener named ``<address>_<port>``; what each server contributes:

- HTTP (HTTP, HTTP2, GRPC, GRPC-Web, HTTP_PROXY): all of them share one chain
  whose HCM reads RDS ``http.<port>`` (``http.<port>.<bind>`` when the server
  sets ``bind``, as current istiod names it).  Like current istiod, HTTP
  protocols of different flavours merge; the HCM gets HTTP/2 options when any
  of them is HTTP/2 and the gRPC-Web filter when any is GRPC-Web.  ``tls.httpsRedirect`` does not
  change the listener: the route configuration redirects
  (:attr:`GatewayServer.https_redirect` tells the route side).
- HTTPS terminating TLS (SIMPLE, MUTUAL, OPTIONAL_MUTUAL, ISTIO_MUTUAL): one
  chain per server, matched on the SNI of the server's hosts (``*`` matches
  any), with its ``DownstreamTlsContext`` (:mod:`.listener_tls`) and an HCM on
  RDS ``https.<port number>.<port name>.<gateway>.<namespace>`` (plus
  ``.<bind>``), counted under the server's ``name`` when it has one.
- TLS PASSTHROUGH: one chain per :class:`SniRoute` (the TLS routes of the
  VirtualServices bound to the server, matched by the caller), matched on its
  SNI hosts, proxying TCP to its clusters.
- TLS or TCP servers that terminate TLS: one SNI chain with the TLS context and
  a ``tcp_proxy`` to the server's ``tcp_route``.
- TCP (and any other protocol) without TLS: one chain, ``tcp_proxy`` to
  ``tcp_route``.

A TLS inspector is added when any chain matches on SNI or offers ALPN.
Conflicts are resolved as istiod's gateway merge does, first server wins: a
port is either plaintext (any number of HTTP servers, or a single TCP
server) or TLS (any number of TLS servers with distinct SNI matches).  A
server that loses, has nothing to route to, or asks for AUTO_PASSTHROUGH (not
supported yet: it routes by SNI-encoded cluster names) is reported by
:func:`plan_gateway_listeners` with the reason and left out.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import (  # type: ignore[import-untyped]
    listener_components_pb2,
    listener_pb2,
)

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.xds.builders.filter_chain import (
    WeightedCluster,
    build_filter_chain,
    build_tcp_proxy,
    http_connection_manager_filter,
    needs_tls_inspector,
    server_names,
    tcp_proxy_filter,
)
from pilothouse.xds.builders.http_connection_manager import (
    GRPC_WEB,
    ListenerClass,
    build_http_connection_manager,
    is_http,
    is_http2,
)
from pilothouse.xds.builders.listener import (
    OUTBOUND,
    WILDCARD_ADDRESS,
    listener_name,
    socket_address,
    stat_prefix,
    tls_inspector,
)
from pilothouse.xds.builders.listener_tls import build_downstream_tls

Listener = listener_pb2.Listener
ServerTLSSettings = gateway_pb2.ServerTLSSettings


class ServerKind(enum.StrEnum):
    """What a gateway server does with a connection."""

    HTTP = "http"
    HTTPS = "https"
    TLS_TERMINATED = "tls-terminated"
    PASSTHROUGH = "passthrough"
    AUTO_PASSTHROUGH = "auto-passthrough"
    TCP = "tcp"


_PLAINTEXT = frozenset({ServerKind.HTTP, ServerKind.TCP})


@dataclass(frozen=True, slots=True)
class SniRoute:
    """A TLS passthrough route: the SNI names it matches and the clusters it forwards to."""

    sni_hosts: tuple[str, ...]
    destinations: tuple[WeightedCluster, ...]


@dataclass(frozen=True)
class GatewayServer:
    """One server of a Gateway, with what the caller resolved for it.

    ``server`` is kept out of the generated ``__eq__``/``__hash__``; its
    deterministic serialisation (``server_key``) stands in for it.  Treat it as
    read-only.
    """

    server: gateway_pb2.Server = field(compare=False)
    gateway_name: str
    namespace: str
    address: str = WILDCARD_ADDRESS
    """The listen address when ``server.bind`` is empty."""
    listen_port: int = 0
    """The port Envoy listens on; 0: ``server.port.number``."""
    tcp_route: tuple[WeightedCluster, ...] = ()
    """Where a TCP (or TLS-terminated TCP) server forwards."""
    tls_routes: tuple[SniRoute, ...] = ()
    """PASSTHROUGH servers: one filter chain per route."""
    server_key: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "server_key", self.server.SerializeToString(deterministic=True))

    @property
    def bind_address(self) -> str:
        return self.server.bind or self.address

    @property
    def port(self) -> int:
        return self.listen_port or self.server.port.number

    @property
    def kind(self) -> ServerKind:
        return server_kind(self.server)

    @property
    def https_redirect(self) -> bool:
        """Plain-HTTP requests to this server's hosts get a 301 to HTTPS (route side)."""
        return self.server.HasField("tls") and self.server.tls.https_redirect

    @property
    def route_name(self) -> str | None:
        """The RDS name of this server's routes (HTTP and terminated HTTPS), else None."""
        return gateway_route_name(self.server, self.gateway_name, self.namespace, self.port)


@dataclass(frozen=True, slots=True)
class SkippedServer:
    """A server left out of the listeners, and why."""

    server: GatewayServer
    reason: str


@dataclass(frozen=True, slots=True)
class GatewayListenerPlan:
    """The built listeners (sorted by address and port) and the servers left out."""

    listeners: tuple[listener_pb2.Listener, ...]
    skipped: tuple[SkippedServer, ...]


def server_kind(server: gateway_pb2.Server) -> ServerKind:
    """Classify ``server`` by its port protocol and TLS mode, as istiod does."""
    protocol = server.port.protocol.upper()
    has_tls = server.HasField("tls")
    if is_http(protocol):
        return ServerKind.HTTP
    if has_tls and server.tls.mode == ServerTLSSettings.PASSTHROUGH:
        return ServerKind.PASSTHROUGH
    if has_tls and server.tls.mode == ServerTLSSettings.AUTO_PASSTHROUGH:
        return ServerKind.AUTO_PASSTHROUGH
    if has_tls and protocol == "HTTPS":
        return ServerKind.HTTPS
    if has_tls:
        return ServerKind.TLS_TERMINATED
    return ServerKind.TCP


def gateway_route_name(
    server: gateway_pb2.Server, gateway_name: str, namespace: str, port: int = 0
) -> str | None:
    """istiod's RDS name for a gateway server's routes; None for non-HTTP servers.

    ``http.<port>`` for HTTP servers (``port``: the listen port, default the
    server's), ``https.<number>.<port name>.<gateway>.<namespace>`` for HTTPS
    servers that terminate TLS; either followed by ``.<bind>`` when the server
    sets ``bind``.
    """
    suffix = f".{server.bind}" if server.bind else ""
    kind = server_kind(server)
    if kind == ServerKind.HTTP:
        return f"http.{port or server.port.number}{suffix}"
    if kind == ServerKind.HTTPS:
        return f"https.{server.port.number}.{server.port.name}.{gateway_name}.{namespace}{suffix}"
    return None


def build_gateway_listeners(
    servers: Sequence[GatewayServer], *, access_log: bool = False
) -> list[listener_pb2.Listener]:
    """The listeners for ``servers``; servers that cannot be served are left out."""
    return list(plan_gateway_listeners(servers, access_log=access_log).listeners)


def plan_gateway_listeners(
    servers: Sequence[GatewayServer], *, access_log: bool = False
) -> GatewayListenerPlan:
    """The listeners for ``servers`` and the servers left out, each with its reason."""
    groups: dict[tuple[str, int], list[GatewayServer]] = {}
    for server in servers:
        groups.setdefault((server.bind_address, server.port), []).append(server)
    listeners = []
    skipped: list[SkippedServer] = []
    for (address, port), members in sorted(groups.items()):
        built = _build_listener(address, port, members, skipped, access_log=access_log)
        if built is not None:
            listeners.append(built)
    return GatewayListenerPlan(tuple(listeners), tuple(skipped))


def _build_listener(
    address: str,
    port: int,
    members: list[GatewayServer],
    skipped: list[SkippedServer],
    *,
    access_log: bool,
) -> listener_pb2.Listener | None:
    name = listener_name(address, port)
    prefix = stat_prefix(OUTBOUND, name)
    chains: list[listener_components_pb2.FilterChain] = []
    matches: set[tuple[str, ...]] = set()
    http_servers: list[GatewayServer] = []
    tcp_servers: list[GatewayServer] = []
    tls_servers: list[GatewayServer] = []
    for member in members:
        kind = member.kind
        if kind == ServerKind.AUTO_PASSTHROUGH:
            skipped.append(SkippedServer(member, "AUTO_PASSTHROUGH is not supported yet"))
            continue
        reason = _conflict(member, http_servers, tcp_servers, tls_servers)
        if reason:
            skipped.append(SkippedServer(member, f"{reason} on {name}"))
            continue
        if kind == ServerKind.HTTP:
            http_servers.append(member)
            continue
        try:
            new = _server_chains(member, prefix, access_log=access_log)
        except ValueError as error:
            skipped.append(SkippedServer(member, str(error)))
            continue
        if not new:
            skipped.append(SkippedServer(member, f"{kind.value} server has no route"))
            continue
        (tcp_servers if kind == ServerKind.TCP else tls_servers).append(member)
        for chain in new:
            key = tuple(chain.filter_chain_match.server_names)
            if key in matches:
                skipped.append(
                    SkippedServer(member, f"a chain with SNI {list(key) or '*'} exists on {name}")
                )
                continue
            matches.add(key)
            chains.append(chain)
    if http_servers:
        chains.append(_http_chain(http_servers, prefix, access_log=access_log))
    if not chains:
        return None
    listener = Listener(
        name=name,
        address=socket_address(address, port),
        traffic_direction=base_pb2.OUTBOUND,
        filter_chains=chains,
    )
    if needs_tls_inspector(chains):
        listener.listener_filters.append(tls_inspector())
    return listener


def _conflict(
    member: GatewayServer,
    http_servers: list[GatewayServer],
    tcp_servers: list[GatewayServer],
    tls_servers: list[GatewayServer],
) -> str:
    """Why ``member`` cannot join the servers accepted so far on its port ("" if it can)."""
    kind = member.kind
    plaintext_port = bool(http_servers or tcp_servers)
    if kind not in _PLAINTEXT:
        return "TLS and plaintext servers cannot share a port" if plaintext_port else ""
    if tls_servers:
        return "plaintext and TLS servers cannot share a port"
    if kind == ServerKind.TCP:
        return "a TCP server cannot share its port" if plaintext_port else ""
    if tcp_servers:
        return "an HTTP server cannot share a port with a TCP server"
    return ""


def _http_chain(
    members: list[GatewayServer], prefix: str, *, access_log: bool
) -> listener_components_pb2.FilterChain:
    route = members[0].route_name
    assert route is not None  # HTTP servers always have one
    manager = build_http_connection_manager(
        prefix,
        rds_name=route,
        listener_class=ListenerClass.GATEWAY,
        protocol=_merged_protocol(members),
        access_log=access_log,
    )
    return build_filter_chain([http_connection_manager_filter(manager)])


def _merged_protocol(members: list[GatewayServer]) -> str:
    """The protocol whose HCM serves every merged HTTP server: GRPC-Web > HTTP/2 > HTTP."""
    protocols = [member.server.port.protocol.upper() for member in members]
    if GRPC_WEB in protocols:
        return GRPC_WEB
    return next((protocol for protocol in protocols if is_http2(protocol)), protocols[0])


def _server_chains(
    member: GatewayServer, prefix: str, *, access_log: bool
) -> list[listener_components_pb2.FilterChain]:
    server = member.server
    kind = member.kind
    if kind == ServerKind.HTTPS:
        route = member.route_name
        assert route is not None
        manager = build_http_connection_manager(
            server.name or prefix,
            rds_name=route,
            listener_class=ListenerClass.GATEWAY,
            protocol=server.port.protocol,
            access_log=access_log,
        )
        return [
            build_filter_chain(
                [http_connection_manager_filter(manager)],
                sni=server_names(server.hosts),
                tls=build_downstream_tls(server.tls, http=True),
            )
        ]
    if kind == ServerKind.PASSTHROUGH:
        return [
            build_filter_chain(
                [_tcp(route.destinations, prefix, access_log)], sni=server_names(route.sni_hosts)
            )
            for route in member.tls_routes
            if route.destinations
        ]
    if not member.tcp_route:
        return []
    filters = [_tcp(member.tcp_route, prefix, access_log)]
    if kind == ServerKind.TLS_TERMINATED:
        return [
            build_filter_chain(
                filters,
                sni=server_names(server.hosts),
                tls=build_downstream_tls(server.tls, http=False),
            )
        ]
    return [build_filter_chain(filters)]


def _tcp(
    destinations: Sequence[WeightedCluster], prefix: str, access_log: bool
) -> listener_components_pb2.Filter:
    return tcp_proxy_filter(
        build_tcp_proxy(
            destinations,
            stat_prefix=None if len(destinations) == 1 else prefix,
            access_log=access_log,
        )
    )
