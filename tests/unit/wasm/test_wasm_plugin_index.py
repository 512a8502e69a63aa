"""Which WasmPlugins a proxy gets, in which order, and the last good version kept while a
new version's module is missing."""

from __future__ import annotations

from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.wasm_plugin import runs_on
from pilothouse.push.wasm_plugins import WasmPluginIndex
from pilothouse.security.wasm_modules import WasmModule

from .plugins import MODULE, MODULE_SHA, every_module, plugin, router, sidecar

MESH = MeshSettings()
GATEWAY_LABEL = "gateway.networking.k8s.io/gateway-name"


def names(index: WasmPluginIndex, proxy: object) -> list[str]:
    return [p.key.name for p in index.for_proxy(proxy, None).plugins]  # type: ignore[arg-type]


def test_phases_in_filter_order_then_priority_descending_unset_last() -> None:
    index = WasmPluginIndex(
        [
            plugin("unspecified"),
            plugin("stats-low", phase="STATS", priority=1),
            plugin("stats-high", phase="STATS", priority=100),
            plugin("stats-unset", phase="STATS"),
            plugin("authz", phase="AUTHZ"),
            plugin("authn", phase="AUTHN"),
        ],
        MESH,
        every_module,
    )
    assert names(index, sidecar()) == [
        "authn", "authz", "stats-high", "stats-low", "stats-unset", "unspecified",
    ]  # fmt: skip


def test_root_namespace_and_own_namespace_by_selector_and_target_refs() -> None:
    gateway_ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}
    index = WasmPluginIndex(
        [
            plugin("mesh-wide", namespace="istio-system"),
            plugin("other-namespace", namespace="bank"),
            plugin("carts", selector={"matchLabels": {"app": "cart"}}),
            plugin("edge", targetRefs=[gateway_ref]),
            plugin("edge-from-root", namespace="istio-system", targetRefs=[gateway_ref]),
        ],
        MESH,
        every_module,
    )
    assert names(index, sidecar(app="cart")) == ["mesh-wide", "carts"]
    assert names(index, sidecar(app="till")) == ["mesh-wide"]
    assert names(index, router(**{GATEWAY_LABEL: "edge"})) == ["mesh-wide", "edge"]
    assert names(index, router(**{GATEWAY_LABEL: "other"})) == ["mesh-wide"]
    assert index.selects(plugin("carts").key, sidecar(app="cart"))
    assert not index.selects(plugin("carts").key, sidecar(app="till"))
    assert not index.selects(plugin("other-namespace", namespace="bank").key, sidecar())


def test_match_mode_and_ports() -> None:
    server_8080 = plugin(match=[{"mode": "SERVER", "ports": [{"number": 8080}]}]).spec
    assert runs_on(server_8080, True, 8080)  # type: ignore[arg-type]
    assert not runs_on(server_8080, True, 9090)  # type: ignore[arg-type]
    assert not runs_on(server_8080, False, 8080)  # type: ignore[arg-type]
    either = plugin(match=[{"mode": "CLIENT"}, {"ports": [{"number": 9090}]}]).spec
    assert runs_on(either, False, 1)  # type: ignore[arg-type]
    assert runs_on(either, True, 9090) and not runs_on(either, True, 1)  # type: ignore[arg-type]
    assert runs_on(plugin().spec, True, 1)  # type: ignore[arg-type]


def test_a_version_whose_module_is_missing_keeps_the_last_good_one() -> None:
    first = WasmPluginIndex([plugin(sha256=MODULE_SHA)], MESH, every_module)
    (served,) = first.for_proxy(sidecar(), None).plugins
    assert served.resource_version == "1" and not first.waiting

    def nothing(url: str, sha256: str) -> WasmModule | None:
        return None

    edited = plugin(version="2", url="file:///new.wasm", sha256="0" * 64)
    second = WasmPluginIndex([edited], MESH, nothing, first)
    (kept,) = second.for_proxy(sidecar(), None).plugins
    assert kept == served and kept.spec.url == "file:///m.wasm"
    assert second.waiting == {edited.key: "file:///new.wasm"}
    assert second.selects(edited.key, sidecar())
    # the kept version's module is still served: the module cache must keep it
    assert first.module_digests() == second.module_digests() == {served.module.digest}

    never_served = WasmPluginIndex([edited], MESH, nothing)
    assert not never_served.for_proxy(sidecar(), None)
    assert never_served.module_digests() == frozenset()

    fixed = WasmPluginIndex([edited], MESH, lambda u, s: WasmModule(MODULE_SHA, MODULE), second)
    (now,) = fixed.for_proxy(sidecar(), None).plugins
    assert now.resource_version == "2" and not fixed.waiting


def test_network_plugins_are_among_the_proxys_plugins() -> None:
    index = WasmPluginIndex([plugin(type="NETWORK"), plugin("h", type="HTTP")], MESH, every_module)
    found = index.for_proxy(sidecar(), None).plugins
    assert [(p.key.name, p.is_http) for p in found] == [("h", True), ("p", False)]
