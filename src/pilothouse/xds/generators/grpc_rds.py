"""RDS for proxyless gRPC: one route configuration per client listener, named like it.

A client listener ``greeter.default.svc.cluster.local:50051`` points at the route
configuration of the same name. It has one virtual host for the service port,
whose domains start with that name (the authority the client dialed, which gRPC
matches exactly) and go on with the forms a sidecar would accept. Its routes are
the Envoy routes of the first VirtualService (oldest first) bound to the mesh
whose hosts cover the service and that has routes for the port
(:func:`~pilothouse.xds.builders.route.build_http_routes`), else the default route
to the service's cluster.

Each route is then put in the form gRPC reads (:func:`grpc_route`):

- a VirtualService ``timeout`` is ``max_stream_duration`` (both
  ``max_stream_duration`` and ``grpc_timeout_header_max``) and nothing else: gRPC
  ignores ``RouteAction.timeout`` and caps each call's deadline with this instead;
  no timeout (``0s``) leaves it unset, so only the application's deadline counts;
- a ``useSourceIp`` consistent hash becomes gRPC's channel-id hash
  (``filter_state`` ``io.grpc.channel_id``): every call of one client channel goes
  to the same endpoint, which is what source-IP affinity means for a process that
  is its own proxy;
- per-route filter configs other than fault injection are dropped (gRPC NACKs a
  route configuration that configures a filter it does not implement, such as
  CORS); fault injection (delays, aborts with gRPC or HTTP status) stays, and the
  listener lists the fault filter.

Header matches (gRPC metadata), path matches on ``/package.Service/Method``,
weighted destinations, subsets, retries (gRPC reads ``num_retries``, the gRPC
status names in ``retry_on`` and the back-off) and header hash policies pass
through unchanged.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2
from google.protobuf import duration_pb2

from pilothouse.protocol.type_urls import RDS
from pilothouse.push.cache import Resource
from pilothouse.push.hostnames import host_matches
from pilothouse.registry.model import Labels
from pilothouse.xds.builders.names import outbound_cluster_name
from pilothouse.xds.builders.route import build_default_route, build_http_routes
from pilothouse.xds.builders.route_fault import FAULT_FILTER
from pilothouse.xds.builders.route_virtual_host import (
    build_route_configuration,
    build_virtual_host,
    virtual_host_domains,
)
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.grpc_targets import GrpcTarget, resolve_target
from pilothouse.xds.generators.routing import resolver_for
from pilothouse.xds.generators.scope_inputs import ScopeInputs, scope_inputs

GRPC_CHANNEL_ID: Final = "io.grpc.channel_id"
GRPC_ROUTE_FILTERS: Final = frozenset({FAULT_FILTER})

HashPolicy = rc_pb2.RouteAction.HashPolicy


class GrpcRouteGenerator:
    type_url = RDS

    def generate(self, given: GenerationInput) -> Resources:
        scope = scope_inputs(given)
        names = given.names if given.names is not None else frozenset(_all_names(scope))
        labels = given.proxy.labels
        cache = given.cache
        out: dict[str, Resource] = {}
        for name in names:
            inputs = GrpcRouteInputs(scope, name, labels)
            resource = cache.value(inputs, functools.partial(build_grpc_route, inputs))
            if resource is not None:
                out[name] = resource
        return out


@dataclass(frozen=True, slots=True)
class GrpcRouteInputs:
    """What one proxyless route configuration is built from: the scope's inputs, its name
    (the client listener's) and the proxy's labels (``sourceLabels`` matches)."""

    scope: ScopeInputs
    name: str
    labels: Labels


def build_grpc_route(inputs: GrpcRouteInputs) -> Resource | None:
    """The route configuration ``inputs`` name, encoded (None: the name means nothing)."""
    target = grpc_target(inputs.scope, inputs.name)
    if target is None:
        return None
    return encode(grpc_route_configuration(inputs, target), inputs.name)


def grpc_target(scope: ScopeInputs, name: str) -> GrpcTarget | None:
    """The service port the client listener ``name`` means to the scope's proxies."""
    return resolve_target(name, scope.by_hostname, scope.namespace, scope.domain_suffix)


def _all_names(scope: ScopeInputs) -> list[str]:
    return [
        f"{service.hostname}:{port.number}"
        for service in scope.by_hostname.values()
        for port in service.ports
    ]


def grpc_route_configuration(
    inputs: GrpcRouteInputs, target: GrpcTarget
) -> route_pb2.RouteConfiguration:
    """The route configuration named ``target.name``, for one service port."""
    scope = inputs.scope
    host, port = target.service.hostname, target.port.number
    routes = _virtual_service_routes(inputs, host, port)
    if not routes:
        cluster = outbound_cluster_name(host, port)
        routes = [build_default_route(cluster, hash_policy=scope.hash_policies(cluster))]
    sidecar_domains = virtual_host_domains(
        host, port, scope.namespace, domain_suffix=scope.domain_suffix
    )
    domains = dict.fromkeys([target.name, *sidecar_domains])
    virtual_host = build_virtual_host(
        f"{host}:{port}", list(domains), [grpc_route(route) for route in routes]
    )
    return build_route_configuration(target.name, [virtual_host])


def _virtual_service_routes(inputs: GrpcRouteInputs, host: str, port: int) -> list[Any]:
    scope = inputs.scope
    for entry, _ in scope.routes:
        if not entry.for_mesh or not any(host_matches(h, host) for h in entry.hosts):
            continue
        routes = build_http_routes(
            entry.config.spec,  # type: ignore[arg-type]
            entry.config.namespace,
            resolver_for(scope.ports_by_host, port),
            port=port,
            gateway=None,
            vs_name=entry.config.name,
            proxy_labels=inputs.labels,
            proxy_namespace=scope.namespace,
            hash_policy_for=scope.hash_policies,
            lookup_delegate=scope.delegate_lookup,
            domain_suffix=scope.domain_suffix,
        )
        if routes:
            return routes
    return []


def grpc_route(route: rc_pb2.Route) -> rc_pb2.Route:
    """A copy of an Envoy route in the form gRPC reads (see the module docstring)."""
    out = rc_pb2.Route()
    out.CopyFrom(route)
    for key in [k for k in out.typed_per_filter_config if k not in GRPC_ROUTE_FILTERS]:
        del out.typed_per_filter_config[key]
    if out.WhichOneof("action") != "route":
        return out
    action = out.route
    timeout = duration_pb2.Duration()
    timeout.CopyFrom(action.timeout)
    for field in ("timeout", "max_grpc_timeout", "max_stream_duration"):
        action.ClearField(field)
    if timeout.seconds or timeout.nanos:
        action.max_stream_duration.max_stream_duration.CopyFrom(timeout)
        action.max_stream_duration.grpc_timeout_header_max.CopyFrom(timeout)
    policies = [_grpc_hash_policy(policy) for policy in action.hash_policy]
    del action.hash_policy[:]
    action.hash_policy.extend(policies)
    return out


def _grpc_hash_policy(policy: Any) -> Any:
    """A new hash policy: the channel id for a source-IP one, else a copy."""
    if policy.WhichOneof("policy_specifier") == "connection_properties":
        channel = HashPolicy(terminal=policy.terminal)
        channel.filter_state.key = GRPC_CHANNEL_ID
        return channel
    copy = HashPolicy()
    copy.CopyFrom(policy)
    return copy
