"""XdsUpstreamSource without a network: what it asks for, who it says it is, how it applies
each response (full state per kind), and the ACK or NACK it answers with."""

from __future__ import annotations

from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2, json_format
from google.rpc import code_pb2

from pilothouse.config.mcp_resource import Rejection
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.push.proxy import GeneratorFamily, parse_node
from pilothouse.sources.upstream_resources import MESH_CONFIG_GVK
from pilothouse.sources.xds_upstream import (
    MAX_NACK_ENTRIES,
    UpstreamSettings,
    XdsUpstreamSource,
    nack_message,
)
from pilothouse.xds.generators.api_resource import wrap_mesh_config
from tests.unit.mcp_xds.mesh_objects import dns_service_entry as service_entry
from tests.unit.mcp_xds.mesh_objects import packed_resource

SE = "networking.istio.io/v1/ServiceEntry"


def response(type_url: str, entries: list[any_pb2.Any], version: str, nonce: str) -> Any:
    return discovery_pb2.DiscoveryResponse(
        type_url=type_url, version_info=version, nonce=nonce, resources=entries
    )


def hosts(source: XdsUpstreamSource) -> dict[str, str]:
    return {
        f"{c.namespace}/{c.name}": c.spec.hosts[0]  # type: ignore[attr-defined]
        for c in source.store.configs("ServiceEntry")
    }


def test_store_is_named_after_the_address() -> None:
    source = XdsUpstreamSource("upstream.example", 15010)
    assert source.store.name == source.name == "xds://upstream.example:15010"


def test_asks_for_mesh_config_first_then_every_kind_in_v1() -> None:
    source = XdsUpstreamSource("a", 1)
    assert source.type_urls == (
        "core/v1alpha1/MeshConfig",
        "networking.istio.io/v1/ServiceEntry",
        "networking.istio.io/v1/WorkloadEntry",
        "networking.istio.io/v1/WorkloadGroup",
        "networking.istio.io/v1/VirtualService",
        "networking.istio.io/v1/DestinationRule",
        "networking.istio.io/v1/Gateway",
        "networking.istio.io/v1/Sidecar",
        "networking.istio.io/v1alpha3/EnvoyFilter",
        "networking.istio.io/v1beta1/ProxyConfig",
        "security.istio.io/v1/PeerAuthentication",
        "security.istio.io/v1/AuthorizationPolicy",
        "security.istio.io/v1/RequestAuthentication",
        "extensions.istio.io/v1alpha1/WasmPlugin",
        "telemetry.istio.io/v1/Telemetry",
        "gateway.networking.k8s.io/v1/GatewayClass",
        "gateway.networking.k8s.io/v1/Gateway",
        "gateway.networking.k8s.io/v1/HTTPRoute",
        "gateway.networking.k8s.io/v1/GRPCRoute",
        "gateway.networking.k8s.io/v1alpha2/TCPRoute",
        "gateway.networking.k8s.io/v1alpha2/TLSRoute",
        "gateway.networking.k8s.io/v1/ReferenceGrant",
    )


def test_node_looks_like_istiod() -> None:
    settings = UpstreamSettings(node_ip="10.1.2.3", node_name="replica-2", namespace="mesh")
    node = settings.node()
    assert node.id == "sidecar~10.1.2.3~replica-2.mesh~mesh.svc.cluster.local"
    metadata = json_format.MessageToDict(node.metadata)
    assert metadata["GENERATOR"] == "api"
    assert metadata["ISTIO_VERSION"] == "65536.65536.65536"
    assert "ISTIO_REVISION" not in metadata
    proxy = parse_node(node.id, metadata)
    assert proxy.generator is GeneratorFamily.API and proxy.namespace == "mesh"
    revised = UpstreamSettings(revision="canary").node()
    assert json_format.MessageToDict(revised.metadata)["ISTIO_REVISION"] == "canary"


def test_a_response_is_applied_and_acked() -> None:
    source = XdsUpstreamSource("a", 1)
    reply = source.on_response(
        response(SE, [packed_resource("a/one", service_entry("one.example.com"))], "v1", "n1")
    )
    assert hosts(source) == {"a/one": "one.example.com"}
    assert reply.type_url == SE
    assert (reply.version_info, reply.response_nonce) == ("v1", "n1")
    assert not reply.HasField("error_detail")
    assert not reply.HasField("node")
    assert source.status().accepted_versions[SE] == "v1"


def test_every_response_is_the_full_state_of_its_kind() -> None:
    source = XdsUpstreamSource("a", 1)
    source.on_response(
        response(
            SE,
            [
                packed_resource("a/one", service_entry("one.example.com")),
                packed_resource("a/two", service_entry("two.example.com")),
            ],
            "v1",
            "n1",
        )
    )
    source.on_response(
        response(
            SE,
            [
                packed_resource("a/two", service_entry("two.example.org"), version="2"),
                packed_resource("a/three", service_entry("three.example.com")),
            ],
            "v2",
            "n2",
        )
    )
    assert hosts(source) == {"a/two": "two.example.org", "a/three": "three.example.com"}
    source.on_response(response(SE, [], "v3", "n3"))
    assert hosts(source) == {}


def test_invalid_entries_are_skipped_and_nacked_with_their_names() -> None:
    source = XdsUpstreamSource("a", 1)
    source.on_response(response(SE, [packed_resource("a/one", service_entry("one.x"))], "v1", "n1"))
    bad = service_entry("")
    del bad.hosts[:]
    reply = source.on_response(
        response(
            SE,
            [
                packed_resource("a/one", service_entry("one.example.com"), version="2"),
                packed_resource("a/bad", bad),
                packed_resource("flat", service_entry("flat.example.com")),
            ],
            "v2",
            "n2",
        )
    )
    assert hosts(source) == {"a/one": "one.example.com"}
    assert reply.HasField("error_detail")
    assert reply.error_detail.code == code_pb2.INVALID_ARGUMENT
    assert reply.response_nonce == "n2"
    assert reply.version_info == "v1", "a NACK carries the last accepted version"
    message = reply.error_detail.message
    assert "a/bad: " in message and "hosts" in message
    assert "flat: metadata.name must be <namespace>/<name>" in message
    assert "a/one" not in message
    assert [r.name for r in source.status().rejections[SE]] == ["a/bad", "flat"]


def test_an_object_that_turns_invalid_keeps_its_last_good_version() -> None:
    source = XdsUpstreamSource("a", 1)
    source.on_response(response(SE, [packed_resource("a/one", service_entry("one.x"))], "v1", "n1"))
    bad = service_entry("")
    del bad.hosts[:]
    entry = packed_resource("a/one", bad, version="2")
    reply = source.on_response(response(SE, [entry], "v2", "n2"))
    assert reply.HasField("error_detail")
    assert hosts(source) == {"a/one": "one.x"}
    held = source.store.get(ConfigKey("ServiceEntry", "a", "one"))
    assert held is not None and held.resource_version == "1"
    ack = source.on_response(response(SE, [], "v3", "n3"))
    assert not ack.HasField("error_detail")
    assert hosts(source) == {}
    assert SE not in source.status().rejections


def test_synced_once_every_kind_but_mesh_config_was_answered() -> None:
    source = XdsUpstreamSource("a", 1)
    kinds = [t for t in source.type_urls if t != MESH_CONFIG_GVK]
    for index, type_url in enumerate(kinds):
        assert not source.has_synced()
        source.on_response(response(type_url, [], "v1", f"n{index}"))
    assert source.has_synced() and source.store.has_synced()
    assert source.mesh_config is None


def test_mesh_config_is_kept_and_acked() -> None:
    source = XdsUpstreamSource("a", 1)
    entry = any_pb2.Any.FromString(wrap_mesh_config(MeshSettings(root_namespace="root")))
    reply = source.on_response(response(MESH_CONFIG_GVK, [entry], "v1", "m1"))
    assert not reply.HasField("error_detail")
    assert source.mesh_config is not None
    assert source.mesh_config.root_namespace == "root"
    assert not source.has_synced()
    nack = source.on_response(response(MESH_CONFIG_GVK, [entry, entry], "v2", "m2"))
    assert nack.error_detail.code == code_pb2.INVALID_ARGUMENT
    assert source.mesh_config.root_namespace == "root"


def test_a_type_that_was_not_requested_is_nacked_unimplemented() -> None:
    source = XdsUpstreamSource("a", 1)
    reply = source.on_response(response("telemetry.istio.io/v1/NoSuchKind", [], "v", "n"))
    assert reply.error_detail.code == code_pb2.UNIMPLEMENTED
    assert reply.response_nonce == "n"
    assert source.store.keys() == []


def test_nack_message_is_bounded() -> None:
    many = tuple(Rejection(f"ns/o{i}", "bad") for i in range(MAX_NACK_ENTRIES + 7))
    message = nack_message(many)
    assert message.startswith("ns/o0: bad; ns/o1: bad")
    assert message.endswith("… and 7 more")
    assert message.count("; ") == MAX_NACK_ENTRIES
