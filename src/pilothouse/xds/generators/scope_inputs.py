"""Everything a scope's listeners and routes are built from, as one typed frozen value.

:class:`ScopeInputs` holds, field by field, what the listener and route builders
(lds.py, rds.py) read of a scope and its context, and nothing else: the proxy type
(router or not) and namespace, the three mesh settings they use, the services by
hostname (each with what its DestinationRule says about hash policies, see
``rule_reads.hash_policy_inputs``), the Sidecar, the VirtualServices the scope sees (oldest
first, with their creation time, which orders virtual hosts), each Gateway with the
VirtualServices bound to it, and the delegate VirtualServices their routes name. Those
builders take it (inside ``ListenerInputs`` or ``RouteInputs``, with the few proxy facts
they read) and nothing else: no PushContext, scope or proxy is reachable from it. Its
lookups (services by hostname, ports, hash policies, delegates) are derived from its
fields on first use. Proxyless gRPC's listeners and routes (grpc_lds.py, grpc_rds.py)
use the same fields and lookups.

:func:`scope_inputs` gathers it once per scope from the scope and its ``ScopeContext``
(interned in the scope, so every proxy of the scope holds the same object, hashed once;
a later context takes the scope over with it when nothing it read changed): configs as
themselves (a Config compares by content and resource version), DestinationRules only as
their load balancer settings (read once per rule revision: see scope_rules.py).

Two scopes with equal inputs, in any two contexts, get equal listeners and routes, so
those are cached in the ResourceCache under their inputs and outlive pushes that did
not change them: a connection-pool edit in a DestinationRule rebuilds clusters, but
no listener or route. The entries depend (for eviction) on the configs the inputs
hold (derived from them: see pilothouse.push.inputs), never on DestinationRules, whose
other edits must not evict them.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pilothouse.config.mesh import OutboundPolicy
from pilothouse.config.model import Config, ConfigKey
from pilothouse.push.indexes import RouteEntry
from pilothouse.push.inputs import FrozenInputs
from pilothouse.push.proxy import ProxyType
from pilothouse.push.scope import ProxyScope, ScopeContext
from pilothouse.registry.model import Service
from pilothouse.xds.builders.route_action import HashPolicyLookup
from pilothouse.xds.builders.route_delegate import DelegateLookup
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.routing import delegate_lookup, hash_policy_lookup
from pilothouse.xds.generators.scope_rules import ScopeRules, scope_rules

DatedRoute = tuple[RouteEntry, datetime.datetime | None]
"""A VirtualService the scope sees, with its creation time."""
GatewayRoutes = tuple[Config, tuple[RouteEntry, ...]]
"""A Gateway of the scope, with the VirtualServices bound to it (in key order)."""


@dataclass(frozen=True, slots=True, eq=False)
class ScopeInputs(FrozenInputs):
    """The inputs of one scope's listeners and routes (hashed once: see FrozenInputs)."""

    router: bool
    """The proxies are gateways (listeners from Gateway servers, routes ``http.<port>``)."""
    namespace: str
    """The proxies' namespace (``sourceNamespace`` matches, short virtual host domains)."""
    domain_suffix: str
    allow_any: bool
    """The mesh's outbound traffic policy is ALLOW_ANY (else REGISTRY_ONLY)."""
    proxy_listen_port: int
    services: tuple[tuple[Service, bytes | None], ...]
    """Each service by hostname (in the scope's order), with ``hash_policy_inputs`` of
    its DestinationRule."""
    sidecar: Config | None
    routes: tuple[DatedRoute, ...]
    """The VirtualServices the scope sees, oldest first (then by key)."""
    gateways: tuple[GatewayRoutes, ...]
    delegates: tuple[tuple[ConfigKey, Config | None], ...]
    """Every VirtualService the routes above delegate to (None: there is none)."""
    _by_hostname: Mapping[str, Service] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _ports_by_host: Mapping[str, Sequence[int]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _hash_policies: HashPolicyLookup | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _delegates: DelegateLookup | None = field(default=None, init=False, repr=False, compare=False)
    _headless: tuple[Service, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def by_hostname(self) -> Mapping[str, Service]:
        """``{hostname: service}``, in the scope's order."""
        found = self._by_hostname
        if found is None:
            found = {service.hostname: service for service, _ in self.services}
            object.__setattr__(self, "_by_hostname", found)
        return found

    @property
    def headless_services(self) -> tuple[Service, ...]:
        """The services of resolution NONE without an address (headless), in the scope's
        order: their TCP ports listen per endpoint (lds_headless.py)."""
        found = self._headless
        if found is None:
            found = tuple(s for s, _ in self.services if s.headless)
            object.__setattr__(self, "_headless", found)
        return found

    @property
    def ports_by_host(self) -> Mapping[str, Sequence[int]]:
        """``{hostname: [port numbers]}`` of every service."""
        found = self._ports_by_host
        if found is None:
            found = {s.hostname: tuple(p.number for p in s.ports) for s, _ in self.services}
            object.__setattr__(self, "_ports_by_host", found)
        return found

    @property
    def hash_policies(self) -> HashPolicyLookup:
        """``cluster name → route hash policies`` (see ``routing.hash_policy_lookup``)."""
        found = self._hash_policies
        if found is None:
            found = hash_policy_lookup(
                {s.hostname: held for s, held in self.services if held is not None}
            )
            object.__setattr__(self, "_hash_policies", found)
        return found

    @property
    def delegate_lookup(self) -> DelegateLookup:
        """``(name, namespace) → VirtualService spec`` among :attr:`delegates`."""
        found = self._delegates
        if found is None:
            found = delegate_lookup(self.delegates)
            object.__setattr__(self, "_delegates", found)
        return found


def scope_inputs(given: GenerationInput) -> ScopeInputs:
    """The :class:`ScopeInputs` of the proxy's scope, gathered once per scope."""

    def gather(scope: ProxyScope, context: ScopeContext) -> ScopeInputs:
        return _gather(context, scope, scope_rules(given))

    return given.scope.interned(ScopeInputs, gather)


def _gather(context: ScopeContext, scope: ProxyScope, rules: ScopeRules) -> ScopeInputs:
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
    services = tuple(
        (service, readings.balancers) for service, _, readings in rules.by_hostname.values()
    )
    mesh = context.mesh
    return ScopeInputs(
        router=scope.key.proxy_type is ProxyType.ROUTER,
        namespace=scope.key.namespace,
        domain_suffix=mesh.domain_suffix,
        allow_any=mesh.outbound_traffic_policy is OutboundPolicy.ALLOW_ANY,
        proxy_listen_port=mesh.proxy_listen_port,
        services=services,
        sidecar=sidecar,
        routes=tuple((entry, entry.config.creation_time) for entry in routes),
        gateways=bound,
        delegates=delegates,
    )


def visible_routes(context: ScopeContext, scope: ProxyScope) -> tuple[RouteEntry, ...]:
    """The VirtualServices the scope sees, in a stable order (oldest first, then by key)."""
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
