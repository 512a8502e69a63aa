"""Which Telemetry objects, WasmPlugins and EnvoyFilter patches apply to a proxy is kept in
the resource cache under an inputs value, not in the index: a selection outlives the
index (and the push context) it was first made for, the proxies of one workload share
it, and an edit evicts exactly the selections of the namespace it changes (all of them
for one in the root namespace). A push context asks the cache once per inputs value."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.envoy_filters import EnvoyFilterIndex
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.telemetry import TelemetryIndex
from pilothouse.push.wasm_plugins import WasmPluginIndex
from tests.unit.wasm.plugins import every_module, plugin
from tests.unit.xds_server.generation_server import GenerationServer

ROOT = "istio-system"
MESH = MeshSettings()
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def pod(namespace: str, name: str, **metadata: str) -> ProxyIdentity:
    node = f"sidecar~10.0.0.{len(name)}~{name}.{namespace}~{namespace}.svc.cluster.local"
    meta = {"LABELS": {"app": "cart"}, "POD_NAME": name, **metadata}
    return parse_node(node, meta, node_cluster=f"cart.{namespace}")


SHOP = pod("shop", "cart-1")
SHOP_AGAIN = pod("shop", "cart-22")
"""Another pod of the same workload: other name, address and metadata."""
BANK = pod("bank", "cart-1")


def telemetry(name: str, namespace: str, version: str) -> Config:
    doc = {
        "apiVersion": "telemetry.istio.io/v1",
        "kind": "Telemetry",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessLogging": [
                {"providers": [{"name": "envoy"}], "filter": {"expression": f"v == {version}"}}
            ]
        },
    }
    (loaded,) = Loader(SCHEMAS, source="test").load_strict(yaml.safe_dump(doc), "t.yaml")
    return Config(
        loaded.kind, name, namespace, loaded.spec, resource_version=version, creation_time=T0
    )


def envoy_filter(name: str, namespace: str, version: str, **proxy_match: Any) -> Config:
    patch: dict[str, Any] = {"applyTo": "CLUSTER", "patch": {"operation": "REMOVE"}}
    if proxy_match:
        patch["match"] = {"proxy": proxy_match}
    message = ParseDict({"configPatches": [patch]}, EnvoyFilter())
    return Config(
        "EnvoyFilter", name, namespace, message, resource_version=version, creation_time=T0
    )


@dataclass(frozen=True)
class Selection:
    """One kind's config maker, index and selection call."""

    name: str
    config: Callable[[str, str, str], Config]
    index: Callable[[list[Config]], Any]
    select: Callable[[Any, ProxyIdentity, ResourceCache], object]


KINDS = [
    Selection(
        "Telemetry",
        telemetry,
        lambda configs: TelemetryIndex(configs, MESH),
        lambda index, proxy, cache: index.for_proxy(proxy, index.providers(lambda host: ()), cache),
    ),
    Selection(
        "WasmPlugin",
        lambda name, namespace, version: plugin(name, namespace, version),
        lambda configs: WasmPluginIndex(configs, MESH, every_module),
        lambda index, proxy, cache: index.for_proxy(proxy, cache),
    ),
    Selection(
        "EnvoyFilter",
        envoy_filter,
        lambda configs: EnvoyFilterIndex(configs, MESH),
        lambda index, proxy, cache: index.for_proxy(proxy, cache),
    ),
]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_a_selection_is_kept_in_the_cache_shared_and_outlives_its_index(kind: Selection) -> None:
    configs = [kind.config("mesh", ROOT, "1"), kind.config("own", "shop", "1")]
    cache = ResourceCache()
    first = kind.index(configs)
    shop = kind.select(first, SHOP, cache)
    bank = kind.select(first, BANK, cache)
    assert shop and bank and shop != bank  # bank gets only the root's
    assert kind.select(first, SHOP_AGAIN, cache) is shop  # one entry per workload
    assert (cache.stats.misses, cache.stats.hits, len(cache)) == (2, 1, 2)

    # The next push context's index, made from the same objects (another kind changed).
    again = kind.index(list(configs))
    assert kind.select(again, SHOP, cache) is shop
    assert kind.select(again, BANK, cache) is bank
    assert (cache.stats.misses, cache.stats.hits) == (2, 3)

    # The index keeps nothing of its own: another cache chooses again.
    elsewhere = ResourceCache()
    assert kind.select(again, SHOP, elsewhere) == shop
    assert elsewhere.stats.misses == 1


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_an_edit_evicts_exactly_the_selections_it_changes(kind: Selection) -> None:
    root, shop_own = kind.config("mesh", ROOT, "1"), kind.config("own", "shop", "1")
    bank_own = kind.config("own", "bank", "1")
    cache = ResourceCache()
    first = kind.index([root, shop_own, bank_own])
    shop, bank = kind.select(first, SHOP, cache), kind.select(first, BANK, cache)

    edited = kind.config("own", "bank", "2")
    assert cache.invalidate([edited.key]) == 1  # bank's selection only
    after = kind.index([root, shop_own, edited])
    assert kind.select(after, SHOP, cache) is shop
    new_bank = kind.select(after, BANK, cache)
    assert new_bank != bank
    assert (cache.stats.misses, cache.stats.hits) == (3, 1)

    root_edited = kind.config("mesh", ROOT, "2")
    assert cache.invalidate([root_edited.key]) == 2  # every namespace's
    last = kind.index([root_edited, shop_own, edited])
    kind.select(last, SHOP, cache)
    kind.select(last, BANK, cache)
    assert (cache.stats.misses, cache.stats.hits, len(cache)) == (5, 1, 2)  # chosen again


def test_envoy_filter_selections_key_on_only_the_proxy_facts_their_patches_match() -> None:
    index = EnvoyFilterIndex(
        [envoy_filter("gold", "shop", "1", metadata={"TIER": "gold"}, proxyVersion="^1\\.2")],
        MESH,
    )
    cache = ResourceCache()
    gold = pod("shop", "a", TIER="gold", ISTIO_VERSION="1.24.0")
    gold_again = pod("shop", "bb", TIER="gold", ISTIO_VERSION="1.24.0", OTHER="x")
    silver = pod("shop", "c", TIER="silver", ISTIO_VERSION="1.24.0")
    old = pod("shop", "d", TIER="gold", ISTIO_VERSION="1.9.0")
    patched = index.for_proxy(gold, cache)
    assert patched.rules and index.for_proxy(gold_again, cache) is patched
    assert not index.for_proxy(silver, cache) and not index.for_proxy(old, cache)
    assert (cache.stats.misses, cache.stats.hits, len(cache)) == (3, 1, 3)


MESH_TEXT = """\
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: logs, namespace: istio-system}
spec:
  accessLogging: [{providers: [{name: envoy}]}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: timeouts, namespace: shop}
spec:
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {connect_timeout: 2s}}
"""
UNRELATED = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: elsewhere, namespace: other}
spec:
  hosts: [elsewhere.other.svc.cluster.local]
  http: [{route: [{destination: {host: elsewhere.other.svc.cluster.local}}]}]
"""


def test_a_context_asks_the_cache_once_per_inputs_and_the_next_context_finds_it_there() -> None:
    server = GenerationServer(MESH_TEXT)
    cache, first = server.cache, server.context
    telemetry = first.selections.telemetry(SHOP, cache)
    patches = first.selections.patches(SHOP, cache)
    assert telemetry.applied_from and patches.rules
    assert (cache.stats.misses, cache.stats.hits) == (2, 0)
    for proxy in (SHOP, SHOP_AGAIN, SHOP):  # the context keeps what it found
        assert first.selections.telemetry(proxy, cache) is telemetry
        assert first.selections.patches(proxy, cache) is patches
    assert (cache.stats.misses, cache.stats.hits) == (2, 0)

    server.push(server.apply(UNRELATED))  # a push for a change these kinds do not read
    second = server.context
    assert second is not first and second.selections is not first.selections
    assert second.selections.telemetry(SHOP, cache) is telemetry
    assert second.selections.patches(SHOP_AGAIN, cache) is patches
    assert (cache.stats.misses, cache.stats.hits) == (2, 2)


def test_a_context_tells_apart_the_proxies_a_patch_s_match_proxy_tells_apart() -> None:
    server = GenerationServer(
        MESH_TEXT
        + """\
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: gold, namespace: shop}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {proxy: {metadata: {TIER: gold}}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}
"""
    )
    cache, selections = server.cache, server.context.selections
    gold = selections.patches(pod("shop", "a", TIER="gold"), cache)
    silver = selections.patches(pod("shop", "b", TIER="silver"), cache)
    assert sorted(r.key.name for r in gold.rules) == ["gold", "timeouts"]
    assert [r.key.name for r in silver.rules] == ["timeouts"]
    assert selections.patches(pod("shop", "cc", TIER="gold", OTHER="x"), cache) is gold
    assert selections.patches(pod("shop", "d", TIER="silver"), cache) is silver
    assert cache.stats.misses == 2
