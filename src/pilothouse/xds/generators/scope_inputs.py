"""Everything a scope's listeners and routes are built from, as one hashable value.

A scope's outbound listeners and its route configurations read the scope (its services
by hostname, the load balancing of their DestinationRules, the VirtualServices it
sees, its Sidecar and Gateways) and a few things of the whole context: the mesh
settings, the VirtualServices bound to the scope's Gateways and the delegate
VirtualServices the routes name. :func:`scope_inputs` gathers exactly that into a
:class:`ScopeInputs`, once per scope and context: configs as themselves (a Config
compares by content and resource version; a VirtualService's creation time, which
orders virtual hosts, is added), DestinationRules as their load balancer settings
(all that hash policies read, see ``routing.hash_policy_inputs``).

Two scopes with equal inputs, in any two contexts, get equal listeners and routes, so
those are cached in the ResourceCache under their inputs and outlive pushes that did
not change them: a connection-pool edit in a DestinationRule rebuilds clusters, but
no listener or route. The entries depend (for eviction) on the configs the inputs
hold (derived from them: see pilothouse.push.inputs), not on DestinationRules, whose
other edits must not evict them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from pilothouse.config.model import Config
from pilothouse.push.context import PushContext
from pilothouse.push.indexes import RouteEntry
from pilothouse.push.inputs import InputKey
from pilothouse.push.scope import ProxyScope
from pilothouse.xds.generators.routing import hash_policy_inputs, visible_routes
from pilothouse.xds.generators.scope_memo import predecessor_memo, scope_memo


class ScopeInputs(InputKey):
    """The inputs of one scope's listeners and routes (hashed once)."""

    __slots__ = ()


def scope_inputs(context: PushContext, scope: ProxyScope) -> ScopeInputs:
    """The scope's :class:`ScopeInputs` (made once per scope: see ``ScopeMemo``)."""
    memo = scope_memo(scope)
    found = memo.inputs
    if found is None:
        found = memo.inputs = _gather(context, scope)
    return found


def _gather(context: PushContext, scope: ProxyScope) -> ScopeInputs:
    index = context.virtual_services
    routes = visible_routes(context, scope)
    bound = tuple((g, index.for_gateway(g.key)) for g in scope.gateways)
    used = [*routes, *(e for _, entries in bound for e in entries)]
    delegates = tuple(
        (key, delegate.config if (delegate := index.by_key.get(key)) is not None else None)
        for key in dict.fromkeys(k for e in used for k in e.delegates)
    )
    sidecar = None
    if scope.key.sidecar is not None:
        sidecar = context.sidecars.by_key.get(scope.key.sidecar)
    # Services are read by hostname only, and their DestinationRules only for hash
    # policies: a rule edit that leaves load balancing alone changes no listener or route.
    services = tuple(scope.by_hostname.items())
    balancer = _balancer_reader(context, scope)
    balancers = tuple(balancer(scope.destination_rule(service)) for _, service in services)
    parts: tuple[Hashable, ...] = (
        scope.key,
        context.mesh,
        services,
        balancers,
        sidecar,
        tuple(_route_identity(e) for e in routes),
        tuple((g, tuple(_route_identity(e) for e in entries)) for g, entries in bound),
        delegates,
    )
    return ScopeInputs(parts)


def _balancer_reader(
    context: PushContext, scope: ProxyScope
) -> Callable[[Config | None], bytes | None]:
    """``hash_policy_inputs`` of a rule, remembered per scope; taken from the predecessor
    scope for the very same rule object (a rule edit changes one rule, not hundreds)."""
    known = scope_memo(scope).balancers
    previous = predecessor_memo(scope)
    held = previous.balancers if previous is not None else {}

    def read(rule: Config | None) -> bytes | None:
        if rule is None:
            return None
        entry = known.get(rule.key)
        if entry is None or entry[0] is not rule:
            entry = held.get(rule.key)
            if entry is None or entry[0] is not rule:
                entry = (rule, hash_policy_inputs(context, rule))
            known[rule.key] = entry
        return entry[1]

    return read


def _route_identity(entry: RouteEntry) -> tuple[Config, Any]:
    return (entry.config, entry.config.creation_time)
