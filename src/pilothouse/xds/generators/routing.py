"""What the route and listener builders derive from their inputs: destinations, hash
policies, delegates, and the proxy labels routes match.

Each function here reads only the values it is given, which are fields of a scope's
inputs (:class:`~pilothouse.xds.generators.scope_inputs.ScopeInputs`) or of a route
configuration's (``RouteInputs``): never a PushContext, a proxy scope or a proxy. Two
of them come in pairs, one half making a part of the inputs, the other reading it back:

- ``hash_policy_inputs`` (:mod:`pilothouse.push.rule_reads`, which the push pipeline
  also compares across contexts) keeps of a DestinationRule only what hash policies read
  (its load balancers, serialised); :func:`hash_policy_lookup` derives the route hash
  policy of each cluster from those bytes alone;
- :func:`label_key` keeps of a proxy's labels only the ``sourceLabels`` selectors they
  meet; :func:`labels_meeting` gives labels that meet exactly those selectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import virtual_service
from pilothouse.xds.builders.load_balancer import hash_policy
from pilothouse.xds.builders.names import parse_cluster_name
from pilothouse.xds.builders.route_action import HashPolicyLookup
from pilothouse.xds.builders.route_delegate import DelegateLookup
from pilothouse.xds.builders.route_destination import DestinationResolver, service_resolver
from pilothouse.xds.builders.traffic_policy import effective_policy

LabelKey = tuple[tuple[tuple[str, str], ...], ...]
"""The ``sourceLabels`` selectors a proxy meets (see :func:`label_key`)."""


def resolver_for(ports_by_host: Mapping[str, Sequence[int]], port: int) -> DestinationResolver:
    """Destinations of routes built for ``port``, among the services' ports."""
    return service_resolver(ports_by_host, current_port=port)


def hash_policy_lookup(balancers: Mapping[str, bytes]) -> HashPolicyLookup:
    """``cluster name → route hash policies``, from each hostname's
    ``hash_policy_inputs`` (hosts with none are left out: they hash nothing).

    The merged load balancer of a cluster (:func:`effective_policy`) is the same under
    those bytes, read back as a DestinationRule, as under the whole rule. Each cluster's
    answer is remembered: every route configuration of a scope asks about the same ones.
    """
    answers: dict[str, Sequence[rc_pb2.RouteAction.HashPolicy]] = {}
    rules: dict[bytes, dr_pb2.DestinationRule] = {}

    def compute(cluster: str) -> Sequence[rc_pb2.RouteAction.HashPolicy]:
        parsed = parse_cluster_name(cluster)
        if parsed is None:
            return ()
        held = balancers.get(parsed.host)
        if held is None:
            return ()
        rule = rules.get(held)
        if rule is None:
            rule = rules[held] = dr_pb2.DestinationRule.FromString(held)
        policy = effective_policy(rule, parsed.port, parsed.subset or None)
        if not policy.load_balancer.HasField("consistent_hash"):
            return ()
        return tuple(hash_policy(policy.load_balancer.consistent_hash))

    def lookup(cluster: str) -> Sequence[rc_pb2.RouteAction.HashPolicy]:
        answer = answers.get(cluster)
        if answer is None:
            answer = answers[cluster] = compute(cluster)
        return answer

    return lookup


def delegate_lookup(delegates: Sequence[tuple[ConfigKey, Config | None]]) -> DelegateLookup:
    """``(name, namespace) → VirtualService spec`` among ``delegates`` (None: not there).

    The delegates of a scope's inputs are every VirtualService its routes delegate to
    (one level, as delegation goes), so a lookup never needs any other.
    """
    by_key = {key: config for key, config in delegates if config is not None}

    def lookup(name: str, namespace: str) -> vs_pb2.VirtualService | None:
        config = by_key.get(ConfigKey(virtual_service.KIND.name, namespace, name))
        return None if config is None else config.spec  # type: ignore[return-value]

    return lookup


def label_key(
    selectors: Sequence[tuple[tuple[str, str], ...]], labels: Mapping[str, str]
) -> LabelKey:
    """What routes can read of a proxy's labels: the ``sourceLabels`` ``selectors`` (every
    one in the context's VirtualServices) they meet.

    Proxies whose labels meet the same selectors get the same routes, so route
    configurations are shared by them (by every proxy of a scope when no
    VirtualService uses ``sourceLabels``).
    """
    if not selectors:
        return ()
    return tuple(s for s in selectors if all(labels.get(k) == v for k, v in s))


def labels_meeting(key: LabelKey) -> dict[str, str]:
    """Labels that meet exactly the selectors a proxy's labels meet, given :func:`label_key`.

    The union of the selectors met. It meets each of them; and it meets no selector
    the proxy's labels do not, since for every label name it holds either the proxy's
    own value or nothing. A route match's ``sourceLabels`` is one of the selectors, or
    (a delegate's match merged with its root's) the union of two, met exactly when both
    are; so routes built with these labels are those built with the proxy's own.
    """
    return {name: value for selector in key for name, value in selector}
