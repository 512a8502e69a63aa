"""Reading Istio mesh config files: plain MeshConfig YAML and the istio ConfigMap."""

from __future__ import annotations

import pytest

from pilothouse.config.mesh import OutboundPolicy
from pilothouse.config.meshconfig import MeshConfigError, load_mesh_config, mesh_config_message

MESH = """\
rootNamespace: mesh-admin
trustDomain: example.org
connectTimeout: 2s
outboundTrafficPolicy: {mode: REGISTRY_ONLY}
defaultServiceExportTo: ["."]
accessLogFile: /dev/stdout
defaultConfig:
  discoveryAddress: istiod.istio-system.svc:15012
configSources:
- address: fs:///etc/istio/config
- address: xds://upstream.example:15010
"""


def test_plain_mesh_config() -> None:
    loaded = load_mesh_config(MESH, "mesh.yaml")
    assert loaded.config_sources == ("fs:///etc/istio/config", "xds://upstream.example:15010")
    mesh = loaded.mesh
    assert mesh.root_namespace == "mesh-admin" and mesh.trust_domain == "example.org"
    assert mesh.connect_timeout == 2.0
    assert mesh.outbound_traffic_policy is OutboundPolicy.REGISTRY_ONLY
    assert mesh.default_service_export_to == frozenset({"."})
    assert loaded.warnings == (
        "mesh.yaml:6: accessLogFile: not used by pilothouse; ignored",
        "mesh.yaml:7: defaultConfig: not used by pilothouse; ignored",
    )


def test_configmap_form() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio}\ndata:\n  mesh: |-\n"
    text += "".join(f"    {line}\n" for line in MESH.splitlines())
    loaded = load_mesh_config(text, "cm.yaml")
    assert loaded.mesh.root_namespace == "mesh-admin"
    first = loaded.warnings[0]
    assert first.startswith("cm.yaml:") and "data.mesh.accessLogFile" in first


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("connectTimeout: soon\n", "mesh.yaml:1: connectTimeout: invalid duration"),
        ("configSources:\n- tlsSettings: {}\n", "mesh.yaml:2: configSources[0].address: required"),
        ("outboundTrafficPolicy: {mode: SOMETIMES}\n", "mode: unknown value 'SOMETIMES'"),
        ("rootNamespace: [a\n", "invalid YAML"),
    ],
)
def test_errors_name_file_line_and_field(text: str, message: str) -> None:
    with pytest.raises(MeshConfigError) as caught:
        load_mesh_config(text, "mesh.yaml")
    assert message in str(caught.value)


def test_settings_round_trip_to_a_mesh_config_message() -> None:
    loaded = load_mesh_config(MESH, "mesh.yaml")
    message = mesh_config_message(loaded.mesh)
    assert message.root_namespace == "mesh-admin"
    assert message.connect_timeout.seconds == 2
    assert load_mesh_config("rootNamespace: x\n", "m.yaml").mesh.connect_timeout == 10.0


@pytest.mark.parametrize(
    ("text", "enabled"),
    [
        ("rootNamespace: x\n", True),
        ("enableAutoMtls: false\n", False),
        ("enableAutoMtls: true\n", True),
    ],
)
def test_auto_mtls_is_on_unless_turned_off(text: str, enabled: bool) -> None:
    mesh = load_mesh_config(text, "mesh.yaml").mesh
    assert mesh.enable_auto_mtls is enabled
    assert mesh_config_message(mesh).enable_auto_mtls.value is enabled
