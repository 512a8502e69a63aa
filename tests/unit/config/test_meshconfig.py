"""Reading Istio mesh config files: plain MeshConfig YAML and the istio ConfigMap."""

from __future__ import annotations

import pytest
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.json_format import MessageToDict

from pilothouse.api.istio.mesh.v1alpha1.config_pb2 import MeshConfig
from pilothouse.config.mesh import OutboundPolicy
from pilothouse.config.meshconfig import MeshConfigError, load_mesh_config, mesh_config_message
from pilothouse.xds.generators.api_resource import wrap_mesh_config

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
        "mesh.yaml:8: defaultConfig.discoveryAddress: accepted; not applied by pilothouse",
    )
    assert mesh.telemetry.access_log_file == "/dev/stdout"  # applied: Telemetry's fallback


def test_configmap_form() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio}\ndata:\n  mesh: |-\n"
    text += "".join(f"    {line}\n" for line in MESH.splitlines())
    loaded = load_mesh_config(text, "cm.yaml")
    assert loaded.mesh.root_namespace == "mesh-admin"
    first = loaded.warnings[0]
    assert first.startswith("cm.yaml:") and "data.mesh.defaultConfig.discoveryAddress" in first


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


ISTIO_FIELDS = """\
rootNamespace: mesh-admin
accessLogFile: /dev/stdout
accessLogFormat: "[%START_TIME%] %REQ(:METHOD)%\\n"
accessLogEncoding: JSON
enableTracing: true
ingressClass: istio
ingressControllerMode: STRICT
protocolDetectionTimeout: 100ms
hboneIdleTimeout: 1h
inboundTrafficPolicy: {mode: LOCALHOST}
h2UpgradePolicy: UPGRADE
enablePrometheusMerge: false
pathNormalization: {normalization: MERGE_SLASHES}
tlsDefaults:
  minProtocolVersion: TLSV1_3
  ecdhCurves: [X25519]
  cipherSuites: [ECDHE-ECDSA-AES128-GCM-SHA256]
meshMTLS: {minProtocolVersion: TLSV1_2}
caCertificates:
- {spiffeBundleUrl: "https://bundle.example/bundle", trustDomains: [example.org]}
- {pem: "-----BEGIN CERTIFICATE-----", certSigners: [clusterissuers.cert-manager.io/x]}
ca: {address: ca.example:15012, requestTimeout: 5s, istiodSide: true}
serviceSettings: [{settings: {clusterLocal: true}, hosts: ["*.local-only.svc.cluster.local"]}]
defaultTrafficPolicy: {connectionPool: {tcp: {maxConnections: 10}}}
tcpKeepalive: {time: 300s}
discoverySelectors:
- matchLabels: {istio-discovery: enabled}
- matchExpressions: [{key: env, operator: In, values: [prod]}]
serviceScopeConfigs:
- {namespaceSelector: {matchLabels: {team: a}}, scope: GLOBAL}
serviceEntryVisibility:
  defaultVisibility: NAMESPACE
  policies: [{visibility: PUBLIC, matchingRules: [{namespaceSelector: {matchLabels: {a: b}}}]}]
"""


def test_istio_fields_not_applied_are_kept_and_served_over_mcp() -> None:
    """Each field is decoded with its Istio number, reported as not applied, and comes
    back unchanged in the MeshConfig served over MCP (the bytes of the MCP answer)."""
    loaded = load_mesh_config(ISTIO_FIELDS, "mesh.yaml")
    keys = [line.split(": ")[1] for line in loaded.warnings]
    assert len(keys) == 18 and "rootNamespace" not in keys
    assert "accessLogFile" not in keys  # the telemetry fields are applied, and served too
    keys += ["accessLogFile", "accessLogFormat", "accessLogEncoding", "enableTracing"]
    assert all("not applied by pilothouse" in line for line in loaded.warnings)
    served = AnyMessage.FromString(wrap_mesh_config(loaded.mesh))
    assert served.type_url == "type.googleapis.com/istio.mesh.v1alpha1.MeshConfig"
    sent = MeshConfig.FromString(served.value)
    written = MessageToDict(loaded.message)
    again = MessageToDict(sent)
    for key in keys:
        assert again[key] == written[key], key
    assert again["rootNamespace"] == "mesh-admin"
    assert sent.tls_defaults.ecdh_curves == ["X25519"]
    assert sent.ingress_controller_mode == MeshConfig.STRICT
    assert sent.discovery_selectors[1].matchExpressions[0].values == ["prod"]


def test_a_mesh_without_them_serves_what_it_served_before() -> None:
    mesh = load_mesh_config("rootNamespace: x\n", "m.yaml").mesh
    assert mesh.unapplied == b""
    assert mesh_config_message(mesh).ByteSize() > 0
    assert not mesh_config_message(mesh).HasField("tls_defaults")
