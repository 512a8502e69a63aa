"""The WasmPlugins of a push context, with their modules, and which apply to a proxy.

istiod's selection (``push_context.go`` WasmPlugins, ``policyattachment.go``): the
candidates are the plugins of the mesh's root namespace and of the proxy's namespace;
one with ``targetRefs`` applies only to a Kubernetes Gateway proxy of its own namespace
that a ``Gateway`` ref names, otherwise its ``selector`` labels must all be the proxy's
(none: every proxy of the namespace). What a proxy gets (:class:`ProxyPlugins`) is a
frozen value of :class:`ServedPlugin` in the order they run (phase by phase, see
:func:`~pilothouse.kinds.wasm_plugin.phase_order`), so it is a cache input.

A plugin is served only with its module (``modules(url, sha256)``, see
:mod:`pilothouse.security.wasm_modules`). While the module of a plugin's current version
is not there (not fetched yet, or it failed: a checksum mismatch, a fetch error), the
plugin keeps the version it was last served with, module and all, from the previous
index (the last good stays); a plugin never served before is left out of the proxies'
listeners and extension configs until its module arrives (:attr:`waiting` names it).

Which plugins apply to a proxy is a value in the resource cache, under
:class:`WasmPluginInputs`: the :class:`PluginCandidates` of its namespace (every served
plugin of the namespace and of the root) and the proxy's namespace and labels. The
index only groups the candidates by namespace; a selection outlives the PushContext it
was first made for, and an edit evicts the selections of the plugins it changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.wasm_plugin import (
    PHASES,
    attaches,
    is_http,
    phase_order,
    resource_name,
    runs_on,
)
from pilothouse.push.cache import ResourceCache
from pilothouse.push.inputs import FrozenInputs
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.registry.model import Labels
from pilothouse.security.wasm_modules import WasmModule

ModuleLookup = Callable[[str, str], WasmModule | None]
"""(url, sha256) → the module fetched and checked, None while there is none."""


@dataclass(frozen=True, slots=True)
class ServedPlugin:
    """One WasmPlugin version with its module: compared by key, source, resource
    version and module digest (every edit changes the version)."""

    key: ConfigKey
    source: str
    resource_version: str
    module: WasmModule
    config: Config = field(compare=False, repr=False)

    @property
    def resource_name(self) -> str:
        """Its ECDS resource name (and HTTP filter name)."""
        return resource_name(self.key.namespace, self.key.name)

    @property
    def spec(self) -> Any:
        return self.config.spec

    @property
    def is_http(self) -> bool:
        """An HTTP filter (else a network filter)."""
        return is_http(self.config.spec)  # type: ignore[arg-type]

    def runs_on(self, server_side: bool, port: int) -> bool:
        """Whether it runs on a listener of that side and port (its ``match``)."""
        return runs_on(self.config.spec, server_side, port)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ProxyPlugins:
    """The plugins (HTTP and network) that apply to one proxy, in the order they run."""

    plugins: tuple[ServedPlugin, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.plugins)

    def named(self) -> Mapping[str, ServedPlugin]:
        """By ECDS resource name."""
        return {p.resource_name: p for p in self.plugins}


NO_PLUGINS: Final = ProxyPlugins()


@dataclass(frozen=True, slots=True, eq=False)
class PluginCandidates(FrozenInputs):
    """What may apply to a proxy of one namespace: the served plugins of the root
    namespace, then of the namespace."""

    plugins: tuple[ServedPlugin, ...]


NO_CANDIDATES: Final = PluginCandidates(())


class WasmPluginInputs(NamedTuple):
    """What decides which plugins apply to a proxy: its namespace's candidates, its
    namespace (a plugin's targetRefs reach only its own) and its labels. A named tuple:
    one is made and looked up for every proxy and generated type (its first part, of a
    class of its own, keeps it apart from any other cache key)."""

    candidates: PluginCandidates
    namespace: str
    labels: Labels


def select_plugins(inputs: WasmPluginInputs) -> ProxyPlugins:
    """The candidates that apply, phase by phase."""
    namespace, labels = inputs.namespace, inputs.labels
    chosen = {p.key: p for p in inputs.candidates.plugins if attaches(p.config, namespace, labels)}
    if not chosen:
        return NO_PLUGINS
    ordered: list[ServedPlugin] = []
    for phase in PHASES:
        in_phase = [p.config for p in chosen.values() if p.spec.phase == phase]
        ordered.extend(chosen[c.key] for c in phase_order(in_phase))
    return ProxyPlugins(tuple(ordered))


def _no_modules(url: str, sha256: str) -> WasmModule | None:
    return None


class WasmPluginIndex:
    """The WasmPlugins of a context by namespace, each with the module it is served with."""

    def __init__(
        self,
        configs: Iterable[Config],
        mesh: MeshSettings,
        modules: ModuleLookup | None = None,
        previous: WasmPluginIndex | None = None,
    ) -> None:
        self.root = mesh.root_namespace
        lookup = modules or _no_modules
        self.by_key: dict[ConfigKey, Config] = {}
        self.waiting: dict[ConfigKey, str] = {}
        """Plugins whose current version is not served, with the URL they wait for."""
        served: dict[ConfigKey, ServedPlugin] = {}
        for config in configs:
            self.by_key[config.key] = config
            spec: Any = config.spec
            module = lookup(spec.url, spec.sha256)
            if module is not None:
                served[config.key] = ServedPlugin(
                    config.key, config.origin.source, config.resource_version, module, config
                )
                continue
            self.waiting[config.key] = spec.url
            kept = previous.served.get(config.key) if previous is not None else None
            if kept is not None:
                served[config.key] = kept
        self.served: Mapping[ConfigKey, ServedPlugin] = served
        by_namespace: dict[str, list[ServedPlugin]] = {}
        for plugin in served.values():
            by_namespace.setdefault(plugin.key.namespace, []).append(plugin)
        root = self.root
        own_root = tuple(by_namespace.get(root, ()))
        self._root_only = PluginCandidates(own_root) if own_root else NO_CANDIDATES
        self._by_namespace: Mapping[str, PluginCandidates] = {
            space: PluginCandidates((*own_root, *plugins))
            for space, plugins in by_namespace.items()
            if space != root
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WasmPluginIndex):
            return NotImplemented
        return (self.root, self.by_key, self.served) == (other.root, other.by_key, other.served)

    __hash__ = None  # type: ignore[assignment]

    def module_digests(self) -> frozenset[str]:
        """The digests of the modules served (what the module cache must keep)."""
        return frozenset(plugin.module.digest for plugin in self.served.values())

    def inputs(self, proxy: ProxyIdentity) -> WasmPluginInputs | None:
        """What decides the plugins of ``proxy`` (None: no candidate, no plugin)."""
        candidates = self._by_namespace.get(proxy.namespace, self._root_only)
        if not candidates.plugins:
            return None
        return WasmPluginInputs(candidates, proxy.namespace, proxy.labels)

    def for_proxy(self, proxy: ProxyIdentity, cache: ResourceCache | None) -> ProxyPlugins:
        """The served plugins that apply to ``proxy``, phase by phase: chosen once per
        distinct :class:`WasmPluginInputs` and kept in ``cache`` (None: chosen now, kept
        nowhere, for a one-off question)."""
        inputs = self.inputs(proxy)
        if inputs is None:
            return NO_PLUGINS
        if cache is None:
            return select_plugins(inputs)
        return cache.value(inputs, lambda: select_plugins(inputs))

    def selects(self, key: ConfigKey, proxy: ProxyIdentity) -> bool:
        """Whether the WasmPlugin ``key`` (if this index holds it) applies to ``proxy``,
        served or not (what :mod:`pilothouse.push.selected_workloads` asks)."""
        config = self.by_key.get(key)
        if config is None or key.namespace not in (proxy.namespace, self.root):
            return False
        return _attaches(config, proxy)


def _attaches(config: Config, proxy: ProxyIdentity) -> bool:
    return attaches(config, proxy.namespace, proxy.labels)


__all__ = [
    "NO_PLUGINS",
    "ModuleLookup",
    "PluginCandidates",
    "ProxyPlugins",
    "ServedPlugin",
    "WasmPluginIndex",
    "WasmPluginInputs",
    "select_plugins",
]
