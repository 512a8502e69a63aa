"""What one kind of proxy can see: the proxy scope, shared by every proxy that sees the same.

A scope is computed once per (proxy type, namespace, selected Sidecar, selected
Gateways, label-selected DestinationRules) within a PushContext, and every proxy with
that key shares it, together with everything generated from it. It answers two
questions: which services, DestinationRules and VirtualServices the proxy uses, and
(:meth:`ProxyScope.sees`) whether a changed config key concerns it, which is how a
push reaches only the proxies a change is visible to. That second answer follows the
audience each kind declares in its module (:class:`~pilothouse.kinds.kind.Audience`);
:data:`AUDIENCE_RULES` reads each one over a scope.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, TypeVar

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.gateway_api.audience import NONE as NO_CONCERNS
from pilothouse.kinds.gateway_api.audience import Concerns
from pilothouse.kinds.kind import Audience
from pilothouse.kinds.table import KINDS
from pilothouse.push.hostnames import host_matches
from pilothouse.push.indexes import GatewayIndex, SidecarIndex, VirtualServiceIndex
from pilothouse.push.peer_authentication import PeerAuthenticationIndex
from pilothouse.push.proxy import ProxyIdentity, ProxyType
from pilothouse.registry.model import Service, ServiceKey

Interned = TypeVar("Interned")


@dataclass(frozen=True, slots=True)
class EgressHost:
    """One ``namespace/host`` entry of a Sidecar egress listener, read for a namespace."""

    namespace: str  # "*" any, "~" none, else a namespace name ("." already resolved)
    host: str

    def matches(self, namespace: str, hostname: str) -> bool:
        if self.namespace == "~":
            return False
        if self.namespace != "*" and self.namespace != namespace:
            return False
        return host_matches(self.host, hostname)

    def overlaps(self, namespace: str, host: str) -> bool:
        """Like :meth:`matches`, for a host that may itself be a wildcard (VirtualService)."""
        return self.matches(namespace, host) or (
            self.namespace in ("*", namespace) and host_matches(host, self.host)
        )


def egress_hosts(sidecar: Config | None, own_namespace: str) -> tuple[EgressHost, ...] | None:
    """The Sidecar's egress hosts, or None when every exported service is visible."""
    if sidecar is None:
        return None
    spec: Any = sidecar.spec
    if not spec.egress:
        return None
    found: list[EgressHost] = []
    for listener in spec.egress:
        for entry in listener.hosts:
            namespace, _, host = entry.partition("/")
            if namespace == ".":
                namespace = own_namespace
            found.append(EgressHost(namespace, host))
    return tuple(found)


def egress_namespaces(egress: tuple[EgressHost, ...] | None) -> frozenset[str] | None:
    """The namespaces whose services and VirtualServices ``egress`` can admit (None: any)."""
    if egress is None:
        return None
    namespaces = {e.namespace for e in egress}
    if "*" in namespaces:
        return None
    namespaces.discard("~")
    return frozenset(namespaces)


@dataclass(frozen=True, slots=True)
class ScopeKey:
    """Everything that makes two proxies see different config.

    Its hash is computed once: the context finds scopes by it, and a router's key holds
    every Gateway that selects it (hundreds of config keys).
    """

    proxy_type: ProxyType
    namespace: str
    sidecar: ConfigKey | None
    gateways: tuple[ConfigKey, ...] = ()
    selected_rules: tuple[ConfigKey, ...] = ()
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fields = (self.proxy_type, self.namespace, self.sidecar, self.gateways)
        object.__setattr__(self, "_hash", hash((*fields, self.selected_rules)))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, slots=True, eq=False)
class ScopeContext:
    """The parts of a PushContext that inputs interned in a scope may read besides the
    scope itself (see :meth:`ProxyScope.interned`): the mesh settings and the
    VirtualService, Sidecar, Gateway and PeerAuthentication indexes."""

    mesh: MeshSettings
    virtual_services: VirtualServiceIndex
    sidecars: SidecarIndex
    gateways: GatewayIndex
    peer_authentications: PeerAuthenticationIndex

    def same(self, other: ScopeContext) -> bool:
        """Whether everything here is the same in ``other`` (the indexes by identity: a
        context reuses the very index object when no config of its kinds changed)."""
        return (
            self.virtual_services is other.virtual_services
            and self.sidecars is other.sidecars
            and self.gateways is other.gateways
            and self.peer_authentications is other.peer_authentications
            and self.mesh == other.mesh
        )


@dataclass(frozen=True)
class ProxyScope:
    """The config visible to proxies of one :class:`ScopeKey`.

    :meth:`interned` keeps the inputs values generators gather from the scope and the
    :class:`ScopeContext` it was built in, one per class, so that every proxy of the
    scope shares the very same object (hashed once). What is built from them lives in
    the resource cache, keyed by them; nothing built is kept here. A later PushContext
    takes over a scope equal to one of the previous context's, interned inputs
    included, only when its :class:`ScopeContext` is the same: the inputs were gathered
    from nothing else, so they are what gathering again would give.
    """

    key: ScopeKey
    services: tuple[Service, ...]
    destination_rules: Mapping[ServiceKey, Config | None]
    virtual_services: frozenset[ConfigKey]
    gateways: tuple[Config, ...] = ()
    egress: tuple[EgressHost, ...] | None = None
    by_hostname: Mapping[str, Service] = field(default_factory=dict)
    service_keys: frozenset[ServiceKey] = frozenset()
    sources: frozenset[ConfigKey] = frozenset()
    rule_keys: frozenset[ConfigKey] = frozenset()
    translated: Concerns = NO_CONCERNS
    """The Gateway API objects (and referenced namespaces) its generated config came from."""
    context: ScopeContext | None = field(default=None, compare=False, repr=False)
    """What :meth:`interned` gatherers may read besides the scope (None: nothing)."""
    _interned: dict[type, object] = field(default_factory=dict, compare=False, repr=False)

    @property
    def namespace(self) -> str:
        return self.key.namespace

    def interned(
        self, kind: type[Interned], gather: Callable[[ProxyScope, ScopeContext], Interned]
    ) -> Interned:
        """The scope's one ``kind`` value, made by ``gather(scope, context)`` on first use.

        For inputs values only (a frozen value of everything some builders read): what is
        built from them goes into the resource cache under them, so the key of a built
        value is always its inputs. ``gather`` reads the scope and its
        :class:`ScopeContext`, nothing else of a PushContext (that is what makes taking
        the scope over, with what was interned, safe).
        """
        try:
            return self._interned[kind]  # type: ignore[return-value]
        except KeyError:
            if self.context is None:
                raise LookupError("a scope built without a ScopeContext interns nothing") from None
            made = self._interned[kind] = gather(self, self.context)
            return made

    @functools.cached_property
    def service_namespaces(self) -> frozenset[str]:
        """The namespaces the scope's services come from."""
        return frozenset(s.namespace for s in self.services)

    def service(self, hostname: str) -> Service | None:
        return self.by_hostname.get(hostname)

    def destination_rule(self, service: Service) -> Config | None:
        return self.destination_rules.get(service.key)

    def sees(self, key: ConfigKey, root_namespace: str) -> bool:
        """Whether a change to ``key`` can change what proxies of this scope receive: the
        rule its kind declares (:attr:`~pilothouse.kinds.kind.Kind.audience`; every proxy
        for a kind the table does not know)."""
        audience = _AUDIENCES.get(key.kind, Audience.EVERY_PROXY)
        return AUDIENCE_RULES[audience](self, key, root_namespace)


SeesRule = Callable[[ProxyScope, ConfigKey, str], bool]


def _scope_services(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return ServiceKey(key.name, key.namespace) in scope.service_keys


def _service_sources(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return key in scope.sources


def _selected_rules(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return key in scope.rule_keys


def _exported_routes(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return key in scope.virtual_services


def _selected_gateways(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return any(g.key == key for g in scope.gateways)


def _namespace_or_root(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return key.namespace in (scope.key.namespace, root_namespace)


def _namespace_root_or_services(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    # The proxy's own inbound mode (its namespace, the mesh-wide root), and the mode
    # auto-mTLS infers for the services it calls (their namespaces).
    return (
        key.namespace in (scope.key.namespace, root_namespace)
        or key.namespace in scope.service_namespaces
    )


def _own_namespace(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return key.namespace == scope.key.namespace


def _translated_from(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return key in scope.translated.sources


def _referenced_namespace(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return key.namespace in scope.translated.namespaces


def _selected_workloads(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return False  # by selector, proxy by proxy: push/selected_workloads.py asks each one


def _no_proxy(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return False  # applied in bootstraps, never in xDS resources


def _every_proxy(scope: ProxyScope, key: ConfigKey, root_namespace: str) -> bool:
    return True


AUDIENCE_RULES: Final[Mapping[Audience, SeesRule]] = MappingProxyType(
    {
        Audience.EVERY_PROXY: _every_proxy,
        Audience.SCOPE_SERVICES: _scope_services,
        Audience.SERVICE_SOURCES: _service_sources,
        Audience.SELECTED_RULES: _selected_rules,
        Audience.EXPORTED_ROUTES: _exported_routes,
        Audience.SELECTED_GATEWAYS: _selected_gateways,
        Audience.NAMESPACE_OR_ROOT: _namespace_or_root,
        Audience.NAMESPACE_ROOT_OR_SERVICES: _namespace_root_or_services,
        Audience.OWN_NAMESPACE: _own_namespace,
        Audience.TRANSLATED_FROM: _translated_from,
        Audience.REFERENCED_NAMESPACE: _referenced_namespace,
        Audience.SELECTED_WORKLOADS: _selected_workloads,
        Audience.NO_PROXY: _no_proxy,
    }
)
"""How :meth:`ProxyScope.sees` reads each audience a kind can declare."""

_AUDIENCES: Final[Mapping[str, Audience]] = MappingProxyType({k.name: k.audience for k in KINDS})


def build_scope(
    key: ScopeKey,
    services: Iterable[Service],
    visible: Any,
    rule_for: Any,
    virtual_services: Iterable[tuple[ConfigKey, str, tuple[str, ...]]],
    gateways: tuple[Config, ...],
    egress: tuple[EgressHost, ...] | None,
    context: ScopeContext | None = None,
    translated: Callable[[frozenset[ConfigKey]], Concerns] | None = None,
) -> ProxyScope:
    """Assemble a scope. ``visible(service)`` applies exportTo; ``rule_for(service)`` picks
    the DestinationRule; ``virtual_services`` are (key, namespace, hosts) already exported
    to the namespace; ``context`` is what inputs interned in it may read;
    ``translated(routes)`` what concerns it of the Gateway API, given the routes it sees."""
    chosen: list[Service] = []
    by_hostname: dict[str, Service] = {}
    for service in services:
        if not visible(service):
            continue
        if egress is not None and not any(
            e.matches(service.namespace, service.hostname) for e in egress
        ):
            continue
        chosen.append(service)
        current = by_hostname.get(service.hostname)
        # One service per hostname: the proxy's own namespace wins, then the first seen.
        if current is None or (
            service.namespace == key.namespace and current.namespace != key.namespace
        ):
            by_hostname[service.hostname] = service
    rules = {s.key: rule_for(s) for s in chosen}
    routes = frozenset(
        route_key
        for route_key, namespace, hosts in virtual_services
        if egress is None or any(e.overlaps(namespace, h) for e in egress for h in hosts)
    )
    return ProxyScope(
        key=key,
        services=tuple(chosen),
        destination_rules=rules,
        virtual_services=routes,
        gateways=gateways,
        egress=egress,
        by_hostname=by_hostname,
        service_keys=frozenset(s.key for s in chosen),
        sources=frozenset(s.source for s in chosen),
        rule_keys=frozenset(r.key for r in rules.values() if r is not None),
        translated=translated(routes) if translated is not None else NO_CONCERNS,
        context=context,
    )


def scope_key(
    proxy: ProxyIdentity,
    sidecar: Config | None,
    gateways: tuple[Config, ...],
    selected_rules: tuple[ConfigKey, ...],
) -> ScopeKey:
    return ScopeKey(
        proxy.type,
        proxy.namespace,
        sidecar.key if sidecar is not None else None,
        tuple(g.key for g in gateways),
        selected_rules,
    )
