"""Small MCP values for the unit tests: ServiceEntry configs, snapshots, Resources."""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.config.model import Config, Origin
from pilothouse.config.schema import Schema
from pilothouse.kinds.table import SCHEMAS
from pilothouse.mcp.messages import (
    EncodedResource,
    Push,
    ReceivedResources,
    encode_push,
    received_from_proto,
)
from pilothouse.mcp.publisher import encode_config
from pilothouse.mcp.snapshot import CollectionSnapshot

SE = "istio/networking/v1alpha3/serviceentries"
VS = "istio/networking/v1alpha3/virtualservices"
FIRST_SEEN = datetime.datetime(2025, 6, 1, 12, 0, tzinfo=datetime.UTC)
"""The first-seen time test resources are encoded with (their create_time)."""


def schema_of(collection: str) -> Schema:
    schema = SCHEMAS.by_collection(collection)
    assert schema is not None
    return schema


SE_SCHEMA = schema_of(SE)


def service_entry(
    name: str, namespace: str = "default", host: str | None = None, *, valid: bool = True
) -> Config:
    """A ServiceEntry; ``valid=False`` leaves out hosts, which validation rejects."""
    spec = service_entry_pb2.ServiceEntry()
    if valid:
        spec.hosts.append(host or f"{name}.example.com")
    return Config(
        kind="ServiceEntry", name=name, namespace=namespace, spec=spec, origin=Origin("test")
    )


def encoded(config: Config) -> EncodedResource:
    return encode_config(config, FIRST_SEEN)


def snapshot(version: str, configs: Iterable[Config], collection: str = SE) -> CollectionSnapshot:
    return CollectionSnapshot.of(collection, version, (encoded(c) for c in configs))


def over_the_wire(push: Push) -> ReceivedResources:
    """What a sink receives for ``push``: its bytes parsed as ``Resources``."""
    return received_from_proto(mcp_pb2.Resources.FromString(encode_push(push)))
