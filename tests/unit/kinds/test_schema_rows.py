"""The schema table: names on every wire for every kind."""

from __future__ import annotations

from pilothouse.kinds.table import SCHEMAS


def test_kinds() -> None:
    assert set(SCHEMAS.kinds) == {
        "ServiceEntry", "WorkloadEntry", "WorkloadGroup", "VirtualService", "DestinationRule",
        "Gateway", "Sidecar", "EnvoyFilter", "ProxyConfig", "PeerAuthentication",
        "AuthorizationPolicy", "RequestAuthentication", "WasmPlugin", "Telemetry",
        "GatewayClass", "KubernetesGateway", "HTTPRoute", "GRPCRoute", "TCPRoute", "TLSRoute",
        "ReferenceGrant",
    }


def test_telemetry_names() -> None:
    schema = SCHEMAS.by_kind("Telemetry")
    assert schema is not None
    assert schema.api_versions == ("telemetry.istio.io/v1", "telemetry.istio.io/v1alpha1")
    assert schema.gvks == (
        "telemetry.istio.io/v1/Telemetry",
        "telemetry.istio.io/v1alpha1/Telemetry",
    )
    assert schema.body_type_url == "type.googleapis.com/istio.telemetry.v1alpha1.Telemetry"
    assert schema.collection == "istio/telemetry/v1alpha1/telemetries"
    assert schema.plural == "telemetries" and schema.namespaced


def test_networking_names() -> None:
    schema = SCHEMAS.by_kind("VirtualService")
    assert schema is not None
    assert schema.api_versions == (
        "networking.istio.io/v1", "networking.istio.io/v1beta1", "networking.istio.io/v1alpha3"
    )
    assert schema.gvks == (
        "networking.istio.io/v1/VirtualService",
        "networking.istio.io/v1beta1/VirtualService",
        "networking.istio.io/v1alpha3/VirtualService",
    )
    assert schema.proto_name == "istio.networking.v1alpha3.VirtualService"
    assert schema.body_type_url == "type.googleapis.com/istio.networking.v1alpha3.VirtualService"
    assert schema.collection == "istio/networking/v1alpha3/virtualservices"
    assert schema.plural == "virtualservices" and schema.namespaced


def test_security_names() -> None:
    schema = SCHEMAS.by_gvk("security.istio.io/v1/PeerAuthentication")
    assert schema is not None and schema.kind == "PeerAuthentication"
    assert schema.proto_name == "istio.security.v1beta1.PeerAuthentication"
    assert schema.collection == "istio/security/v1beta1/peerauthentications"
    assert SCHEMAS.by_gvk("security.istio.io/v1alpha3/PeerAuthentication") is None


def test_lookups_agree() -> None:
    for schema in SCHEMAS:
        assert SCHEMAS.by_kind(schema.kind) is schema
        assert SCHEMAS.by_collection(schema.collection) is schema
        assert SCHEMAS.by_proto_name(schema.proto_name) is schema
        for gvk in schema.gvks:
            assert SCHEMAS.by_gvk(gvk) is schema
        assert isinstance(schema.new_spec(), schema.message)
