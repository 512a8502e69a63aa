"""Immutable indexes over routing config, built once per PushContext (or reused from the last).

One class per kind: each answers the questions the push stage and generators ask of
that kind (which DestinationRule applies to a service for a proxy namespace, which
Sidecar a proxy gets, which Gateways select a router, which VirtualServices a
namespace sees), in time independent of the number of proxies.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

from pilothouse.config.mesh import MeshSettings, exported_to
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import virtual_service
from pilothouse.kinds.gateway_api.listener_translation import OWNER_ANNOTATION
from pilothouse.kinds.gateway_api.translation import selects_proxy
from pilothouse.push.hostnames import host_matches, resolve_host, specificity
from pilothouse.registry.model import Labels, Service


def _spec(config: Config) -> Any:
    return config.spec


def _key(config: Config) -> ConfigKey:
    return config.key


_NO_RULES: tuple[RuleEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class RuleEntry:
    """A DestinationRule with its host resolved and its exportTo read once."""

    config: Config
    host: str
    export_to: frozenset[str]
    selector: Labels | None


class DestinationRuleIndex:
    """Which DestinationRule applies to a service, for proxies of a namespace."""

    def __init__(self, rules: Iterable[Config], mesh: MeshSettings) -> None:
        self._mesh = mesh
        by_namespace: dict[str, list[RuleEntry]] = {}
        for config in rules:
            spec = _spec(config)
            selector = None
            if spec.HasField("workload_selector"):
                selector = Labels.of(dict(spec.workload_selector.match_labels))
            entry = RuleEntry(
                config,
                resolve_host(spec.host, config.namespace, mesh.domain_suffix),
                frozenset(spec.export_to),
                selector,
            )
            by_namespace.setdefault(config.namespace, []).append(entry)
        # Per namespace, in precedence order (exact hosts before wildcards, then by key):
        # the exact hosts' entries by host, and the wildcards, so that a lookup reads the
        # service's own entries and the wildcards, not every rule of the namespace (a
        # scope looks up each of its services, and a full push makes new scopes).
        self._exact: dict[str, dict[str, list[RuleEntry]]] = {}
        self._wildcards: dict[str, list[RuleEntry]] = {}
        for namespace, entries in by_namespace.items():
            entries.sort(key=lambda e: (specificity(e.host), e.config.key))
            exact = self._exact[namespace] = {}
            for entry in entries:
                if entry.host.startswith("*"):
                    self._wildcards.setdefault(namespace, []).append(entry)
                else:
                    exact.setdefault(entry.host, []).append(entry)
        self.by_key: Mapping[ConfigKey, Config] = {
            e.config.key: e.config for es in by_namespace.values() for e in es
        }
        self.keys = frozenset(self.by_key)

    def lookup(
        self, proxy_namespace: str, service: Service, proxy_labels: Labels | None = None
    ) -> Config | None:
        """Istio's precedence: the proxy's namespace, then the service's, then the root."""
        order = [proxy_namespace, service.namespace, self._mesh.root_namespace]
        seen: set[str] = set()
        for namespace in order:
            if namespace in seen:
                continue
            seen.add(namespace)
            exact = self._exact.get(namespace)
            own = exact.get(service.hostname, _NO_RULES) if exact is not None else _NO_RULES
            for entry in chain(own, self._wildcards.get(namespace, _NO_RULES)):
                if entry.host.startswith("*") and not host_matches(entry.host, service.hostname):
                    continue
                if entry.selector is not None and (
                    proxy_labels is None
                    or namespace != proxy_namespace
                    or not proxy_labels.matches(entry.selector)
                ):
                    continue
                if namespace != proxy_namespace and not exported_to(
                    entry.export_to,
                    namespace,
                    proxy_namespace,
                    self._mesh.default_destination_rule_export_to,
                ):
                    continue
                return entry.config
        return None


@dataclass(frozen=True, slots=True)
class RouteEntry:
    """A VirtualService with resolved hosts, gateways and exportTo."""

    config: Config
    hosts: tuple[str, ...]
    gateways: tuple[str, ...]
    export_to: frozenset[str]
    delegates: tuple[ConfigKey, ...] = ()
    """The VirtualServices its HTTP routes delegate to, in first-seen order."""

    @property
    def for_mesh(self) -> bool:
        return not self.gateways or "mesh" in self.gateways


class VirtualServiceIndex:
    """VirtualServices by who may see them."""

    def __init__(self, services: Iterable[Config], mesh: MeshSettings) -> None:
        self._mesh = mesh
        entries: list[RouteEntry] = []
        for config in services:
            spec = _spec(config)
            hosts = tuple(resolve_host(h, config.namespace, mesh.domain_suffix) for h in spec.hosts)
            gateways = tuple(
                g if g == "mesh" or "/" in g else f"{config.namespace}/{g}" for g in spec.gateways
            )
            entries.append(
                RouteEntry(
                    config, hosts, gateways, frozenset(spec.export_to), _delegate_keys(config)
                )
            )
        entries.sort(key=lambda e: e.config.key)
        self.entries = tuple(entries)
        self.keys = frozenset(e.config.key for e in entries)
        self.by_key: Mapping[ConfigKey, RouteEntry] = {e.config.key: e for e in entries}
        by_namespace: dict[str, list[RouteEntry]] = {}
        for entry in entries:
            by_namespace.setdefault(entry.config.namespace, []).append(entry)
        self._by_namespace = by_namespace
        by_gateway: dict[str, list[RouteEntry]] = {}
        for entry in entries:
            for gateway in dict.fromkeys(entry.gateways):
                by_gateway.setdefault(gateway, []).append(entry)
        self._by_gateway = {name: tuple(bound) for name, bound in by_gateway.items()}
        self.source_selectors = _source_selectors(entries)

    def visible_to(
        self, namespace: str, among: Collection[str] | None = None
    ) -> tuple[RouteEntry, ...]:
        """The VirtualServices exported to ``namespace`` (only those of ``among`` when set)."""
        entries = self.entries
        if among is not None:
            by_namespace = self._by_namespace
            entries = tuple(
                sorted((e for n in among for e in by_namespace.get(n, ())), key=_entry_key)
            )
        return tuple(
            e
            for e in entries
            if exported_to(
                e.export_to,
                e.config.namespace,
                namespace,
                self._mesh.default_virtual_service_export_to,
            )
        )

    def for_gateway(self, gateway: ConfigKey) -> tuple[RouteEntry, ...]:
        """The VirtualServices bound to ``gateway``, in key order."""
        return self._by_gateway.get(f"{gateway.namespace}/{gateway.name}", ())


def _delegate_keys(config: Config) -> tuple[ConfigKey, ...]:
    found: dict[ConfigKey, None] = {}
    for http in _spec(config).http:
        if http.HasField("delegate"):
            namespace = http.delegate.namespace or config.namespace
            found[ConfigKey(virtual_service.KIND.name, namespace, http.delegate.name)] = None
    return tuple(found)


def _entry_key(entry: RouteEntry) -> ConfigKey:
    return entry.config.key


def _source_selectors(entries: Iterable[RouteEntry]) -> tuple[tuple[tuple[str, str], ...], ...]:
    """Every distinct ``sourceLabels`` of any HTTP match, in first-seen order.

    Routes depend on a proxy's labels only through these selectors (a delegate's merged
    match selects exactly when both its own and its root's labels do), so which of them
    a proxy's labels satisfy is all a route configuration needs to know of the labels.
    """
    found: dict[tuple[tuple[str, str], ...], None] = {}
    for entry in entries:
        for http in _spec(entry.config).http:
            for match in http.match:
                if match.source_labels:
                    found[tuple(sorted(match.source_labels.items()))] = None
    return tuple(found)


class SidecarIndex:
    """Which Sidecar resource a workload gets."""

    def __init__(self, sidecars: Iterable[Config], mesh: MeshSettings) -> None:
        self._mesh = mesh
        by_namespace: dict[str, list[Config]] = {}
        for config in sidecars:
            by_namespace.setdefault(config.namespace, []).append(config)
        for configs in by_namespace.values():
            configs.sort(key=lambda c: (c.creation_time is None, c.creation_time or 0, c.key))
        self._by_namespace: Mapping[str, list[Config]] = by_namespace
        self.configs = tuple(sorted((c for cs in by_namespace.values() for c in cs), key=_key))
        self.keys = frozenset(c.key for c in self.configs)
        self.by_key: Mapping[ConfigKey, Config] = {c.key: c for c in self.configs}

    def select(self, namespace: str, labels: Labels) -> Config | None:
        """A selecting Sidecar of the namespace, else its default, else the root default."""
        configs = self._by_namespace.get(namespace, [])
        for config in configs:
            selector = _spec(config).workload_selector.labels
            if selector and labels.matches(dict(selector)):
                return config
        for config in configs:
            if not _spec(config).workload_selector.labels:
                return config
        if namespace != self._mesh.root_namespace:
            for config in self._by_namespace.get(self._mesh.root_namespace, []):
                if not _spec(config).workload_selector.labels:
                    return config
        return None


class GatewayIndex:
    """Which Gateways configure a router proxy."""

    def __init__(self, gateways: Iterable[Config]) -> None:
        self.configs = tuple(sorted(gateways, key=lambda c: c.key))
        self.keys = frozenset(c.key for c in self.configs)

    def select(self, namespace: str, labels: Labels) -> tuple[Config, ...]:
        """Gateways whose selector matches the router's labels (empty: same namespace);
        those generated from a Gateway API Gateway select by its gateway-name label."""
        found: list[Config] = []
        for config in self.configs:
            if OWNER_ANNOTATION in config.annotations:
                if selects_proxy(config, namespace, labels):
                    found.append(config)
                continue
            selector = dict(_spec(config).selector)
            if selector:
                if labels.matches(selector):
                    found.append(config)
            elif config.namespace == namespace:
                found.append(config)
        return tuple(found)
