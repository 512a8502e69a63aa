"""What the route and listener generators share: destinations, hash policies, delegates.

Everything here is computed per scope (and memoised in the PushContext), so the
thousand proxies of one scope resolve their destinations once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.config.model import ConfigKey
from pilothouse.push.context import PushContext
from pilothouse.push.indexes import RouteEntry
from pilothouse.push.scope import ProxyScope
from pilothouse.xds.builders.load_balancer import hash_policy
from pilothouse.xds.builders.names import parse_cluster_name
from pilothouse.xds.builders.route_destination import DestinationResolver, service_resolver
from pilothouse.xds.builders.traffic_policy import effective_policy


def ports_by_host(context: PushContext, scope: ProxyScope) -> Mapping[str, Sequence[int]]:
    """``{hostname: [port numbers]}`` of every service the scope sees."""
    found: Mapping[str, Sequence[int]] = context.memo(
        ("ports-by-host", scope.key),
        lambda: {
            host: tuple(p.number for p in service.ports)
            for host, service in scope.by_hostname.items()
        },
    )
    return found


def resolver_for(context: PushContext, scope: ProxyScope, port: int) -> DestinationResolver:
    return service_resolver(ports_by_host(context, scope), current_port=port)


def hash_policies(context: PushContext, scope: ProxyScope) -> Any:
    """``cluster name → route hash policy`` from the DestinationRule's consistent hash."""

    def lookup(cluster: str) -> Sequence[rc_pb2.RouteAction.HashPolicy]:
        parsed = parse_cluster_name(cluster)
        if parsed is None:
            return ()
        service = scope.service(parsed.host)
        if service is None:
            return ()
        rule = scope.destination_rule(service)
        if rule is None:
            return ()
        policy = effective_policy(rule.spec, parsed.port, parsed.subset or None)  # type: ignore[arg-type]
        if not policy.load_balancer.HasField("consistent_hash"):
            return ()
        return hash_policy(policy.load_balancer.consistent_hash)

    return lookup


def delegates(context: PushContext) -> Any:
    """``(name, namespace) → VirtualService spec`` for delegate lookups."""
    by_key = {e.config.key: e for e in context.virtual_services.entries}

    def lookup(name: str, namespace: str) -> vs_pb2.VirtualService | None:
        entry = by_key.get(ConfigKey("VirtualService", namespace, name))
        return None if entry is None else entry.config.spec  # type: ignore[return-value]

    return lookup


def visible_routes(context: PushContext, scope: ProxyScope) -> tuple[RouteEntry, ...]:
    """The VirtualServices the scope sees, in a stable order (oldest first, then by key)."""
    entries: tuple[RouteEntry, ...] = context.memo(
        ("visible-routes", scope.key),
        lambda: tuple(
            sorted(
                (
                    e
                    for e in context.virtual_services.entries
                    if e.config.key in scope.virtual_services
                ),
                key=_age,
            )
        ),
    )
    return entries


def _age(entry: RouteEntry) -> tuple[Any, ...]:
    created = entry.config.creation_time
    return (created is None, created.timestamp() if created else 0.0, entry.config.key)
