"""WasmPlugin validation: Istio's own valid and invalid examples
(``pkg/config/validation/testdata/crds/wasm-{valid,invalid}.yaml``) as istiod judges them,
and the one rule pilothouse adds (an OCI image cannot be served)."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.extensions.v1alpha1.wasm_pb2 import WasmPlugin
from pilothouse.config.load import Loader
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.wasm_plugin import module_scheme, validate_wasm_plugin
from pilothouse.kinds.table import SCHEMAS

SHA = "1ef0c9a92b0420cf25f7fe5d481b231464bc88f486ca3b9c83ed5cc21d2f6210"


def check(spec: dict[str, Any]) -> Report:
    report = Report(namespace="shop")
    validate_wasm_plugin(ParseDict(spec, WasmPlugin()), report)
    return report


@pytest.mark.parametrize(
    "spec",
    [
        {
            "selector": {"matchLabels": {"istio": "ingressgateway"}},
            "url": "file:///opt/filters/openid.wasm",
            "sha256": SHA,
            "phase": "AUTHN",
            "pluginConfig": {"openid_server": "authn", "openid_realm": "ingress"},
        },
        {"url": "http://test"},
        {
            "url": "http://test",
            "vmConfig": {
                "env": [
                    {"name": "test", "valueFrom": "HOST"},
                    {"name": "test2", "valueFrom": "INLINE", "value": "test"},
                    {"name": "test3", "value": "test"},
                ]
            },
        },
        {
            "url": "https://modules.example/x.wasm",
            "match": [{"mode": "SERVER", "ports": [{"number": 8080}]}],
        },
        {
            "url": "http://test",
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}],
        },
    ],
)
def test_istios_valid_examples_pass(spec: dict[str, Any]) -> None:
    report = check(spec)
    assert not report.errors, report.errors


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        ({"url": "", "sha256": SHA}, "spec.url", "needs to be set"),
        ({"url": "#%blah$#@"}, "spec.url", "failed to parse"),
        ({"url": "fake://example.com"}, "spec.url", "unsupported scheme: fake"),
        ({"url": "http://test", "sha256": "foo"}, "spec.sha256", "[a-f0-9]{64}"),
        ({"url": "http://test", "sha256": SHA.upper()}, "spec.sha256", "[a-f0-9]{64}"),
        (
            {"url": "http://test", "vmConfig": {"env": [{"name": "a"}, {"name": "a"}]}},
            "spec.vmConfig.env[1].name",
            "duplicate env",
        ),
        (
            {"url": "http://test", "vmConfig": {"env": [{"name": ""}]}},
            "spec.vmConfig.env[0].name",
            "needs a name",
        ),
        (
            {
                "url": "http://test",
                "vmConfig": {"env": [{"name": "t", "valueFrom": "HOST", "value": "v"}]},
            },
            "spec.vmConfig.env[0].value",
            "only be set when valueFrom is INLINE",
        ),
        (
            {"url": "http://test", "selector": {"matchLabels": {"istio": "bar*"}}},
            "spec.selector.matchLabels",
            "wildcard",
        ),
        (
            {"url": "http://test", "match": [{"ports": [{}]}]},
            "spec.match[0].ports[0].number",
            "out of range",
        ),
        (
            {"url": "http://test", "match": [{"ports": [{"number": 70000}]}]},
            "spec.match[0].ports[0].number",
            "out of range",
        ),
        ({"url": "http://test", "pluginName": "x" * 257}, "spec.pluginName", "at most 256"),
        (
            {"url": "http://test", "imagePullSecret": "x" * 254},
            "spec.imagePullSecret",
            "at most 253",
        ),
        (
            {
                "url": "http://test",
                "selector": {"matchLabels": {"a": "b"}},
                "targetRefs": [
                    {"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "g"}
                ],
            },
            "spec.selector",
            "only one of",
        ),
        ({"url": "file://"}, "spec.url", "names no file"),
        ({"url": "https:///x.wasm"}, "spec.url", "names no host"),
    ],
)
def test_istios_invalid_examples_fail_at_the_field(
    spec: dict[str, Any], path: str, words: str
) -> None:
    errors = check(spec).errors
    assert any(e.path.startswith(path) and words in e.message for e in errors), errors


@pytest.mark.parametrize(
    "url", ["oci://registry:5000/openid:latest", "registry.example/openid:1.0", "test"]
)
def test_an_oci_image_is_refused_with_the_way_out(url: str) -> None:
    """Istio accepts these; pilothouse cannot fetch an image, so it refuses them."""
    assert module_scheme(url) == "oci"
    (error,) = check({"url": url}).errors
    assert error.path == "spec.url"
    assert "OCI image" in error.message and "file:// or http(s)://" in error.message


def test_a_network_plugin_is_accepted() -> None:
    report = check({"url": "http://test", "type": "NETWORK"})
    assert not report.errors and not report.warnings


def test_the_loader_reads_wasm_plugin_yaml_and_refuses_unknown_fields() -> None:
    loader = Loader(SCHEMAS, source="test")
    text = f"""\
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {{name: add-header, namespace: shop}}
spec:
  url: file:///opt/add_header.wasm
  sha256: {SHA}
  phase: STATS
  priority: 10
  failStrategy: FAIL_OPEN
  pluginName: add_header
  pluginConfig: {{header: x-wasm, values: [1, 2]}}
"""
    (config,) = loader.load_strict(text, "mesh.yaml")
    spec = config.spec
    assert isinstance(spec, WasmPlugin)
    assert (config.kind, spec.priority.value, spec.plugin_name) == ("WasmPlugin", 10, "add_header")
    with pytest.raises(Exception, match="nosuchfield"):
        loader.load_strict(text.replace("  phase: STATS", "  nosuchfield: 1"), "mesh.yaml")
