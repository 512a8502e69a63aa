"""PushContext: the immutable snapshot of the mesh that one full push generates from.

A full push builds a new context; an endpoint-only push never does (the EDS fast path
reads the live endpoint index). Building reuses every index whose input kinds the
push did not touch, so a VirtualService edit does not re-index DestinationRules, and
a DestinationRule edit does not re-read services; which kinds each index is built from
is declared by the kinds (:data:`INDEXED_KINDS`).

Scopes (:class:`~pilothouse.push.scope.ProxyScope`) are computed lazily per scope key
and kept in the context, so proxies that see the same thing share one scope and the
inputs values gathered from it. What generators build is not kept here: it is found
again in the resource cache, whose keys are the builders' inputs (a DestinationRule
edit leaves the listeners and routes of scopes that do not see it in the cache, under
inputs that come out equal). When the :class:`~pilothouse.push.scope.ScopeContext` (the
context parts interned inputs may read) is the same as the previous context's, a scope
that comes out equal to the previous context's is replaced by that very object, with the
inputs interned in it, so they are not gathered again.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import (
    destination_rule,
    envoy_filter,
    gateway,
    sidecar,
    telemetry,
    virtual_service,
    wasm_plugin,
)
from pilothouse.kinds.gateway_api.audience import Concerns
from pilothouse.kinds.gateway_api.translation import SERVICE_ENTRY, Translation, translate
from pilothouse.kinds.table import KINDS
from pilothouse.push.authorization import (
    AUTHORIZATION_POLICY,
    REQUEST_AUTHENTICATION,
    AuthorizationIndex,
    JwksLookup,
)
from pilothouse.push.envoy_filters import EnvoyFilterIndex
from pilothouse.push.indexes import (
    DestinationRuleIndex,
    GatewayIndex,
    SidecarIndex,
    VirtualServiceIndex,
)
from pilothouse.push.inputs import InputKey
from pilothouse.push.listener_conflicts import ListenerConflicts
from pilothouse.push.peer_authentication import PEER_AUTHENTICATION, PeerAuthenticationIndex
from pilothouse.push.proxy import ProxyIdentity, ProxyType
from pilothouse.push.request import PushRequest
from pilothouse.push.scope import (
    ProxyScope,
    ScopeContext,
    ScopeKey,
    build_scope,
    egress_hosts,
    egress_namespaces,
)
from pilothouse.push.selections import ProxySelections
from pilothouse.push.telemetry import TelemetryIndex
from pilothouse.push.wasm_plugins import ModuleLookup, WasmPluginIndex
from pilothouse.registry.model import Labels, Service
from pilothouse.sources.events import ConfigStore

INDEXED_KINDS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        index: frozenset(k.name for k in KINDS if k.index == index)
        for index in dict.fromkeys(k.index for k in KINDS if k.index is not None)
    }
)
"""PushContext field → the kinds it is built from (each kind's
:attr:`~pilothouse.kinds.kind.Kind.index`): a context reuses a field's index when the
request changed none of them."""


@dataclass(frozen=True)
class ServiceIndex:
    """Every service, in a stable order."""

    services: tuple[Service, ...]

    @functools.cached_property
    def by_namespace(self) -> Mapping[str, tuple[Service, ...]]:
        """The services each namespace declares, in the same order."""
        found: dict[str, list[Service]] = {}
        for service in self.services:
            found.setdefault(service.namespace, []).append(service)
        return {namespace: tuple(services) for namespace, services in found.items()}

    @functools.cached_property
    def namespace_inputs(self) -> Mapping[str, InputKey]:
        """Each namespace's services (:attr:`by_namespace`) as one cache input, hashed once."""
        return {namespace: InputKey(found) for namespace, found in self.by_namespace.items()}

    @functools.cached_property
    def _positions(self) -> Mapping[str, tuple[int, ...]]:
        found: dict[str, list[int]] = {}
        for position, service in enumerate(self.services):
            found.setdefault(service.namespace, []).append(position)
        return {namespace: tuple(positions) for namespace, positions in found.items()}

    @functools.cached_property
    def _hosts(self) -> Mapping[str, tuple[tuple[str, str], ...]]:
        found: dict[str, list[tuple[str, str]]] = {}
        for service in self.services:
            found.setdefault(service.hostname, []).append((service.hostname, service.namespace))
        return {host: tuple(entries) for host, entries in found.items()}

    def hosts(self, hostname: str) -> tuple[tuple[str, str], ...]:
        """(hostname, namespace) of each service called ``hostname`` (a Telemetry
        provider's ``service`` is resolved through this)."""
        return self._hosts.get(hostname, ())

    def in_namespaces(self, namespaces: Collection[str]) -> tuple[Service, ...]:
        """The services declared in any of ``namespaces``, in the index's order."""
        if len(namespaces) == 1:
            return self.by_namespace.get(next(iter(namespaces)), ())
        positions = self._positions
        picked = sorted(p for n in namespaces for p in positions.get(n, ()))
        return tuple(self.services[p] for p in picked)


class ScopeSelector(NamedTuple):
    """What of a proxy picks its scope: its type, namespace and labels (which select the
    Sidecar or the Gateways). A named tuple: made and hashed for every generator call."""

    type: ProxyType
    namespace: str
    labels: Labels

    @classmethod
    def of(cls, proxy: ProxyIdentity) -> ScopeSelector:
        return cls(proxy.type, proxy.namespace, proxy.labels)


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
    peer_authentications: PeerAuthenticationIndex
    authorizations: AuthorizationIndex
    envoy_filters: EnvoyFilterIndex
    wasm_plugins: WasmPluginIndex
    telemetries: TelemetryIndex
    gateway_api: Translation = field(default_factory=Translation)
    """The Gateway API objects as Istio Gateways and VirtualServices (both indexed with
    the user's own in :attr:`gateways` and :attr:`virtual_services`)."""
    stats: ContextStats = field(default_factory=ContextStats, compare=False)
    _scopes: dict[ScopeKey, ProxyScope] = field(default_factory=dict, compare=False, repr=False)
    _proxy_scopes: dict[ScopeSelector, ProxyScope] = field(
        default_factory=dict, compare=False, repr=False
    )
    _previous: Mapping[ScopeKey, ProxyScope] = field(
        default_factory=dict, compare=False, repr=False
    )
    """The previous context's scopes, when its ScopeContext is this one's."""

    @functools.cached_property
    def scope_context(self) -> ScopeContext:
        """What inputs interned in this context's scopes may read besides the scope."""
        return ScopeContext(
            self.mesh,
            self.virtual_services,
            self.sidecars,
            self.gateways,
            self.peer_authentications,
        )

    @functools.cached_property
    def listener_conflicts(self) -> ListenerConflicts:
        """The outbound listener conflicts of the listeners generated from this context."""
        return ListenerConflicts()

    @functools.cached_property
    def selections(self) -> ProxySelections:
        """Each proxy's telemetry, WasmPlugins and EnvoyFilter patches (found in the cache)."""
        return ProxySelections(
            self.telemetries, self.wasm_plugins, self.envoy_filters, self.services.hosts
        )

    def scope_key(self, proxy: ProxyIdentity) -> ScopeKey:
        return self._scope_key(ScopeSelector.of(proxy))

    def _scope_key(self, selector: ScopeSelector) -> ScopeKey:
        """The key of the scope of proxies ``selector`` describes (it reads nothing else
        of them)."""
        kind, namespace, labels = selector.type, selector.namespace, selector.labels
        sidecar = self.sidecars.select(namespace, labels) if kind is ProxyType.SIDECAR else None
        gateways = self.gateways.select(namespace, labels) if kind is ProxyType.ROUTER else ()
        return ScopeKey(
            kind,
            namespace,
            sidecar.key if sidecar is not None else None,
            tuple(g.key for g in gateways),
            (),
        )

    def scope(self, proxy: ProxyIdentity) -> ProxyScope:
        """The proxy's scope, computed once per scope key in this context.

        The key depends only on what :class:`ScopeSelector` holds of the proxy, so the
        scope is also found under that: the proxies of one workload find it in one lookup.
        """
        seen = ScopeSelector(proxy.type, proxy.namespace, proxy.labels)
        found = self._proxy_scopes.get(seen)
        if found is not None:
            return found
        key = self._scope_key(seen)
        found = self._scopes.get(key)
        if found is None:
            found = self._build_scope(key)
            self._scopes[key] = found
        self._proxy_scopes[seen] = found
        return found

    def _build_scope(self, key: ScopeKey) -> ProxyScope:
        namespace = key.namespace
        sidecar = None
        if key.sidecar is not None:
            sidecar = self.sidecars.by_key.get(key.sidecar)
        gateways: tuple[Config, ...] = ()
        if key.gateways:
            wanted = frozenset(key.gateways)
            gateways = tuple(c for c in self.gateways.configs if c.key in wanted)
        egress = egress_hosts(sidecar, namespace)
        # Only the namespaces the Sidecar's egress names can contribute: read just those.
        reach = egress_namespaces(egress)
        mesh = self.mesh

        def visible(service: Service) -> bool:
            return service.is_exported_to(namespace, mesh.default_service_export_to)

        def rule_for(service: Service) -> Config | None:
            return self.destination_rules.lookup(namespace, service)

        routes = [
            (e.config.key, e.config.namespace, e.hosts)
            for e in self.virtual_services.visible_to(namespace, reach)
        ]

        def translated(seen: frozenset[ConfigKey]) -> Concerns:
            mesh = key.proxy_type is not ProxyType.ROUTER
            return self.gateway_api.origins.concerns(key.gateways, seen, mesh=mesh)

        built = build_scope(
            key,
            self.services.services if reach is None else self.services.in_namespaces(reach),
            visible,
            rule_for,
            routes,
            gateways,
            egress,
            self.scope_context,
            translated,
        )
        previous = self._previous.get(key)
        return previous if previous is not None and previous == built else built


def build_context(
    store: ConfigStore,
    services: Callable[[], tuple[Service, ...]],
    mesh: MeshSettings,
    version: str,
    previous: PushContext | None = None,
    request: PushRequest | None = None,
    jwks: JwksLookup | None = None,
    wasm_modules: ModuleLookup | None = None,
) -> PushContext:
    """A new context, reusing ``previous``'s indexes that ``request`` did not touch.

    ``jwks`` gives the key sets fetched from the RequestAuthentications' ``jwksUri``s,
    ``wasm_modules`` the modules fetched for the WasmPlugins' ``url``s.
    """
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

    # The translation also reads ServiceEntries (GAMMA parents); the indexes it feeds are
    # rebuilt only when what it serves changed.
    translated_kinds = INDEXED_KINDS["gateway_api"] | {SERVICE_ENTRY}
    gateway_api: Translation = pick(
        "gateway_api",
        translated_kinds,
        previous.gateway_api if previous else None,
        lambda: translate(configs, mesh.domain_suffix),
    )
    served_changed = previous is None or not gateway_api.serves_as(previous.gateway_api)
    gateway_api_kinds = translated_kinds if served_changed else frozenset()
    context = PushContext(
        version=version,
        mesh=mesh,
        services=pick(
            "services",
            INDEXED_KINDS["services"],
            previous.services if previous else None,
            lambda: ServiceIndex(services()),
        ),
        destination_rules=pick(
            "destination_rules",
            INDEXED_KINDS["destination_rules"],
            previous.destination_rules if previous else None,
            lambda: DestinationRuleIndex(configs(destination_rule.KIND.name), mesh),
        ),
        virtual_services=pick(
            "virtual_services",
            INDEXED_KINDS["virtual_services"] | gateway_api_kinds,
            previous.virtual_services if previous else None,
            lambda: VirtualServiceIndex(
                [*configs(virtual_service.KIND.name), *gateway_api.virtual_services], mesh
            ),
        ),
        sidecars=pick(
            "sidecars",
            INDEXED_KINDS["sidecars"],
            previous.sidecars if previous else None,
            lambda: SidecarIndex(configs(sidecar.KIND.name), mesh),
        ),
        gateways=pick(
            "gateways",
            INDEXED_KINDS["gateways"] | gateway_api_kinds,
            previous.gateways if previous else None,
            lambda: GatewayIndex([*configs(gateway.KIND.name), *gateway_api.gateways]),
        ),
        peer_authentications=pick(
            "peer_authentications",
            INDEXED_KINDS["peer_authentications"],
            previous.peer_authentications if previous else None,
            lambda: PeerAuthenticationIndex(configs(PEER_AUTHENTICATION), mesh),
        ),
        authorizations=pick(
            "authorizations",
            INDEXED_KINDS["authorizations"],
            previous.authorizations if previous else None,
            lambda: AuthorizationIndex(
                configs(AUTHORIZATION_POLICY), configs(REQUEST_AUTHENTICATION), mesh, jwks
            ),
        ),
        envoy_filters=pick(
            "envoy_filters",
            INDEXED_KINDS["envoy_filters"],
            previous.envoy_filters if previous else None,
            lambda: EnvoyFilterIndex(configs(envoy_filter.KIND.name), mesh),
        ),
        wasm_plugins=pick(
            "wasm_plugins",
            INDEXED_KINDS["wasm_plugins"],
            previous.wasm_plugins if previous else None,
            lambda: WasmPluginIndex(
                configs(wasm_plugin.KIND.name),
                mesh,
                wasm_modules,
                previous.wasm_plugins if previous else None,
            ),
        ),
        telemetries=pick(
            "telemetries",
            INDEXED_KINDS["telemetries"],
            previous.telemetries if previous else None,
            lambda: TelemetryIndex(configs(telemetry.KIND.name), mesh),
        ),
        gateway_api=gateway_api,
    )
    if previous is not None and previous.scope_context.same(context.scope_context):
        object.__setattr__(context, "_previous", previous._scopes)
    context.stats.build_seconds = time.perf_counter() - start
    context.stats.rebuilt = tuple(rebuilt)
    context.stats.reused = tuple(reused)
    return context
