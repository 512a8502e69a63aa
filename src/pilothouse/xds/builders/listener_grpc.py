"""Listeners for proxyless gRPC: the client's API listener and the xDS server's listener.

A gRPC client dialing ``xds:///greeter.local`` asks LDS for a listener named
exactly ``greeter.local``.  :func:`build_grpc_api_listener` gives it one with
no address and ``api_listener.api_listener = Any(HttpConnectionManager)``;
the HCM reads RDS over ADS (or carries an inline route configuration) and
lists only the router filter: gRPC refuses an HCM without it, and NACKs HTTP
filters it does not implement.  (Stock Envoy refuses ``api_listener``: only
Envoy Mobile has that extension; the listener is for gRPC alone.)

A gRPC server started with ``xds=True`` asks for the listener named by its
bootstrap's ``server_listener_resource_name_template`` with ``ip:port``
filled in (Istio's template: ``xds.istio.io/grpc/lds/inbound/%s``;
:func:`grpc_server_listener_name`), and does not serve until it has one.
:func:`build_grpc_server_listener` builds it: that address, one filter chain
whose HCM has an inline route configuration and the router filter.  Its
routes must use ``non_forwarding_action`` (a server does not forward);
:func:`grpc_server_route_config` builds the usual one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]

from pilothouse.xds.builders.filter_chain import build_filter_chain, http_connection_manager_filter
from pilothouse.xds.builders.http_connection_manager import build_router_only_connection_manager
from pilothouse.xds.builders.listener import INBOUND, socket_address, stat_prefix, typed

Listener = listener_pb2.Listener

ISTIO_SERVER_LISTENER_TEMPLATE: Final = "xds.istio.io/grpc/lds/inbound/%s"


def build_grpc_api_listener(
    name: str,
    *,
    rds_name: str | None = None,
    route_config: route_pb2.RouteConfiguration | None = None,
) -> listener_pb2.Listener:
    """The API listener ``name`` (a target's authority) for a proxyless gRPC client.

    Give exactly one of ``rds_name`` (fetched over ADS) and ``route_config``.
    """
    manager = build_router_only_connection_manager(
        name, rds_name=rds_name, route_config=route_config
    )
    listener = Listener(name=name)
    listener.api_listener.api_listener.CopyFrom(typed(manager))
    return listener


def grpc_server_listener_name(
    address: str, port: int, template: str = ISTIO_SERVER_LISTENER_TEMPLATE
) -> str:
    """The listener name a gRPC xDS server asks for: ``template`` with ``ip:port``."""
    host = f"[{address}]" if ":" in address else address
    return template.replace("%s", f"{host}:{port}")


def build_grpc_server_listener(
    name: str, address: str, port: int, route_config: route_pb2.RouteConfiguration
) -> listener_pb2.Listener:
    """The listener for a gRPC xDS server on ``address:port``, routing with ``route_config``."""
    manager = build_router_only_connection_manager(
        stat_prefix(INBOUND, f"{address}_{port}"), route_config=route_config
    )
    listener = Listener(
        name=name,
        address=socket_address(address, port),
        traffic_direction=base_pb2.INBOUND,
    )
    listener.filter_chains.append(
        build_filter_chain([http_connection_manager_filter(manager)], connect_timeout=None)
    )
    return listener


def grpc_server_route_config(
    name: str, domains: Sequence[str] = ("*",)
) -> route_pb2.RouteConfiguration:
    """One virtual host for ``domains`` whose only route serves every path locally."""
    config = route_pb2.RouteConfiguration(name=name)
    host = config.virtual_hosts.add(name=name, domains=list(domains))
    route = host.routes.add()
    route.match.prefix = "/"
    route.non_forwarding_action.SetInParent()
    return config
