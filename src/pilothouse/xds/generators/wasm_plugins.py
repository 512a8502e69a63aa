"""WasmPlugins put into what the LDS generator built (ECDS serves them: see ecds.py).

:func:`with_plugins` is the hook the LDS generator calls on each set of listeners before
the EnvoyFilter patches (istiod places plugins while it builds listeners, and patches
afterwards): it takes the listeners built for a proxy and the pass's context (GATEWAY or
SIDECAR_OUTBOUND: the client side; SIDECAR_INBOUND: the server side) and returns them
with the discovery filter of each plugin that applies to the proxy and runs on that side
and port (:meth:`~pilothouse.push.wasm_plugins.ServedPlugin.runs_on`) in every HTTP
connection manager (:func:`~pilothouse.xds.builders.wasm_plugin.place_plugins`), or for
a NETWORK plugin among each filter chain's network filters
(:func:`~pilothouse.xds.builders.wasm_plugin.place_network_plugins`). A proxy with none
gets the very mapping it gave. Proxies that poll REST get none: their listeners cannot
load an extension config over ADS.

The result is kept in the resource cache under :class:`PlacedInputs` (the listeners'
bytes, the plugins, the side), so proxies with the same listeners and plugins share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import any_pb2

from pilothouse.push.cache import Resource
from pilothouse.push.wasm_plugins import ProxyPlugins
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.builders.listener import HTTP_CONNECTION_MANAGER
from pilothouse.xds.builders.wasm_plugin import place_network_plugins, place_plugins
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.envoy_filters import SIDECAR_INBOUND


@dataclass(frozen=True, slots=True)
class PlacedInputs:
    """What a set of listeners with plugins is made from: the listeners as built, the
    proxy's plugins and the side (server: a sidecar's inbound listeners)."""

    resources: tuple[Resource, ...]
    plugins: ProxyPlugins
    server_side: bool


def with_plugins(given: GenerationInput, resources: Resources, context: int) -> Resources:
    """``resources`` (listeners) with the proxy's plugins for ``context`` placed."""
    if given.rest is not None:
        return resources
    plugins = given.context.selections.plugins(given.proxy, given.cache)
    if not plugins or not resources:
        return resources
    inputs = PlacedInputs(tuple(resources.values()), plugins, context == SIDECAR_INBOUND)
    placed: Mapping[str, Resource] = given.cache.value(inputs, lambda: place(inputs))
    return placed


def place(inputs: PlacedInputs) -> Mapping[str, Resource]:
    """Decode each listener, place the plugins in its HCMs, encode again (listeners
    without an HCM, or where no plugin runs, keep their bytes)."""
    out: dict[str, Resource] = {}
    for resource in inputs.resources:
        listener = listener_pb2.Listener()
        any_pb2.Any.FromString(resource.body).Unpack(listener)
        if not _place_in_listener(listener, inputs.plugins, inputs.server_side):
            out[resource.name] = resource
            continue
        body = to_any_bytes(listener)
        out[resource.name] = Resource(resource.name, content_hash(body), body)
    return out


def _place_in_listener(
    listener: listener_pb2.Listener, plugins: ProxyPlugins, server_side: bool
) -> bool:
    changed = False
    listener_port = listener.address.socket_address.port_value
    chains = list(listener.filter_chains)
    if listener.HasField("default_filter_chain"):
        chains.append(listener.default_filter_chain)
    for chain in chains:
        match = chain.filter_chain_match
        port = match.destination_port.value if match.HasField("destination_port") else 0
        port = port or listener_port
        running = [p for p in plugins.plugins if p.runs_on(server_side, port)]
        if not running:
            continue
        network = [p for p in running if not p.is_http]
        if network:
            present = list(chain.filters)
            placed = place_network_plugins(present, network)
            if len(placed) != len(present):
                del chain.filters[:]
                chain.filters.extend(placed)
                changed = True
        http = [p for p in running if p.is_http]
        if not http:
            continue
        for network_filter in chain.filters:
            if network_filter.name != HTTP_CONNECTION_MANAGER:
                continue
            manager = hcm_pb2.HttpConnectionManager()
            if not network_filter.typed_config.Unpack(manager):
                continue
            if place_plugins(manager, http):
                network_filter.typed_config.Pack(manager)
                changed = True
    return changed
