"""WasmPlugins in Envoy's terms: the extension config ECDS serves, and the filter that names
it in each connection manager (or filter chain, for a NETWORK plugin).

:func:`extension_config` is istiod's ``TypedExtensionConfig`` for one plugin: named
``extensions.istio.io/wasmplugin/<ns>.<name>``, holding an
``envoy.extensions.filters.http.wasm.v3.Wasm`` (``…network.wasm.v3.Wasm`` for a NETWORK
plugin) whose ``PluginConfig`` has

- ``name`` ``<ns>.<name>``, ``root_id`` = ``pluginName``;
- ``configuration`` = ``google.protobuf.StringValue`` of ``pluginConfig`` as JSON (an
  empty ``Any`` without one);
- ``failure_policy``: FAIL_CLOSE (the default) → FAIL_CLOSED, FAIL_OPEN → FAIL_OPEN,
  FAIL_RELOAD → FAIL_RELOAD;
- ``vm_config``: runtime ``envoy.wasm.runtime.v8``; ``vmConfig.env`` INLINE entries as
  ``key_values``, HOST entries as ``host_env_keys``; and the code **inline**
  (``local.inline_bytes``): pilothouse fetched and checked the module itself, so the
  proxy needs neither a route to where it lives nor a shared filesystem, and no
  istio-agent to rewrite a remote source (istiod sends ``remote.http_uri`` with cluster
  ``_``, which only its agent can resolve; upstream Envoy would NACK it). istiod's
  ``ISTIO_META_WASM_*`` variables are for that agent, which strips them; they are not
  sent.

:func:`discovery_filter` is the HTTP filter that loads it over ECDS (ADS, no initial fetch
timeout, type URLs Wasm and RBAC, no default config: the listener warms until the
config arrives). :func:`place_plugins` puts the filters of a listener's plugins into an
HCM's filter list at istiod's slots: AUTHN plugins before authentication
(``jwt_authn``), AUTHZ ones after it and before authorization (RBAC), STATS then
UNSPECIFIED ones after authorization, before fault, CORS and the router.
:func:`place_network_plugins` does the same for ``type: NETWORK`` plugins among a filter
chain's network filters, before its ``tcp_proxy`` or HCM (AUTHN, AUTHZ before the
network RBAC filters, STATS, UNSPECIFIED after them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from envoy.config.core.v3 import extension_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_components_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.rbac.v3 import rbac_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.wasm.v3 import (  # type: ignore[import-untyped]
    wasm_pb2 as http_wasm_pb2,
)
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.rbac.v3 import (  # type: ignore[import-untyped]
    rbac_pb2 as network_rbac_pb2,
)
from envoy.extensions.filters.network.wasm.v3 import (  # type: ignore[import-untyped]
    wasm_pb2 as network_wasm_pb2,
)
from envoy.extensions.wasm.v3 import wasm_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2, json_format, wrappers_pb2

from pilothouse.api.istio.extensions.v1alpha1 import wasm_pb2 as istio_wasm
from pilothouse.kinds.wasm_plugin import is_http, plugin_name
from pilothouse.push.wasm_plugins import ServedPlugin
from pilothouse.xds.builders.cluster import ads_config_source
from pilothouse.xds.builders.encode import type_url
from pilothouse.xds.builders.http_connection_manager import GRPC_WEB_FILTER
from pilothouse.xds.builders.jwt_authn import JWT_AUTHN_FILTER
from pilothouse.xds.builders.listener import HTTP_CONNECTION_MANAGER, TCP_PROXY
from pilothouse.xds.builders.rbac import HTTP_RBAC_FILTER, NETWORK_RBAC_FILTER

V8_RUNTIME: Final = "envoy.wasm.runtime.v8"
HTTP_WASM_TYPE: Final = type_url(http_wasm_pb2.Wasm())
HTTP_RBAC_TYPE: Final = type_url(rbac_pb2.RBAC())
NETWORK_WASM_TYPE: Final = type_url(network_wasm_pb2.Wasm())
NETWORK_RBAC_TYPE: Final = type_url(network_rbac_pb2.RBAC())
TERMINAL_FILTERS: Final = frozenset({HTTP_CONNECTION_MANAGER, TCP_PROXY})
EXT_AUTHZ_FILTER: Final = "envoy.filters.http.ext_authz"
AUTHN_FILTERS: Final = frozenset({JWT_AUTHN_FILTER})
AUTHZ_FILTERS: Final = frozenset({HTTP_RBAC_FILTER, EXT_AUTHZ_FILTER})
_FAILURE_POLICY: Final = {
    istio_wasm.FAIL_CLOSE: wasm_pb2.FAIL_CLOSED,
    istio_wasm.FAIL_OPEN: wasm_pb2.FAIL_OPEN,
    istio_wasm.FAIL_RELOAD: wasm_pb2.FAIL_RELOAD,
}


def extension_config(plugin: ServedPlugin) -> extension_pb2.TypedExtensionConfig:
    """The ECDS resource of ``plugin``: its Wasm HTTP (or network) filter config, module
    inline."""
    spec: istio_wasm.WasmPlugin = plugin.spec
    config = wasm_pb2.PluginConfig(
        name=plugin_name(plugin.key.namespace, plugin.key.name),
        root_id=spec.plugin_name,
        failure_policy=_FAILURE_POLICY.get(spec.fail_strategy, wasm_pb2.FAIL_CLOSED),
    )
    config.configuration.CopyFrom(plugin_configuration(spec))
    vm = config.vm_config
    vm.runtime = V8_RUNTIME
    vm.code.local.inline_bytes = plugin.module.body
    host_keys = []
    for env in spec.vm_config.env:
        if env.value_from == istio_wasm.HOST:
            host_keys.append(env.name)
        else:
            vm.environment_variables.key_values[env.name] = env.value
    vm.environment_variables.host_env_keys.extend(host_keys)
    wrapped = any_pb2.Any()
    if is_http(spec):
        wrapped.Pack(http_wasm_pb2.Wasm(config=config))
    else:
        wrapped.Pack(network_wasm_pb2.Wasm(config=config))
    return extension_pb2.TypedExtensionConfig(name=plugin.resource_name, typed_config=wrapped)


def plugin_configuration(spec: istio_wasm.WasmPlugin) -> any_pb2.Any:
    """``pluginConfig`` as istiod hands it over: an ``Any`` of a ``StringValue`` holding
    its JSON, or an empty ``Any`` when it has no fields."""
    found = any_pb2.Any()
    if spec.HasField("plugin_config") and spec.plugin_config.fields:
        value = _whole_numbers(json_format.MessageToDict(spec.plugin_config))
        text = json.dumps(value, separators=(",", ":"), sort_keys=True)
        found.Pack(wrappers_pb2.StringValue(value=text))
    return found


def _whole_numbers(value: object) -> object:
    """``value`` with integral floats as ints (a Struct holds every number as a double;
    Go's JSON writes ``1``, not ``1.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value


def discovery_filter(name: str) -> hcm_pb2.HttpFilter:
    """The HTTP filter ``name`` whose config comes over ECDS (ADS), Wasm or RBAC."""
    found = hcm_pb2.HttpFilter(name=name)
    discovery = found.config_discovery
    discovery.config_source.CopyFrom(ads_config_source())
    discovery.type_urls.extend([HTTP_WASM_TYPE, HTTP_RBAC_TYPE])
    return found


def network_discovery_filter(name: str) -> listener_components_pb2.Filter:
    """The network filter ``name`` whose config comes over ECDS (ADS), Wasm or RBAC."""
    found = listener_components_pb2.Filter(name=name)
    discovery = found.config_discovery
    discovery.config_source.CopyFrom(ads_config_source())
    discovery.type_urls.extend([NETWORK_WASM_TYPE, NETWORK_RBAC_TYPE])
    return found


def place_network_plugins(
    filters: list[listener_components_pb2.Filter], plugins: Sequence[ServedPlugin]
) -> list[listener_components_pb2.Filter]:
    """``filters`` (a filter chain's) with the discovery filters of the NETWORK
    ``plugins`` before its ``tcp_proxy`` or HCM: AUTHN and AUTHZ plugins before the
    network RBAC filters there, STATS then UNSPECIFIED ones after them (``filters``
    unchanged when it ends in neither)."""
    end = next((i for i, f in enumerate(filters) if f.name in TERMINAL_FILTERS), None)
    if end is None or not plugins:
        return filters
    rbac = end
    while rbac > 0 and filters[rbac - 1].name == NETWORK_RBAC_FILTER:
        rbac -= 1
    early = [p for p in plugins if p.spec.phase in (istio_wasm.AUTHN, istio_wasm.AUTHZ)]
    late = [p for p in plugins if p not in early]
    return [
        *filters[:rbac],
        *(network_discovery_filter(p.resource_name) for p in early),
        *filters[rbac:end],
        *(network_discovery_filter(p.resource_name) for p in late),
        *filters[end:],
    ]


def place_plugins(manager: hcm_pb2.HttpConnectionManager, plugins: Sequence[ServedPlugin]) -> bool:
    """Insert the discovery filters of ``plugins`` (already in phase and priority order)
    into ``manager``'s filters at istiod's slots; whether anything was inserted."""
    if not plugins:
        return False
    present = list(manager.http_filters)
    start = 1 if present and present[0].name == GRPC_WEB_FILTER else 0
    authn_end = start
    while authn_end < len(present) and present[authn_end].name in AUTHN_FILTERS:
        authn_end += 1
    authz_end = authn_end
    while authz_end < len(present) and present[authz_end].name in AUTHZ_FILTERS:
        authz_end += 1
    by_phase: dict[int, list[hcm_pb2.HttpFilter]] = {}
    for plugin in plugins:
        slot = plugin.spec.phase
        if slot == istio_wasm.UNSPECIFIED_PHASE:
            slot = istio_wasm.STATS  # UNSPECIFIED follows STATS at the same slot
        by_phase.setdefault(slot, []).append(discovery_filter(plugin.resource_name))
    placed = [
        *present[:start],
        *by_phase.get(istio_wasm.AUTHN, ()),
        *present[start:authn_end],
        *by_phase.get(istio_wasm.AUTHZ, ()),
        *present[authn_end:authz_end],
        *by_phase.get(istio_wasm.STATS, ()),
        *present[authz_end:],
    ]
    del manager.http_filters[:]
    manager.http_filters.extend(placed)
    return True
