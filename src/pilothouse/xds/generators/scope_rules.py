"""What a scope's generators read of its DestinationRules, gathered once per scope.

Three inputs values are gathered from a scope's services and their DestinationRules:
the clusters' (each rule by revision, cds.py), the endpoint names' (each rule's subsets,
eds.py) and the listeners' and routes' (each rule's consistent-hash load balancers,
scope_inputs.py). :class:`ScopeRules` walks the services once for all three: each
service with its rule's :class:`~pilothouse.push.inputs.ConfigRevision` and the
:class:`RuleReadings` of that revision, which the resource cache keeps under
:class:`RuleInputs` (a rule edit reads one rule again, not every rule of every scope
that sees it). A scope of a thousand services costs one cache lookup per service, not
one per service and reading.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from pilothouse.push.cache import ResourceCache
from pilothouse.push.inputs import ConfigRevision
from pilothouse.push.rule_reads import Subsets, hash_policy_inputs, subsets_of
from pilothouse.push.scope import ProxyScope, ScopeContext
from pilothouse.registry.model import Service
from pilothouse.xds.generators.base import GenerationInput


@dataclass(frozen=True, slots=True)
class RuleReadings:
    """What generators read of one DestinationRule: its load balancers as routes read
    them (``rule_reads.hash_policy_inputs``) and its subsets (``rule_reads.subsets_of``)."""

    balancers: bytes | None
    subsets: Subsets


NO_RULE = RuleReadings(None, ())


@dataclass(frozen=True, slots=True)
class RuleInputs:
    """What :class:`RuleReadings` are read from: one DestinationRule, by revision."""

    rule: ConfigRevision


def rule_readings(inputs: RuleInputs) -> RuleReadings:
    rule = inputs.rule.config
    return RuleReadings(hash_policy_inputs(rule), subsets_of(rule))


ServiceRule = tuple[Service, ConfigRevision | None, RuleReadings]
"""A service, its DestinationRule's revision (None: no rule) and the rule's readings."""


@dataclass(frozen=True, slots=True)
class ScopeRules:
    """The scope's services by hostname (in the scope's order), each with its rule."""

    by_hostname: Mapping[str, ServiceRule]

    def in_hostname_order(self) -> list[ServiceRule]:
        return [self.by_hostname[hostname] for hostname in sorted(self.by_hostname)]


def scope_rules(given: GenerationInput) -> ScopeRules:
    """The :class:`ScopeRules` of the proxy's scope, gathered once per scope."""
    cache = given.cache

    def gather(scope: ProxyScope, _context: ScopeContext) -> ScopeRules:
        return gather_rules(scope, cache)

    return given.scope.interned(ScopeRules, gather)


def gather_rules(scope: ProxyScope, cache: ResourceCache) -> ScopeRules:
    found: dict[str, ServiceRule] = {}
    for hostname, service in scope.by_hostname.items():
        revision = ConfigRevision.of(scope.destination_rule(service))
        if revision is None:
            found[hostname] = (service, None, NO_RULE)
            continue
        inputs = RuleInputs(revision)
        readings = cache.value(inputs, functools.partial(rule_readings, inputs))
        found[hostname] = (service, revision, readings)
    return ScopeRules(found)
