"""MeshConfig ``defaultConfig`` and the ``proxy.istio.io/config`` annotation: the fields
pilothouse applies are decoded strictly, the others accepted and named as not applied;
``defaultConfig`` is served again over MCP."""

from __future__ import annotations

import pytest

from pilothouse.config.meshconfig import MeshConfigError, load_mesh_config, mesh_config_message
from pilothouse.config.proxy_defaults import ProxyDefaultsError, parse_proxy_config_annotation

MESH = """\
rootNamespace: istio-system
defaultConfig:
  concurrency: 2
  proxyMetadata:
    ISTIO_META_DNS_CAPTURE: "true"
  image: {imageType: distroless}
  holdApplicationUntilProxyStarts: true
"""


def test_default_config_keeps_what_bootstrap_applies_and_names_the_rest() -> None:
    loaded = load_mesh_config(MESH, "mesh.yaml")
    default = loaded.message.default_config
    assert default.concurrency.value == 2
    assert dict(default.proxy_metadata) == {"ISTIO_META_DNS_CAPTURE": "true"}
    assert default.image.image_type == "distroless"
    assert loaded.warnings == (
        "mesh.yaml:7: defaultConfig.holdApplicationUntilProxyStarts: accepted;"
        " not applied by pilothouse",
    )


def test_default_config_is_served_over_mcp_as_read() -> None:
    loaded = load_mesh_config(MESH, "mesh.yaml")
    served = mesh_config_message(loaded.mesh)
    assert served.default_config == loaded.message.default_config


def test_a_bad_concurrency_is_an_error_with_its_line() -> None:
    text = "defaultConfig:\n  concurrency: many\n"
    with pytest.raises(MeshConfigError, match=r"mesh.yaml:2: defaultConfig.concurrency"):
        load_mesh_config(text, "mesh.yaml")


def test_the_annotation_is_read_strictly_for_the_applied_fields() -> None:
    message, dropped = parse_proxy_config_annotation(
        "concurrency: 1\nproxyMetadata: {A: b}\ndrainDuration: 5s\n"
    )
    assert message.concurrency.value == 1 and dict(message.proxy_metadata) == {"A": "b"}
    assert dropped == ("drainDuration",)
    json_form, _ = parse_proxy_config_annotation('{"concurrency": 0}')
    assert json_form.HasField("concurrency") and json_form.concurrency.value == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("concurrency: lots", "proxy.istio.io/config: concurrency:"),
        ("[1, 2]", "expected a mapping"),
        ("concurrency: [", "not YAML"),
        ("proxyMetadata: {A: [1]}", "proxy.istio.io/config: proxyMetadata"),
    ],
)
def test_a_bad_annotation_is_refused_precisely(text: str, message: str) -> None:
    with pytest.raises(ProxyDefaultsError, match=message.replace("[", r"\[")):
        parse_proxy_config_annotation(text)
