"""LDS for proxyless gRPC: API listeners for client targets, inbound listeners for servers.

gRPC names every listener it wants, and gets exactly those it can use:

- a client target (``greeter.default.svc.cluster.local:50051`` or a short form
  Istio accepts, see :mod:`.grpc_targets`) that resolves to a service port the
  proxy's scope sees gets an API listener named exactly as requested. Its HTTP
  connection manager reads the route configuration of the same name over ADS
  (or, with ``inline_routes``, carries it inline) and lists the fault filter
  (routes may inject faults) and the router;
- a server listener name (``xds.istio.io/grpc/lds/inbound/<ip>:<port>``, or
  gRPC's ``grpc/server?xds.resource.listening_address=<ip>:<port>``) gets a
  listener on that address whose single filter chain serves every path locally
  (``non_forwarding_action``), so the xDS-enabled server starts accepting
  connections. Any well-formed address gets one: the server asked for it;
- any other name gets nothing, which the client reports as "does not exist".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.fault.v3 import fault_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import LDS
from pilothouse.push.cache import Resource
from pilothouse.registry.model import Labels
from pilothouse.xds.builders.http_connection_manager import (
    FAULT_FILTER,
    build_router_only_connection_manager,
    http_filter,
    router_filter,
)
from pilothouse.xds.builders.listener import typed
from pilothouse.xds.builders.listener_grpc import (
    build_grpc_server_listener,
    grpc_server_route_config,
)
from pilothouse.xds.builders.names import inbound_cluster_name
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.grpc_rds import (
    GrpcRouteInputs,
    grpc_route_configuration,
    grpc_target,
)
from pilothouse.xds.generators.grpc_targets import parse_server_listener_name
from pilothouse.xds.generators.scope_inputs import ScopeInputs, scope_inputs


class GrpcListenerGenerator:
    type_url = LDS

    def __init__(self, *, inline_routes: bool = False) -> None:
        self.inline_routes = inline_routes

    def generate(self, given: GenerationInput) -> Resources:
        scope = scope_inputs(given)
        names = given.names if given.names is not None else frozenset(_all_names(scope))
        labels = given.proxy.labels
        cache = given.cache
        out: dict[str, Resource] = {}
        for name in names:
            inputs = GrpcListenerInputs(scope, name, self.inline_routes, labels)
            resource = cache.value(inputs, functools.partial(build_grpc_listener, inputs))
            if resource is not None:
                out[name] = resource
        return out


@dataclass(frozen=True, slots=True)
class GrpcListenerInputs:
    """What one proxyless listener is built from: the scope's inputs, its name, whether
    it carries its routes inline, and the proxy's labels (read by inline routes)."""

    scope: ScopeInputs
    name: str
    inline_routes: bool
    labels: Labels


def build_grpc_listener(inputs: GrpcListenerInputs) -> Resource | None:
    """The listener ``inputs`` name, encoded (None: the name means nothing here)."""
    name = inputs.name
    server = parse_server_listener_name(name)
    if server is not None:
        route_config = grpc_server_route_config(inbound_cluster_name(server.port))
        listener = build_grpc_server_listener(name, server.address, server.port, route_config)
        return encode(listener, name)
    target = grpc_target(inputs.scope, name)
    if target is None:
        return None
    if inputs.inline_routes:
        routes = GrpcRouteInputs(inputs.scope, name, inputs.labels)
        listener = grpc_client_listener(name, route_config=grpc_route_configuration(routes, target))
    else:
        listener = grpc_client_listener(name, rds_name=name)
    return encode(listener, name)


def grpc_client_listener(
    name: str, *, rds_name: str | None = None, route_config: Any = None
) -> listener_pb2.Listener:
    """The API listener ``name``: an HCM with RDS ``rds_name`` or ``route_config`` inline,
    the fault filter and the router."""
    manager = build_router_only_connection_manager(
        name, rds_name=rds_name, route_config=route_config
    )
    del manager.http_filters[:]
    manager.http_filters.extend([http_filter(FAULT_FILTER, fault_pb2.HTTPFault()), router_filter()])
    listener = listener_pb2.Listener(name=name)
    listener.api_listener.api_listener.CopyFrom(typed(manager))
    return listener


def _all_names(scope: ScopeInputs) -> list[str]:
    return [
        f"{service.hostname}:{port.number}"
        for service in scope.by_hostname.values()
        for port in service.ports
    ]
