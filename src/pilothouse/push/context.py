"""PushContext: the immutable snapshot of the mesh that one full push generates from.

A full push builds a new context; an endpoint-only push never does (the EDS fast path
reads the live endpoint index). Building reuses every index whose input kinds the
push did not touch, so a VirtualService edit does not re-index DestinationRules, and
a DestinationRule edit does not re-read services.

Scopes (:class:`~pilothouse.push.scope.ProxyScope`) are computed lazily per scope key
and memoised in the context, so proxies that see the same thing share one scope and
everything generated from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.push.indexes import (
    DestinationRuleIndex,
    GatewayIndex,
    SidecarIndex,
    VirtualServiceIndex,
)
from pilothouse.push.proxy import ProxyIdentity, ProxyType
from pilothouse.push.request import PushRequest
from pilothouse.push.scope import ProxyScope, ScopeKey, build_scope, egress_hosts, scope_key
from pilothouse.registry.model import SERVICE_KIND, Service
from pilothouse.sources.events import ConfigStore

SERVICE_KINDS = frozenset({SERVICE_KIND, "ServiceEntry"})


@dataclass(frozen=True)
class ServiceIndex:
    """Every service, in a stable order."""

    services: tuple[Service, ...]


@dataclass
class ContextStats:
    """How a context was built, for ``pilot_pushcontext_init_seconds`` and debug."""

    build_seconds: float = 0.0
    rebuilt: tuple[str, ...] = ()
    reused: tuple[str, ...] = ()


@dataclass(frozen=True)
class PushContext:
    """Everything a full push generates from. Never mutated after :func:`build_context`."""

    version: str
    mesh: MeshSettings
    services: ServiceIndex
    destination_rules: DestinationRuleIndex
    virtual_services: VirtualServiceIndex
    sidecars: SidecarIndex
    gateways: GatewayIndex
    stats: ContextStats = field(default_factory=ContextStats, compare=False)
    _scopes: dict[ScopeKey, ProxyScope] = field(default_factory=dict, compare=False, repr=False)
    _memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def scope_key(self, proxy: ProxyIdentity) -> ScopeKey:
        sidecar = (
            self.sidecars.select(proxy.namespace, proxy.labels)
            if proxy.type is ProxyType.SIDECAR
            else None
        )
        gateways = (
            self.gateways.select(proxy.namespace, proxy.labels)
            if proxy.type is ProxyType.ROUTER
            else ()
        )
        return scope_key(proxy, sidecar, gateways, ())

    def scope(self, proxy: ProxyIdentity) -> ProxyScope:
        """The proxy's scope, computed once per scope key in this context."""
        key = self.scope_key(proxy)
        found = self._scopes.get(key)
        if found is None:
            found = self._build_scope(key)
            self._scopes[key] = found
        return found

    def memo(self, key: Any, make: Callable[[], Any]) -> Any:
        """Per-context memoisation for generators (e.g. the CDS of one scope)."""
        try:
            return self._memo[key]
        except KeyError:
            value = make()
            self._memo[key] = value
            return value

    def _build_scope(self, key: ScopeKey) -> ProxyScope:
        namespace = key.namespace
        sidecar = None
        if key.sidecar is not None:
            sidecar = next((c for c in self._sidecar_configs() if c.key == key.sidecar), None)
        gateways = tuple(c for c in self.gateways.configs if c.key in key.gateways)
        mesh = self.mesh

        def visible(service: Service) -> bool:
            return service.is_exported_to(namespace, mesh.default_service_export_to)

        def rule_for(service: Service) -> Config | None:
            return self.destination_rules.lookup(namespace, service)

        routes = [
            (e.config.key, e.config.namespace, e.hosts)
            for e in self.virtual_services.visible_to(namespace)
        ]
        return build_scope(
            key,
            self.services.services,
            visible,
            rule_for,
            routes,
            gateways,
            egress_hosts(sidecar, namespace),
        )

    def _sidecar_configs(self) -> tuple[Config, ...]:
        return self.sidecars.configs


def build_context(
    store: ConfigStore,
    services: Callable[[], tuple[Service, ...]],
    mesh: MeshSettings,
    version: str,
    previous: PushContext | None = None,
    request: PushRequest | None = None,
) -> PushContext:
    """A new context, reusing ``previous``'s indexes that ``request`` did not touch."""
    start = time.perf_counter()
    touched: frozenset[str] | None = None
    if previous is not None and request is not None and not request.is_everything:
        touched = frozenset(request.kinds())
    if previous is not None and previous.mesh != mesh:
        touched = None
    rebuilt: list[str] = []
    reused: list[str] = []

    def pick(name: str, kinds: frozenset[str], old: Any, make: Callable[[], Any]) -> Any:
        if previous is not None and touched is not None and not (kinds & touched):
            reused.append(name)
            return old
        rebuilt.append(name)
        return make()

    def configs(kind: str) -> list[Config]:
        return store.configs(kind)

    context = PushContext(
        version=version,
        mesh=mesh,
        services=pick(
            "services",
            SERVICE_KINDS,
            previous.services if previous else None,
            lambda: ServiceIndex(services()),
        ),
        destination_rules=pick(
            "destination_rules",
            frozenset({"DestinationRule"}),
            previous.destination_rules if previous else None,
            lambda: DestinationRuleIndex(configs("DestinationRule"), mesh),
        ),
        virtual_services=pick(
            "virtual_services",
            frozenset({"VirtualService"}),
            previous.virtual_services if previous else None,
            lambda: VirtualServiceIndex(configs("VirtualService"), mesh),
        ),
        sidecars=pick(
            "sidecars",
            frozenset({"Sidecar"}),
            previous.sidecars if previous else None,
            lambda: SidecarIndex(configs("Sidecar"), mesh),
        ),
        gateways=pick(
            "gateways",
            frozenset({"Gateway"}),
            previous.gateways if previous else None,
            lambda: GatewayIndex(configs("Gateway")),
        ),
    )
    context.stats.build_seconds = time.perf_counter() - start
    context.stats.rebuilt = tuple(rebuilt)
    context.stats.reused = tuple(reused)
    return context
