"""What one push context's proxies get of the kinds chosen per workload: their telemetry
(:mod:`pilothouse.push.telemetry`), WasmPlugins (:mod:`pilothouse.push.wasm_plugins`) and
EnvoyFilter patches (:mod:`pilothouse.push.envoy_filters`).

Each selection is a value in the resource cache under its inputs value
(:class:`~pilothouse.push.telemetry.TelemetryInputs`,
:class:`~pilothouse.push.wasm_plugins.WasmPluginInputs`,
:class:`~pilothouse.push.envoy_filters.EnvoyFilterInputs`), so it outlives the context it
was first made for and an edit evicts the selections it changes. The generators ask for
them for every proxy and every type of a push: a context's :class:`ProxySelections` also
holds what it found under each inputs value, for the context's life only (the next
context starts empty and finds the selections in the cache), so that a lookup is one
dictionary access, as it was when each index kept its own memo across contexts.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from pilothouse.push.cache import ResourceCache
from pilothouse.push.envoy_filters import (
    NO_PATCHES,
    EnvoyFilterIndex,
    ProxyPatches,
    select_patches,
)
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.telemetry import (
    NOTHING,
    HostLookup,
    ProviderHosts,
    ProxyTelemetry,
    TelemetryIndex,
    select_telemetry,
)
from pilothouse.push.wasm_plugins import NO_PLUGINS, ProxyPlugins, WasmPluginIndex, select_plugins

Inputs = TypeVar("Inputs", bound=Hashable)
Selected = TypeVar("Selected")


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
        self._found: dict[Hashable, object] = {}
        """Each inputs value's selection, as the cache gave it during this context."""

    def telemetry(self, proxy: ProxyIdentity, cache: ResourceCache) -> ProxyTelemetry:
        """The effective telemetry of ``proxy``."""
        providers = self._providers
        if providers is None:  # the context's services resolve the providers: once
            providers = self._providers = self._telemetries.providers(self._hosts)
        inputs = self._telemetries.inputs(proxy, providers)
        if inputs is None:
            return NOTHING
        return self._find(inputs, cache, select_telemetry)

    def plugins(self, proxy: ProxyIdentity, cache: ResourceCache) -> ProxyPlugins:
        """The served WasmPlugins that apply to ``proxy``, phase by phase."""
        inputs = self._wasm_plugins.inputs(proxy)
        if inputs is None:
            return NO_PLUGINS
        return self._find(inputs, cache, select_plugins)

    def patches(self, proxy: ProxyIdentity, cache: ResourceCache) -> ProxyPatches:
        """The EnvoyFilter patches that apply to ``proxy``, in istiod's order."""
        inputs = self._envoy_filters.inputs(proxy)
        if inputs is None:
            return NO_PATCHES
        return self._find(inputs, cache, select_patches)

    def _find(
        self, inputs: Inputs, cache: ResourceCache, select: Callable[[Inputs], Selected]
    ) -> Selected:
        found = self._found.get(inputs)
        if found is None:
            found = self._found[inputs] = cache.value(inputs, lambda: select(inputs))
        return found  # type: ignore[return-value]
