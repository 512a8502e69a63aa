"""Decoding one response of one kind: what is accepted, what is rejected and why."""

from __future__ import annotations

import datetime

import pytest
from google.protobuf import any_pb2

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2
from pilothouse.config.mcp_resource import MCP_RESOURCE_TYPE_URL, Rejection, split_name
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.sources.upstream_resources import KindDecoder
from tests.unit.mcp_xds.mesh_objects import dns_service_entry as service_entry
from tests.unit.mcp_xds.mesh_objects import packed_resource


def decoder() -> KindDecoder:
    schema = SCHEMAS.by_kind("ServiceEntry")
    assert schema is not None
    return KindDecoder(schema, "xds://up:15010")


def only_rejection(entry: any_pb2.Any) -> Rejection:
    decoded = decoder().decode([entry])
    assert decoded.configs == ()
    (rejection,) = decoded.rejections
    return rejection


def test_valid_entry_becomes_a_config_with_its_metadata() -> None:
    created = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    entry = packed_resource(
        "payments/api", service_entry(), version="17", labels={"team": "pay"}, created=created
    )
    (config,) = decoder().decode([entry]).configs
    assert config.key == ConfigKey("ServiceEntry", "payments", "api")
    assert config.resource_version == "17"
    assert dict(config.labels) == {"team": "pay"}
    assert config.creation_time == created
    assert config.spec == service_entry()
    assert str(config.origin) == "xds://up:15010"


@pytest.mark.parametrize("name", ["api", "a/b/c", "/api", "payments/", ""])
def test_names_must_be_exactly_namespace_slash_name(name: str) -> None:
    rejection = only_rejection(packed_resource(name, service_entry()))
    assert "<namespace>/<name>" in rejection.reason
    assert rejection.name == (name or "<unnamed>")


def test_split_name() -> None:
    assert split_name("ns/name") == ("ns", "name")
    assert split_name("ns/a.b") == ("ns", "a.b")
    assert split_name("ns") is None
    assert split_name("ns/a/b") is None


def test_names_go_through_the_loader_rules() -> None:
    rejection = only_rejection(packed_resource("payments/API_v1", service_entry()))
    assert rejection.name == "payments/API_v1"
    assert "RFC 1123" in rejection.reason


def test_invalid_spec_is_rejected_with_the_validator_reason() -> None:
    spec = service_entry()
    del spec.hosts[:]
    rejection = only_rejection(packed_resource("payments/api", spec))
    assert rejection.name == "payments/api"
    assert "hosts" in rejection.reason


def test_body_of_another_kind_is_rejected() -> None:
    route = virtual_service_pb2.VirtualService(hosts=["x"])
    rejection = only_rejection(packed_resource("payments/api", route))
    assert "istio.networking.v1alpha3.VirtualService" in rejection.reason
    assert "expected type.googleapis.com/istio.networking.v1alpha3.ServiceEntry" in rejection.reason


def test_undecodable_body_is_rejected() -> None:
    entry = packed_resource("payments/api", service_entry())
    resource = resource_pb2.Resource.FromString(entry.value)
    resource.body.value = b"\x0a\xff\xff\xff"
    entry.value = resource.SerializeToString()
    rejection = only_rejection(entry)
    assert rejection.name == "payments/api"
    assert "not a istio.networking.v1alpha3.ServiceEntry" in rejection.reason


def test_entries_that_are_not_mcp_resources_are_rejected() -> None:
    wrong = any_pb2.Any(type_url="type.googleapis.com/istio.networking.v1alpha3.ServiceEntry")
    assert "expected " + MCP_RESOURCE_TYPE_URL in only_rejection(wrong).reason
    garbage = any_pb2.Any(type_url=MCP_RESOURCE_TYPE_URL, value=b"\xff\xff")
    assert "not an MCP Resource" in only_rejection(garbage).reason


def test_bad_entries_do_not_take_good_ones_down() -> None:
    bad = service_entry()
    del bad.hosts[:]
    decoded = decoder().decode(
        [
            packed_resource("a/one", service_entry("one.example.com")),
            packed_resource("a/bad", bad),
            packed_resource("a/two", service_entry("two.example.com")),
        ]
    )
    assert [c.name for c in decoded.configs] == ["one", "two"]
    assert [r.name for r in decoded.rejections] == ["a/bad"]


def test_a_name_twice_in_one_response_is_rejected_once() -> None:
    decoded = decoder().decode(
        [
            packed_resource("a/one", service_entry("one.example.com")),
            packed_resource("a/one", service_entry("other.example.com")),
        ]
    )
    assert [c.spec.hosts[0] for c in decoded.configs] == ["one.example.com"]  # type: ignore[attr-defined]
    (rejection,) = decoded.rejections
    assert str(rejection) == "a/one: appears more than once in the response"


def test_unchanged_entries_are_not_decoded_again() -> None:
    kinds = decoder()
    entry = packed_resource("a/one", service_entry())
    (first,) = kinds.decode([entry]).configs
    (second,) = kinds.decode([entry]).configs
    assert second is first
    (changed,) = kinds.decode([packed_resource("a/one", service_entry(), version="2")]).configs
    assert changed is not first and changed.resource_version == "2"
