"""Wrapping Configs as MCP resources and unwrapping them again: names, versions, bodies."""

from __future__ import annotations

import datetime

import pytest
from google.protobuf import any_pb2

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.config.mcp_resource import MCP_RESOURCE_TYPE_URL, Rejection
from pilothouse.config.mesh import MeshSettings, OutboundPolicy
from pilothouse.config.meshconfig import mesh_settings
from pilothouse.config.model import Config, Origin
from pilothouse.kinds.table import SCHEMAS
from pilothouse.sources.upstream_resources import (
    MESH_CONFIG_TYPE_URL,
    KindDecoder,
    decode_mesh_config,
)
from pilothouse.xds.generators.api_resource import api_kind, wrap_config, wrap_mesh_config
from tests.unit.mcp_xds.mesh_objects import (
    AUTHORIZATION_POLICY,
    PEER_AUTHENTICATION,
    REQUEST_AUTHENTICATION,
    SERVICE_ENTRY,
    VIRTUAL_SERVICE,
    load,
)

FIRST_SEEN = datetime.datetime(2025, 7, 1, 9, 30, tzinfo=datetime.UTC)


def wrap(config: Config) -> bytes:
    return wrap_config(config, FIRST_SEEN)


def mcp_resource(config: Config) -> resource_pb2.Resource:
    return resource_pb2.Resource.FromString(unpack(wrap(config)).value)


def unpack(body: bytes) -> any_pb2.Any:
    return any_pb2.Any.FromString(body)


def test_wrapped_config_is_an_mcp_resource_with_istio_metadata() -> None:
    config = load(SERVICE_ENTRY, resource_version="42")
    entry = unpack(wrap(config))
    assert entry.type_url == MCP_RESOURCE_TYPE_URL
    resource = resource_pb2.Resource.FromString(entry.value)
    assert resource.metadata.name == "shop/httpbin"
    assert resource.metadata.version == "42"
    assert dict(resource.metadata.labels) == {"app": "httpbin", "tier": "backend"}
    assert dict(resource.metadata.annotations) == {"owner": "team-a"}
    assert resource.metadata.create_time.ToDatetime(tzinfo=datetime.UTC) == datetime.datetime(
        2025, 3, 4, 5, 6, 7, tzinfo=datetime.UTC
    )
    assert resource.body.type_url == "type.googleapis.com/istio.networking.v1alpha3.ServiceEntry"
    assert resource.body.value == config.spec.SerializeToString(deterministic=True)


@pytest.mark.parametrize(
    ("text", "body_type"),
    [
        (VIRTUAL_SERVICE, "istio.networking.v1alpha3.VirtualService"),
        (PEER_AUTHENTICATION, "istio.security.v1beta1.PeerAuthentication"),
    ],
)
def test_body_type_keeps_the_proto_package_whatever_the_api_version(
    text: str, body_type: str
) -> None:
    resource = mcp_resource(load(text))
    assert resource.body.type_url == f"type.googleapis.com/{body_type}"


def test_wrapping_is_deterministic() -> None:
    config = load(SERVICE_ENTRY)
    assert wrap(config) == wrap(load(SERVICE_ENTRY))
    assert wrap(config) == unpack(wrap(config)).SerializeToString(deterministic=True)


@pytest.mark.parametrize(
    "text",
    [
        SERVICE_ENTRY,
        VIRTUAL_SERVICE,
        PEER_AUTHENTICATION,
        AUTHORIZATION_POLICY,
        REQUEST_AUTHENTICATION,
    ],
)
def test_round_trip_through_the_consumer_decoder(text: str) -> None:
    config = load(text, resource_version="9")
    schema = SCHEMAS.by_kind(config.kind)
    assert schema is not None
    decoded = KindDecoder(schema, "xds://a:1").decode([unpack(wrap(config))])
    assert decoded.rejections == ()
    (back,) = decoded.configs
    assert back.same_content(config)
    assert back.resource_version == "9"
    assert back.creation_time == (config.creation_time or FIRST_SEEN)
    assert back.origin == Origin("xds://a:1")


def test_round_trip_without_metadata_extras() -> None:
    config = load(VIRTUAL_SERVICE, resource_version="")
    assert config.creation_time is None
    resource = mcp_resource(config)
    assert resource.metadata.version == ""
    assert resource.metadata.create_time.ToDatetime(tzinfo=datetime.UTC) == FIRST_SEEN
    schema = SCHEMAS.by_kind("VirtualService")
    assert schema is not None
    (back,) = KindDecoder(schema, "xds://a:1").decode([unpack(wrap(config))]).configs
    assert back.same_content(config)
    assert back.creation_time == FIRST_SEEN
    assert dict(back.labels) == {}


@pytest.mark.parametrize(
    ("type_name", "kind"),
    [
        ("networking.istio.io/v1/ServiceEntry", "ServiceEntry"),
        ("networking.istio.io/v1alpha3/EnvoyFilter", "EnvoyFilter"),
        ("security.istio.io/v1beta1/AuthorizationPolicy", "AuthorizationPolicy"),
        ("core/v1alpha1/MeshConfig", "MeshConfig"),
        ("extensions.istio.io/v1alpha1/WasmPlugin", "WasmPlugin"),
        ("type.googleapis.com/envoy.config.cluster.v3.Cluster", None),
        ("istio.io/debug/syncz", None),
        ("networking.istio.io/ServiceEntry", None),
        ("a/b/c/D", None),
        ("/v1/ServiceEntry", None),
        ("", None),
    ],
)
def test_api_kind(type_name: str, kind: str | None) -> None:
    assert api_kind(type_name) == kind


def test_mesh_config_answer_is_raw_and_says_what_the_settings_say() -> None:
    mesh = MeshSettings(
        root_namespace="mesh-root",
        trust_domain="example.org",
        connect_timeout=2.5,
        outbound_traffic_policy=OutboundPolicy.REGISTRY_ONLY,
        default_service_export_to=frozenset({"."}),
    )
    entry = unpack(wrap_mesh_config(mesh))
    assert entry.type_url == MESH_CONFIG_TYPE_URL
    message = config_pb2.MeshConfig.FromString(entry.value)
    assert message.root_namespace == "mesh-root"
    assert message.trust_domain == "example.org"
    assert message.connect_timeout.ToMilliseconds() == 2500
    assert list(message.default_service_export_to) == ["."]
    decoded = decode_mesh_config([entry])
    assert isinstance(decoded, config_pb2.MeshConfig)
    assert mesh_settings(decoded) == mesh


def test_mesh_config_decoding_rejects_wrapped_or_several() -> None:
    entry = unpack(wrap_mesh_config(MeshSettings()))
    assert decode_mesh_config([]) is None
    several = decode_mesh_config([entry, entry])
    assert isinstance(several, Rejection) and "2 resources" in several.reason
    wrong = decode_mesh_config([any_pb2.Any(type_url=MCP_RESOURCE_TYPE_URL, value=b"")])
    assert isinstance(wrong, Rejection) and "expected" in wrong.reason
    garbage = decode_mesh_config([any_pb2.Any(type_url=MESH_CONFIG_TYPE_URL, value=b"\xff\xff")])
    assert isinstance(garbage, Rejection) and "not a MeshConfig" in garbage.reason
