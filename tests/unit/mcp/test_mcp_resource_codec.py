"""Config ↔ mcp.Resource (the one codec): names, versions, metadata, and why one is rejected."""

from __future__ import annotations

import dataclasses
import datetime
from types import MappingProxyType

import pytest
from google.protobuf import any_pb2, timestamp_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.config.mcp_resource import (
    Rejection,
    ResourceDecoder,
    content_version,
    encode_resource,
    resource_key,
)
from pilothouse.config.model import Config
from pilothouse.mcp.collection_table import (
    ISTIO_PILOT_COLLECTIONS,
    SYNTHETIC_SERVICE_ENTRIES,
    CollectionTable,
)
from tests.unit.mcp.builders import FIRST_SEEN, SCHEMAS, SE, SE_SCHEMA, encoded, service_entry


def resource_of(config: Config) -> resource_pb2.Resource:
    return resource_pb2.Resource.FromString(encoded(config).encoded)


def decode_resource(resource: resource_pb2.Resource, source: str = "s") -> Config | Rejection:
    return ResourceDecoder(SE_SCHEMA, source).decode(resource)


def test_resource_carries_name_version_labels_annotations_create_time_and_body() -> None:
    created = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)
    config = dataclasses.replace(
        service_entry("db", "data"),
        labels=MappingProxyType({"app": "db"}),
        annotations=MappingProxyType({"note": "x"}),
        creation_time=created,
    )
    resource = resource_of(config)
    assert resource.metadata.name == "data/db"
    assert resource.metadata.version == content_version(config)
    assert dict(resource.metadata.labels) == {"app": "db"}
    assert dict(resource.metadata.annotations) == {"note": "x"}
    assert resource.metadata.create_time.ToDatetime(tzinfo=datetime.UTC) == created
    assert resource.body.type_url == "type.googleapis.com/istio.networking.v1alpha3.ServiceEntry"
    decoded = decode_resource(resource, "upstream")
    assert isinstance(decoded, Config)
    assert decoded.same_content(config)
    assert decoded.creation_time == created
    assert decoded.resource_version == resource.metadata.version
    assert decoded.origin.source == "upstream"


def test_version_changes_exactly_when_content_does() -> None:
    base = service_entry("db", "data")
    assert content_version(base) == content_version(service_entry("db", "data"))
    changed = [
        service_entry("db", "data", host="other.example.com"),
        service_entry("db", "other"),
        dataclasses.replace(base, labels=MappingProxyType({"a": "b"})),
        dataclasses.replace(base, annotations=MappingProxyType({"a": "b"})),
    ]
    assert len({content_version(c) for c in changed} | {content_version(base)}) == 5
    same = dataclasses.replace(base, resource_version="42")
    assert content_version(same) == content_version(base)


def test_body_of_another_type_is_undecodable() -> None:
    resource = resource_of(service_entry("db"))
    resource.body.type_url = "type.googleapis.com/istio.networking.v1alpha3.VirtualService"
    rejected = decode_resource(resource)
    assert isinstance(rejected, Rejection) and rejected.undecodable
    assert "expected" in rejected.reason


def test_body_bytes_that_do_not_parse_are_undecodable() -> None:
    resource = resource_of(service_entry("db"))
    resource.body.CopyFrom(any_pb2.Any(type_url=SE_SCHEMA.body_type_url, value=b"\xff\xff\xff"))
    rejected = decode_resource(resource)
    assert isinstance(rejected, Rejection) and rejected.undecodable


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("db", "must be <namespace>/<name>"),
        ("Bad_NS/db", "namespace"),
        ("ns/DB!", "RFC 1123 subdomain"),
        ("ns/", "must be <namespace>/<name>"),
        ("ns/a/b", "must be <namespace>/<name>"),
    ],
)
def test_malformed_names_are_rejected(name: str, reason: str) -> None:
    resource = resource_of(service_entry("db"))
    resource.metadata.name = name
    rejected = decode_resource(resource)
    assert isinstance(rejected, Rejection) and not rejected.undecodable
    assert reason in rejected.reason


def test_invalid_spec_is_rejected_with_the_validator_reason() -> None:
    rejected = decode_resource(resource_of(service_entry("db", valid=False)))
    assert isinstance(rejected, Rejection) and not rejected.undecodable
    assert "at least one host" in rejected.reason
    assert str(rejected).startswith("default/db: ")


def test_create_time_is_the_first_seen_time_without_a_creation_timestamp() -> None:
    resource = resource_of(service_entry("db"))
    assert resource.metadata.HasField("create_time")
    assert resource.metadata.create_time.ToDatetime(tzinfo=datetime.UTC) == FIRST_SEEN


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(
        min_value=datetime.datetime(1900, 1, 1),
        max_value=datetime.datetime(2200, 1, 1),
        timezones=st.one_of(
            st.none(), st.timezones(), st.just(datetime.timezone(datetime.timedelta(hours=-7)))
        ),
    )
)
def test_create_time_is_what_protobuf_makes_of_the_time(moment: datetime.datetime) -> None:
    expected = timestamp_pb2.Timestamp()
    expected.FromDatetime(moment)
    for config, first_seen in (
        (service_entry("db"), moment),
        (dataclasses.replace(service_entry("db"), creation_time=moment), FIRST_SEEN),
    ):
        resource = resource_pb2.Resource.FromString(encode_resource(config, "1", first_seen))
        assert resource.metadata.create_time == expected


def test_resource_key_follows_the_schema() -> None:
    assert resource_key(SE_SCHEMA, "ns/db") == (SE_SCHEMA.kind, "ns", "db")
    assert resource_key(SE_SCHEMA, "db") is None
    assert resource_key(SE_SCHEMA, "ns/a/b") is None


def test_table_knows_schema_collections_and_the_empty_ones() -> None:
    table = CollectionTable.of(SCHEMAS, empty=[SYNTHETIC_SERVICE_ENTRIES, SE])
    assert SE in table and SYNTHETIC_SERVICE_ENTRIES in table
    assert "istio/networking/v1alpha3/nothing" not in table
    assert table.empty == frozenset({SYNTHETIC_SERVICE_ENTRIES})
    assert table.names[-1] == SYNTHETIC_SERVICE_ENTRIES
    assert table.schema(SYNTHETIC_SERVICE_ENTRIES) is None


@pytest.mark.parametrize(
    ("collection", "kind"),
    [
        ("istio/security/v1beta1/authorizationpolicies", "AuthorizationPolicy"),
        ("istio/security/v1beta1/requestauthentications", "RequestAuthentication"),
    ],
)
def test_access_control_collections_are_served_with_content_not_empty(
    collection: str, kind: str
) -> None:
    """An Istio 1.4–1.6 Pilot asks for these; they now have a schema, so they are served
    from the store instead of as empty collections."""
    table = CollectionTable.of(empty=ISTIO_PILOT_COLLECTIONS)
    assert collection in table and collection not in table.empty
    schema = table.schema(collection)
    assert schema is not None and schema.kind == kind
