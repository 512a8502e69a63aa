"""WasmPlugin modules that cannot be checked or found (PH0121, PH0122), and the
``targetRefs`` of WasmPlugins and EnvoyFilters naming Gateways that are not there
(IST0101) or no Gateway at all (IST0167)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.analysis.mesh import findings

MODULES = "wasmplugin.ModuleAnalyzer"
TARGETS = "targetref.GatewayTargetAnalyzer"
SHA = "a" * 64


def plugin(name: str, url: str, extra: str = "") -> str:
    return (
        "apiVersion: extensions.istio.io/v1alpha1\nkind: WasmPlugin\n"
        f"metadata: {{name: {name}, namespace: shop}}\n"
        f"spec:\n  url: '{url}'\n{extra}"
    )


def test_a_remote_module_without_a_sha256() -> None:
    assert findings(plugin("remote", "https://example.com/a.wasm"), MODULES) == [
        "Warning [PH0121] (WasmPlugin shop/remote mesh.yaml:34) The WasmPlugin fetches its"
        ' module from "https://example.com/a.wasm" without a sha256: a module changed or'
        " replaced where it is served is loaded unchecked."
    ]
    checked = plugin("remote", "https://example.com/a.wasm", f"  sha256: {SHA}\n")
    assert findings(checked, MODULES) == []


def test_a_module_file_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "missing.wasm"
    assert findings(plugin("local", f"file://{missing}"), MODULES) == [
        f"Error [PH0122] (WasmPlugin shop/local mesh.yaml:34) The WasmPlugin's module file \""
        f'{missing}" does not exist here: the plugin is not served until it does.'
    ]
    there = tmp_path / "there.wasm"
    there.write_bytes(b"\0asm\1\0\0\0")
    # a file needs no sha256 (it is read where pilothouse runs)
    assert findings(plugin("local", f"file://{there}"), MODULES) == []


GATEWAY = """
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
"""

FILTER = """
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: gateway-timeout, namespace: shop}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: %s}]
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {connect_timeout: 2s}}
"""


def test_target_refs_name_gateways_that_exist() -> None:
    refs = "  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: wbe}]\n"
    text = GATEWAY + plugin("auth", f"file:///{SHA}.wasm", refs) + "---\n" + FILTER % "webb"
    assert findings(text, TARGETS) == [
        "Error [IST0101] (EnvoyFilter shop/gateway-timeout mesh.yaml:50) Referenced Gateway"
        ' not found: "shop/webb" (did you mean "shop/web"?)',
        "Error [IST0101] (WasmPlugin shop/auth mesh.yaml:42) Referenced Gateway not found:"
        ' "shop/wbe" (did you mean "shop/web"?)',
    ]
    good = "  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]\n"
    text = GATEWAY + plugin("auth", f"file:///{SHA}.wasm", good) + "---\n" + FILTER % "web"
    assert findings(text, TARGETS) == []


def test_target_refs_that_name_no_gateway_select_no_proxy() -> None:
    refs = "  targetRefs: [{group: '', kind: Service, name: reviews}]\n"
    assert findings(plugin("auth", "https://example.com/a.wasm", refs), TARGETS) == [
        "Warning [IST0167] (WasmPlugin shop/auth mesh.yaml:34) The policy has no impact: its"
        " targetRefs name no Gateway, and pilothouse serves no waypoints."
    ]
