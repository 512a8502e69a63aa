"""What routes and endpoint assignments read of DestinationRules, and whether a push
changed it for a scope.

Routes read a DestinationRule for one thing only: the consistent-hash load balancers
that become route hash policies (the cluster a route names is spelled from the
VirtualService, never checked against the rule's subsets). :func:`hash_policy_inputs`
keeps exactly that of a rule; the route generators build their hash policies from those
bytes alone (``xds/generators/routing.py``), so two rules with equal bytes give equal
routes. Endpoint assignments (EDS) read a rule's subsets, names and labels
(:func:`subsets_of`), and nothing else of it.

:func:`routes_read_alike` and :func:`endpoints_read_alike` compare, for one scope key,
what those read of the rules in two push contexts: the same hostnames with the same
services, and for each one whose rule is a different object, equal readings. When that
holds, a push whose other changes are of kinds the type never reads cannot change the
scope's routes (RDS) or assignments (EDS), and the pipeline says so in the request it
queues (:mod:`pilothouse.push.affected_types`).

:func:`moved_rules` names the rules that differ between two DestinationRule indexes:
the pipeline keeps those a request did not name (they reached a context before their
own request came), because a later comparison would no longer see them change.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.config.model import Config, ConfigKey
from pilothouse.push.indexes import DestinationRuleIndex
from pilothouse.push.scope import ProxyScope

Subsets = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
Reading = Callable[[Config | None], object]
"""What one type reads of a rule (:func:`hash_policy_inputs`, :func:`subsets_of`)."""
RuleReads = MutableMapping[tuple[Reading, Config], object]
"""Readings of rules already made (one mapping per planned push)."""


def subsets_of(rule: Config | None) -> Subsets:
    """(name, sorted labels) of every subset of a DestinationRule."""
    if rule is None:
        return ()
    spec: Any = rule.spec
    return tuple((s.name, tuple(sorted(s.labels.items()))) for s in spec.subsets)


def hash_policy_inputs(rule: Config | None) -> bytes | None:
    """What routes read of a DestinationRule: its load balancers.

    The rule with every other component left out, keeping where each load balancer
    sits (top level, subset, port-level entries, which replace the load balancer even
    when they set none), serialised; None, as for no rule, when no consistent hash is set
    anywhere in it. Two rules with equal answers give every cluster the same hash
    policy, so routes built under one hold under the other.
    """
    if rule is None:
        return None
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


def routes_read_alike(old: ProxyScope, new: ProxyScope, reads: RuleReads) -> bool:
    """Whether the routes of ``new`` read of its DestinationRules what those of ``old``
    read of theirs (:func:`hash_policy_inputs`; see :func:`_read_alike`)."""
    return _read_alike(old, new, hash_policy_inputs, reads)


def endpoints_read_alike(old: ProxyScope, new: ProxyScope, reads: RuleReads) -> bool:
    """Whether the endpoint assignments of ``new`` read of its DestinationRules what
    those of ``old`` read of theirs (:func:`subsets_of`; see :func:`_read_alike`)."""
    return _read_alike(old, new, subsets_of, reads)


def _read_alike(old: ProxyScope, new: ProxyScope, reading: Reading, reads: RuleReads) -> bool:
    """Same scope key, same services by hostname (in the same order), and for every
    hostname whose rule is another object, the same ``reading`` of it. ``reads``
    remembers readings already made."""
    if old is new:
        return True
    if old.key != new.key:
        return False
    before, after = old.by_hostname, new.by_hostname
    if len(before) != len(after):
        return False
    for (host, was), (now_host, service) in zip(before.items(), after.items(), strict=True):
        if host != now_host or (was is not service and was != service):
            return False
        rule, held = old.destination_rule(was), new.destination_rule(service)
        if rule is not held and _read(reading, rule, reads) != _read(reading, held, reads):
            return False
    return True


def _read(reading: Reading, rule: Config | None, reads: RuleReads) -> object:
    if rule is None:
        return reading(None)
    try:
        return reads[reading, rule]
    except KeyError:
        found = reads[reading, rule] = reading(rule)
        return found


def moved_rules(old: DestinationRuleIndex, new: DestinationRuleIndex) -> frozenset[ConfigKey]:
    """The keys of the rules added, removed or replaced between two indexes."""
    if old is new:
        return frozenset()
    before, after = old.by_key, new.by_key
    return frozenset(
        key for key in before.keys() | after.keys() if _moved(before.get(key), after.get(key))
    )


def _moved(was: Config | None, now: Config | None) -> bool:
    if was is now:
        return False
    return was is None or now is None or was != now
