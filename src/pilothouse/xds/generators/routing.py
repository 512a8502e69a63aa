"""What the route and listener generators share: destinations, hash policies, delegates.

Everything here is computed per scope (and memoised in the PushContext), so the
thousand proxies of one scope resolve their destinations once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.config.model import Config, ConfigKey
from pilothouse.push.context import PushContext
from pilothouse.push.indexes import RouteEntry
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.model import Labels
from pilothouse.xds.builders.load_balancer import hash_policy
from pilothouse.xds.builders.names import parse_cluster_name
from pilothouse.xds.builders.route_destination import DestinationResolver, service_resolver
from pilothouse.xds.builders.traffic_policy import effective_policy
from pilothouse.xds.generators.context_memo import context_memo
from pilothouse.xds.generators.scope_memo import predecessor_memo, scope_memo


def ports_by_host(context: PushContext, scope: ProxyScope) -> Mapping[str, Sequence[int]]:
    """``{hostname: [port numbers]}`` of every service the scope sees."""
    memo = scope_memo(scope)
    found = memo.ports_by_host
    if found is None:
        found = memo.ports_by_host = {
            host: tuple(p.number for p in service.ports)
            for host, service in scope.by_hostname.items()
        }
    return found


def resolver_for(context: PushContext, scope: ProxyScope, port: int) -> DestinationResolver:
    return service_resolver(ports_by_host(context, scope), current_port=port)


def hash_policies(context: PushContext, scope: ProxyScope) -> Any:
    """``cluster name → route hash policy`` from the DestinationRule's consistent hash.

    One lookup per scope, remembering each cluster's answer: every route
    configuration of the scope asks about the same clusters.
    """
    memo = scope_memo(scope)
    found = memo.hash_policies
    if found is None:
        found = memo.hash_policies = _hash_policy_lookup(scope)
    return found


def _hash_policy_lookup(scope: ProxyScope) -> Callable[[str], Sequence[Any]]:
    answers: dict[str, Sequence[rc_pb2.RouteAction.HashPolicy]] = {}

    def compute(cluster: str) -> Sequence[rc_pb2.RouteAction.HashPolicy]:
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
        return tuple(hash_policy(policy.load_balancer.consistent_hash))

    def lookup(cluster: str) -> Sequence[rc_pb2.RouteAction.HashPolicy]:
        answer = answers.get(cluster)
        if answer is None:
            answer = answers[cluster] = compute(cluster)
        return answer

    return lookup


def hash_policy_inputs(context: PushContext, rule: Config | None) -> bytes | None:
    """What :func:`hash_policies` can read of a DestinationRule: its load balancer settings.

    The rule with every other component left out, keeping where each load balancer
    sits (top level, subset, port-level entries, which replace the load balancer even
    when they set none), serialised; None, as for no rule, when no consistent hash is set
    anywhere in it. Two rules with equal answers give every cluster the same hash
    policy, so routes built under one hold under the other.
    """
    if rule is None:
        return None
    known = context_memo(context).hash_policy_inputs
    try:
        return known[rule]
    except KeyError:
        found = known[rule] = _balancers_only(rule)
        return found


def _balancers_only(rule: Config) -> bytes | None:
    spec: Any = rule.spec
    if not _hashes(spec.traffic_policy) and not any(
        _hashes(s.traffic_policy) for s in spec.subsets
    ):
        return None  # no cluster of the rule hashes: as good as no rule
    view = dr_pb2.DestinationRule()
    if spec.HasField("traffic_policy"):
        _copy_balancers(view.traffic_policy, spec.traffic_policy)
    for subset in spec.subsets:
        kept = view.subsets.add(name=subset.name)
        if subset.HasField("traffic_policy"):
            _copy_balancers(kept.traffic_policy, subset.traffic_policy)
    return view.SerializeToString(deterministic=True)


def _hashes(policy: dr_pb2.TrafficPolicy) -> bool:
    """Whether a consistent hash is set anywhere in ``policy`` (top level or per port)."""
    return policy.load_balancer.HasField("consistent_hash") or any(
        e.load_balancer.HasField("consistent_hash") for e in policy.port_level_settings
    )


def _copy_balancers(target: dr_pb2.TrafficPolicy, source: dr_pb2.TrafficPolicy) -> None:
    target.SetInParent()
    if source.HasField("load_balancer"):
        target.load_balancer.CopyFrom(source.load_balancer)
    for entry in source.port_level_settings:
        kept = target.port_level_settings.add()
        if entry.HasField("port"):
            kept.port.CopyFrom(entry.port)
        if entry.HasField("load_balancer"):
            kept.load_balancer.CopyFrom(entry.load_balancer)


def delegates(context: PushContext) -> Any:
    """``(name, namespace) → VirtualService spec`` for delegate lookups (one per context)."""
    memo = context_memo(context)
    found = memo.delegates
    if found is None:
        found = memo.delegates = _delegate_lookup(context.virtual_services.by_key)
    return found


def _delegate_lookup(
    by_key: Mapping[ConfigKey, RouteEntry],
) -> Callable[[str, str], vs_pb2.VirtualService | None]:
    def lookup(name: str, namespace: str) -> vs_pb2.VirtualService | None:
        entry = by_key.get(ConfigKey("VirtualService", namespace, name))
        return None if entry is None else entry.config.spec  # type: ignore[return-value]

    return lookup


def label_key(context: PushContext, labels: Labels) -> tuple[tuple[tuple[str, str], ...], ...]:
    """What routes can read of a proxy's labels: the ``sourceLabels`` selectors they meet.

    Proxies whose labels meet the same selectors get the same routes, so route
    configurations are shared by them (by every proxy of a scope when no
    VirtualService uses ``sourceLabels``).
    """
    selectors = context.virtual_services.source_selectors
    if not selectors:
        return ()
    return tuple(s for s in selectors if all(labels.get(k) == v for k, v in s))


def visible_routes(context: PushContext, scope: ProxyScope) -> tuple[RouteEntry, ...]:
    """The VirtualServices the scope sees, in a stable order (oldest first, then by key)."""
    memo = scope_memo(scope)
    entries = memo.visible_routes
    if entries is None:
        entries = memo.visible_routes = _visible_routes(context, scope)
    return entries


def _visible_routes(context: PushContext, scope: ProxyScope) -> tuple[RouteEntry, ...]:
    previous = scope.predecessor
    if previous is not None and previous.virtual_services == scope.virtual_services:
        # same VirtualService index (see ProxyScope.predecessor), same keys: same entries
        held = predecessor_memo(scope)
        known = held.visible_routes if held is not None else None
        if known is not None:
            return known
    return tuple(
        sorted(
            (
                entry
                for key in scope.virtual_services
                if (entry := context.virtual_services.by_key.get(key)) is not None
            ),
            key=_age,
        )
    )


def _age(entry: RouteEntry) -> tuple[Any, ...]:
    created = entry.config.creation_time
    return (created is None, created.timestamp() if created else 0.0, entry.config.key)
