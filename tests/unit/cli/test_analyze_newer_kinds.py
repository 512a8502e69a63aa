"""`pilothouse analyze` over a directory mixing the kinds of [18]-[20] with the example
mesh: every EnvoyFilter, WasmPlugin, ProxyConfig and Gateway API check reports at the
line of the field it is about, ``-o json`` gives the same codes, and with the broken
files gone the mesh is clean again."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pilothouse.cli.main import main

ROOT = Path(__file__).resolve().parents[3]

HCM = "envoy.filters.network.http_connection_manager"


def next_to(http_filter: str) -> str:
    """A listener match of the HTTP filter ``http_filter`` in the connection manager."""
    return "{filterChain: {filter: {name: " + HCM + ", subFilter: {name: " + http_filter + "}}}}"


def value(name: str, message: str) -> str:
    return "{name: " + name + ", typed_config: {'@type': type.googleapis.com/" + message + "}}"


ROUTER = next_to("envoy.filters.http.router")
RATELIMIT = next_to("envoy.filters.http.ratelimit")
LUA = value("envoy.filters.http.lua", "envoy.extensions.filters.http.lua.v3.Lua")
ECHO = value("envoy.filters.network.echo", "envoy.extensions.filters.network.echo.v3.Echo")
ROUTER_VALUE = value("envoy.filters.http.router", "envoy.extensions.filters.http.router.v3.Router")

ENVOY_FILTERS = f"""\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {{name: lua-a, namespace: bookinfo}}
spec:
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      listener: {ROUTER}
    patch:
      operation: INSERT_BEFORE
      value: {LUA}
  - applyTo: HTTP_FILTER
    match:
      listener: {RATELIMIT}
    patch: {{operation: REMOVE}}
  - applyTo: NETWORK_FILTER
    match:
      listener: {{filterChain: {{filter: {{name: envoy.filters.network.mongo_proxy}}}}}}
    patch:
      operation: INSERT_AFTER
      value: {ECHO}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {{name: lua-b, namespace: bookinfo}}
spec:
  targetRefs: [{{kind: Gateway, group: gateway.networking.k8s.io, name: wbe}}]
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      listener: {ROUTER}
    patch:
      operation: REPLACE
      value: {ROUTER_VALUE}
"""

PLUGINS = """\
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: remote, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: productpage}}
  url: https://example.com/plugin.wasm
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: local, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: productpage}}
  url: file:///nonexistent/plugin.wasm
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: oci, namespace: bookinfo}
spec:
  url: oci://ghcr.io/acme/plugin:1.0
"""

PROXY_CONFIGS = """\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: two-threads, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: productpage}}
  concurrency: 2
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: four-threads, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: productpage}}
  concurrency: 4
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: nobody, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: nobody}}
"""

ROUTES = """\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: bookinfo}
spec:
  parentRefs: [{name: wbe}, {name: web}, {kind: Service, group: "", name: detials}]
  rules:
  - backendRefs: [{name: ratingz, port: 9080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: across, namespace: bookinfo}
spec:
  parentRefs: [{name: web}]
  rules:
  - backendRefs: [{name: reviews, namespace: other, port: 9080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: elsewhere, namespace: bookinfo}
spec:
  gatewayClassName: nginx
  listeners: [{name: http, port: 80, protocol: HTTP}]
"""

FILES = {
    "envoyfilters.yaml": ENVOY_FILTERS,
    "plugins.yaml": PLUGINS,
    "proxyconfigs.yaml": PROXY_CONFIGS,
    "routes.yaml": ROUTES,
}
FOUND = re.compile(r"^(\w+) \[(\w+)\] \((\w+ [\w/-]+) (\S+):(\d+)\) ")


def test_a_directory_mixing_the_newer_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mesh = tmp_path / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    broken = mesh / "broken"
    broken.mkdir()
    for name, text in FILES.items():
        (broken / name).write_text(text)
    assert main(["analyze", str(mesh)]) == 79
    lines = capsys.readouterr().out.splitlines()
    found = []
    for line in lines:
        matched = FOUND.match(line)
        assert matched, line
        _, code, resource, file, number = matched.groups()
        found.append((code, resource, Path(file).name, int(number)))
    assert found == [
        ("IST0151", "EnvoyFilter bookinfo/lua-a", "envoyfilters.yaml", 10),
        ("PH0111", "EnvoyFilter bookinfo/lua-a", "envoyfilters.yaml", 14),
        ("PH0112", "EnvoyFilter bookinfo/lua-a", "envoyfilters.yaml", 18),
        ("IST0101", "EnvoyFilter bookinfo/lua-b", "envoyfilters.yaml", 27),
        ("IST0151", "EnvoyFilter bookinfo/lua-b", "envoyfilters.yaml", 33),
        ("IST0171", "HTTPRoute bookinfo/across", "routes.yaml", 14),
        ("IST0101", "HTTPRoute bookinfo/broken", "routes.yaml", 5),
        ("IST0101", "HTTPRoute bookinfo/broken", "routes.yaml", 5),
        ("IST0101", "HTTPRoute bookinfo/broken", "routes.yaml", 6),
        ("PH0141", "KubernetesGateway bookinfo/elsewhere", "routes.yaml", 21),
        ("PH0131", "ProxyConfig bookinfo/four-threads", "proxyconfigs.yaml", 12),
        ("IST0127", "ProxyConfig bookinfo/nobody", "proxyconfigs.yaml", 19),
        ("PH0131", "ProxyConfig bookinfo/two-threads", "proxyconfigs.yaml", 5),
        ("PH0122", "WasmPlugin bookinfo/local", "plugins.yaml", 13),
        ("IST0106", "WasmPlugin bookinfo/oci", "plugins.yaml", 19),
        ("PH0121", "WasmPlugin bookinfo/remote", "plugins.yaml", 6),
    ]
    text = "\n".join(lines)
    assert 'Referenced Gateway not found: "bookinfo/wbe" (did you mean "bookinfo/web"?)' in text
    assert 'Referenced Service not found: "bookinfo/detials" (did you mean "details"?)' in text
    assert 'Referenced backendRef not found: "bookinfo/ratingz"' in text
    assert "reason=RefNotPermitted" in text

    assert main(["analyze", str(mesh), "-o", "json"]) == 79
    listed = json.loads(capsys.readouterr().out)
    assert [m["code"] for m in listed] == [code for code, *_ in found]
    assert {m["level"] for m in listed if m["code"].startswith("PH01")} == {
        "Warning",
        "Error",
        "Info",
    }

    shutil.rmtree(broken)
    assert main(["analyze", str(mesh)]) == 0
    assert "No validation issues" in capsys.readouterr().err
