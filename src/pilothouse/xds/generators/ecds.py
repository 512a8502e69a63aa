"""ECDS: extension configs by name, for the filters that load theirs over ADS.

The generator serves ECDS
(``type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig``), by name as Envoy
asks: the extension configs the proxy's EnvoyFilters ADD (``applyTo: EXTENSION_CONFIG``;
istiod ignores MERGE, REPLACE and the rest there; each is recorded as applied once a
proxy asked for its name, see :mod:`pilothouse.push.envoy_filter_status`), then the
proxy's plugins, each encoded once under its :class:`ServedPlugin` value. A name neither
answers is left out (Envoy keeps waiting for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Final

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.protocol.type_urls import ECDS
from pilothouse.push.cache import Resource
from pilothouse.push.wasm_plugins import ServedPlugin
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.builders.wasm_plugin import extension_config
from pilothouse.xds.generators.base import GenerationInput, Resources

_ADD: Final = EnvoyFilter.Patch.ADD


@dataclass(frozen=True, slots=True)
class ExtensionInputs:
    """What one plugin's ECDS resource is made from: the plugin (its version, module)."""

    plugin: ServedPlugin


class ExtensionConfigGenerator:
    """ECDS: the extension configs a proxy's listeners name."""

    type_url = ECDS

    def generate(self, given: GenerationInput) -> Resources:
        names = given.names
        if not names:
            return {}
        found: dict[str, Resource] = {}
        filters = given.context.envoy_filters
        additions = [
            r
            for r in given.context.selections.patches(given.proxy, given.cache).rules
            if r.apply_to == EnvoyFilter.EXTENSION_CONFIG and r.operation == _ADD
        ]
        applied = []
        for rule in additions:
            name = rule.value.name
            if name in names and name not in found:
                body = to_any_bytes(rule.value)
                found[name] = Resource(name, content_hash(body), body)
                applied.append((rule.key, rule.position))
        if additions:
            filters.outcomes.record(((r.key, r.position) for r in additions), applied)
        plugins = given.context.selections.plugins(given.proxy, given.cache).named()
        for name in sorted(names):
            plugin = plugins.get(name)
            if plugin is None or name in found:
                continue
            found[name] = given.cache.value(ExtensionInputs(plugin), partial(_encode, plugin))
        return found


def _encode(plugin: ServedPlugin) -> Resource:
    message = extension_config(plugin)
    body = to_any_bytes(message)
    return Resource(message.name, content_hash(body), body)
