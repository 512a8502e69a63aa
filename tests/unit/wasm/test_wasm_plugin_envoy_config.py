"""What a WasmPlugin becomes in Envoy's config: the ECDS resource, the discovery filter at
its phase in each HTTP connection manager, and EnvoyFilter EXTENSION_CONFIG additions."""

from __future__ import annotations

import json

from envoy.config.core.v3 import extension_pb2
from envoy.config.listener.v3 import listener_components_pb2, listener_pb2
from envoy.extensions.filters.http.wasm.v3 import wasm_pb2 as http_wasm_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.wasm.v3 import wasm_pb2
from google.protobuf import any_pb2, wrappers_pb2

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import build_context
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.wasm_plugins import WasmPluginIndex
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.builders.wasm_plugin import (
    extension_config,
    place_network_plugins,
    place_plugins,
)
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.ecds import ExtensionConfigGenerator
from pilothouse.xds.generators.lds import ListenerGenerator

from .plugins import MODULE, every_module, plugin, router, sidecar

WASM = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"
RBAC = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
HCM = "envoy.filters.network.http_connection_manager"
NAME = "extensions.istio.io/wasmplugin/shop.p"

GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: p, namespace: shop}
spec: {url: "file:///m.wasm", phase: AUTHZ, match: [{mode: CLIENT}]}
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: inbound-only, namespace: shop}
spec: {url: "file:///m.wasm", match: [{mode: SERVER}]}
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: l4, namespace: shop}
spec: {url: "file:///m.wasm", type: NETWORK}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: ext, namespace: shop}
spec:
  configPatches:
  - applyTo: EXTENSION_CONFIG
    patch:
      operation: ADD
      value:
        name: my-lua
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
          default_source_code: {inline_string: "-- x"}
  - applyTo: EXTENSION_CONFIG
    patch:
      operation: MERGE
      value:
        name: merged
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
"""


def served(spec: dict[str, object]) -> extension_pb2.TypedExtensionConfig:
    (found,) = WasmPluginIndex([plugin(**spec)], MeshSettings(), every_module).served.values()
    return extension_config(found)


def plugin_config(spec: dict[str, object]) -> wasm_pb2.PluginConfig:
    wasm = http_wasm_pb2.Wasm()
    config = served(spec)
    assert config.typed_config.Unpack(wasm)
    return wasm.config


def test_the_extension_config_is_istiods_with_the_module_inline() -> None:
    spec = {
        "pluginName": "add_header",
        "pluginConfig": {"header": "x-wasm", "count": 2, "on": True},
        "vmConfig": {"env": [{"name": "POD", "valueFrom": "HOST"}, {"name": "T", "value": "v"}]},
    }
    config = served(spec)
    assert config.name == NAME and config.typed_config.type_url == WASM
    wasm = plugin_config(spec)
    assert (wasm.name, wasm.root_id) == ("shop.p", "add_header")
    assert wasm.failure_policy == wasm_pb2.FAIL_CLOSED
    text = wrappers_pb2.StringValue()
    assert wasm.configuration.Unpack(text)
    assert json.loads(text.value) == {"header": "x-wasm", "count": 2, "on": True}
    assert '"count":2' in text.value
    vm = wasm.vm_config
    assert vm.runtime == "envoy.wasm.runtime.v8"
    assert vm.code.local.inline_bytes == MODULE
    assert dict(vm.environment_variables.key_values) == {"T": "v"}
    assert list(vm.environment_variables.host_env_keys) == ["POD"]


def test_fail_strategy_and_an_empty_plugin_config() -> None:
    assert plugin_config({"failStrategy": "FAIL_OPEN"}).failure_policy == wasm_pb2.FAIL_OPEN
    assert plugin_config({"failStrategy": "FAIL_RELOAD"}).failure_policy == wasm_pb2.FAIL_RELOAD
    assert plugin_config({}).configuration == any_pb2.Any()


def test_plugins_go_to_istiods_slots_around_authentication_and_authorization() -> None:
    index = WasmPluginIndex(
        [
            plugin("n", phase="AUTHN"),
            plugin("z", phase="AUTHZ"),
            plugin("s", phase="STATS"),
            plugin("u"),
        ],
        MeshSettings(),
        every_module,
    )
    manager = hcm_pb2.HttpConnectionManager()
    for name in (
        "envoy.filters.http.grpc_web", "envoy.filters.http.jwt_authn", "envoy.filters.http.rbac",
        "envoy.filters.http.rbac", "envoy.filters.http.fault", "envoy.filters.http.router",
    ):  # fmt: skip
        manager.http_filters.add(name=name)
    assert place_plugins(manager, index.for_proxy(sidecar(), None).plugins)
    short = [f.name.rsplit("/", 1)[-1].rsplit(".", 1)[-1] for f in manager.http_filters]
    assert short == ["grpc_web", "n", "jwt_authn", "z", "rbac", "rbac", "s", "u", "fault", "router"]
    discovered = manager.http_filters[1].config_discovery
    assert list(discovered.type_urls) == [WASM, RBAC]
    assert discovered.config_source.HasField("ads")
    assert not discovered.HasField("default_config")


def test_network_plugins_go_before_the_terminal_filter_around_network_rbac() -> None:
    index = WasmPluginIndex(
        [
            plugin("n", phase="AUTHN", type="NETWORK"),
            plugin("z", phase="AUTHZ", type="NETWORK"),
            plugin("s", phase="STATS", type="NETWORK"),
        ],
        MeshSettings(),
        every_module,
    )
    plugins = index.for_proxy(sidecar(), None).plugins
    chain = [
        listener_components_pb2.Filter(name=n)
        for n in ("envoy.filters.network.rbac", "envoy.filters.network.tcp_proxy")
    ]
    placed = [f.name.rsplit(".", 1)[-1] for f in place_network_plugins(chain, plugins)]
    assert placed == ["n", "z", "rbac", "s", "tcp_proxy"]
    assert list(place_network_plugins(chain, plugins)[0].config_discovery.type_urls) == [
        "type.googleapis.com/envoy.extensions.filters.network.wasm.v3.Wasm",
        "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC",
    ]
    no_terminal = [listener_components_pb2.Filter(name="envoy.filters.network.rbac")]
    assert place_network_plugins(no_terminal, plugins) == no_terminal
    (config,) = [extension_config(p) for p in plugins if p.key.name == "s"]
    assert config.typed_config.type_url.endswith("filters.network.wasm.v3.Wasm")


def context_with(text: str) -> tuple[object, ServiceEntryRegistry]:
    store = MemoryStore("test")
    for config in Loader(SCHEMAS, source="test").load_strict(text, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    registry = ServiceEntryRegistry(store, lambda update: None)
    registry.initial_load()
    context = build_context(
        store, registry.services, MeshSettings(), "v1", wasm_modules=every_module
    )
    return context, registry


def generate(generator: object, proxy: ProxyIdentity, names: frozenset[str] | None) -> dict:  # type: ignore[type-arg]
    context, registry = context_with(GATEWAY)
    given = GenerationInput(
        proxy=proxy,
        scope=context.scope(proxy),  # type: ignore[attr-defined]
        context=context,  # type: ignore[arg-type]
        endpoints=registry.endpoint_index,
        cache=ResourceCache(),
        names=names,
    )
    return dict(generator.generate(given))  # type: ignore[attr-defined]


def http_filters(resources: dict) -> list[str]:  # type: ignore[type-arg]
    found = []
    for resource in resources.values():
        listener = listener_pb2.Listener()
        any_pb2.Any.FromString(resource.body).Unpack(listener)
        for chain in listener.filter_chains:
            for network_filter in chain.filters:
                if network_filter.name == HCM:
                    manager = hcm_pb2.HttpConnectionManager()
                    network_filter.typed_config.Unpack(manager)
                    found += [f.name for f in manager.http_filters]
    return found


def network_filters(resources: dict) -> list[str]:  # type: ignore[type-arg]
    found = []
    for resource in resources.values():
        listener = listener_pb2.Listener()
        any_pb2.Any.FromString(resource.body).Unpack(listener)
        for chain in listener.filter_chains:
            found += [f.name for f in chain.filters]
    return found


def test_a_gateway_listener_names_its_client_side_plugins_before_the_router() -> None:
    gateway = router(istio="ingressgateway")
    listeners = generate(ListenerGenerator(), gateway, None)
    assert network_filters(listeners) == ["extensions.istio.io/wasmplugin/shop.l4", HCM]
    filters = http_filters(listeners)
    assert filters.count(NAME) == 1
    assert "extensions.istio.io/wasmplugin/shop.inbound-only" not in filters
    assert filters.index(NAME) < filters.index("envoy.filters.http.router")


def test_ecds_serves_the_named_plugins_and_envoy_filter_additions() -> None:
    gateway = router(istio="ingressgateway")
    wanted = frozenset({NAME, "my-lua", "merged", "extensions.istio.io/wasmplugin/shop.absent"})
    found = generate(ExtensionConfigGenerator(), gateway, wanted)
    assert sorted(found) == ["extensions.istio.io/wasmplugin/shop.p", "my-lua"]
    added = extension_pb2.TypedExtensionConfig()
    any_pb2.Any.FromString(found["my-lua"].body).Unpack(added)
    assert added.typed_config.type_url.endswith("lua.v3.Lua")
    assert generate(ExtensionConfigGenerator(), gateway, None) == {}


def test_an_extension_config_addition_is_reported_applied_once_served() -> None:
    context, registry = context_with(GATEWAY)
    gateway = router(istio="ingressgateway")
    given = GenerationInput(
        proxy=gateway,
        scope=context.scope(gateway),  # type: ignore[attr-defined]
        context=context,  # type: ignore[arg-type]
        endpoints=registry.endpoint_index,
        cache=ResourceCache(),
        names=frozenset({"my-lua"}),
    )
    envoy_filters = context.envoy_filters  # type: ignore[attr-defined]
    statuses = {r.position: str(r.status) for r in envoy_filters.statuses()}
    assert statuses == {0: "no proxy", 1: "dropped"}  # MERGE has no effect there
    ExtensionConfigGenerator().generate(given)
    statuses = {r.position: str(r.status) for r in envoy_filters.statuses()}
    assert statuses == {0: "applied", 1: "dropped"}
