"""What one push context's proxies get of the kinds chosen per workload: their telemetry
(:mod:`pilothouse.push.telemetry`), WasmPlugins (:mod:`pilothouse.push.wasm_plugins`) and
EnvoyFilter patches (:mod:`pilothouse.push.envoy_filters`).

Each selection is a value in the resource cache under its inputs value
(:class:`~pilothouse.push.telemetry.TelemetryInputs`,
:class:`~pilothouse.push.wasm_plugins.WasmPluginInputs`,
:class:`~pilothouse.push.envoy_filters.EnvoyFilterInputs`), so it outlives the context it
was first made for and an edit evicts the selections it changes. The generators ask for
them for every proxy and every type of a push: a context's :class:`ProxySelections` also
holds what it found, by what of the proxy the inputs read, for the context's life only
(the next context starts empty and finds the selections in the cache), so that a lookup
is one dictionary access, as it was when each index kept its own memo across contexts.
"""

from __future__ import annotations

from pilothouse.push.cache import ResourceCache
from pilothouse.push.envoy_filters import EnvoyFilterIndex, ProxyPatches, proxy_facts
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.telemetry import HostLookup, ProviderHosts, ProxyTelemetry, TelemetryIndex
from pilothouse.push.wasm_plugins import ProxyPlugins, WasmPluginIndex
from pilothouse.registry.model import Labels

Metadata = tuple[tuple[str, str | None], ...]


class ProxySelections:
    """One push context's telemetry, plugins and patches per proxy, found in the cache."""

    def __init__(
        self,
        telemetries: TelemetryIndex,
        wasm_plugins: WasmPluginIndex,
        envoy_filters: EnvoyFilterIndex,
        hosts: HostLookup,
    ) -> None:
        self._telemetries = telemetries
        self._wasm_plugins = wasm_plugins
        self._envoy_filters = envoy_filters
        self._hosts = hosts
        self._providers: ProviderHosts | None = None
        # What this context found, by what of the proxy the inputs read (the namespace
        # picks the candidates; the rest of the context is fixed for its life).
        self._telemetry: dict[tuple[str, Labels, str], ProxyTelemetry] = {}
        self._plugins: dict[tuple[str, Labels], ProxyPlugins] = {}
        self._patches: dict[tuple[str, Labels], ProxyPatches] = {}
        """For namespaces whose EnvoyFilters match on no version or metadata."""
        self._patches_by_facts: dict[tuple[str, Labels, str, Metadata], ProxyPatches] = {}
        """For the others, by the version and metadata values they read as well."""

    def telemetry(self, proxy: ProxyIdentity, cache: ResourceCache) -> ProxyTelemetry:
        """The effective telemetry of ``proxy``."""
        seen = (proxy.namespace, proxy.labels, proxy.node_cluster)
        found = self._telemetry.get(seen)
        if found is None:
            providers = self._providers
            if providers is None:  # the context's services resolve the providers: once
                providers = self._providers = self._telemetries.providers(self._hosts)
            found = self._telemetry[seen] = self._telemetries.for_proxy(proxy, providers, cache)
        return found

    def plugins(self, proxy: ProxyIdentity, cache: ResourceCache) -> ProxyPlugins:
        """The served WasmPlugins that apply to ``proxy``, phase by phase."""
        seen = (proxy.namespace, proxy.labels)
        found = self._plugins.get(seen)
        if found is None:
            found = self._plugins[seen] = self._wasm_plugins.for_proxy(proxy, cache)
        return found

    def patches(self, proxy: ProxyIdentity, cache: ResourceCache) -> ProxyPatches:
        """The EnvoyFilter patches that apply to ``proxy``, in istiod's order."""
        namespace, labels = proxy.namespace, proxy.labels
        seen = (namespace, labels)
        found = self._patches.get(seen)
        if found is not None:
            return found
        candidates = self._envoy_filters.candidates(namespace)
        if not candidates.reads_version and not candidates.metadata_keys:
            found = self._patches[seen] = self._envoy_filters.for_proxy(proxy, cache)
            return found
        facts = (namespace, labels, *proxy_facts(candidates, proxy))
        found = self._patches_by_facts.get(facts)
        if found is None:
            found = self._patches_by_facts[facts] = self._envoy_filters.for_proxy(proxy, cache)
        return found
