"""The schema table: every config kind pilothouse understands, and how it is named on each wire.

One row per kind says its API group, the versions accepted in YAML, the protobuf message
that holds its spec, its plural, its legacy MCP collection, the MCP-over-xDS type URLs
istiod asks for, whether it is namespaced, and the validator that checks it. Everything
that needs to know about kinds (the loader, sources, MCP, the webhook) reads this table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from google.protobuf.message import Message

from pilothouse.api.istio.networking.v1alpha3 import (
    destination_rule_pb2,
    gateway_pb2,
    service_entry_pb2,
    sidecar_pb2,
    virtual_service_pb2,
    workload_entry_pb2,
    workload_group_pb2,
)
from pilothouse.api.istio.security.v1beta1 import (
    authorization_policy_pb2,
    peer_authentication_pb2,
    request_authentication_pb2,
)
from pilothouse.config import validation
from pilothouse.config.validation.report import Report

Validator = Callable[[Any, Report], None]

NETWORKING = "networking.istio.io"
SECURITY = "security.istio.io"
NETWORKING_VERSIONS = ("v1", "v1beta1", "v1alpha3")
SECURITY_VERSIONS = ("v1", "v1beta1")


@dataclass(frozen=True, slots=True)
class Schema:
    """Everything pilothouse knows about one kind."""

    kind: str
    group: str
    versions: tuple[str, ...]
    message: type[Message]
    plural: str
    collection: str
    namespaced: bool
    validator: Validator

    @property
    def proto_name(self) -> str:
        """The protobuf full name, e.g. ``istio.networking.v1alpha3.VirtualService``."""
        return str(self.message.DESCRIPTOR.full_name)

    @property
    def body_type_url(self) -> str:
        """The Any type URL of a spec, as in MCP resource bodies."""
        return f"type.googleapis.com/{self.proto_name}"

    @property
    def api_versions(self) -> tuple[str, ...]:
        """``apiVersion`` values accepted in YAML, newest first."""
        return tuple(f"{self.group}/{v}" for v in self.versions)

    @property
    def gvks(self) -> tuple[str, ...]:
        """MCP-over-xDS type URLs (``group/version/Kind``) for every accepted version."""
        return tuple(f"{self.group}/{v}/{self.kind}" for v in self.versions)

    def new_spec(self) -> Message:
        return self.message()


def _networking(kind: str, message: type[Message], plural: str, check: Validator) -> Schema:
    return Schema(
        kind=kind,
        group=NETWORKING,
        versions=NETWORKING_VERSIONS,
        message=message,
        plural=plural,
        collection=f"istio/networking/v1alpha3/{plural}",
        namespaced=True,
        validator=check,
    )


def _security(kind: str, message: type[Message], plural: str, check: Validator) -> Schema:
    return Schema(
        kind=kind,
        group=SECURITY,
        versions=SECURITY_VERSIONS,
        message=message,
        plural=plural,
        collection=f"istio/security/v1beta1/{plural}",
        namespaced=True,
        validator=check,
    )


SCHEMAS: tuple[Schema, ...] = (
    _networking(
        "ServiceEntry",
        service_entry_pb2.ServiceEntry,
        "serviceentries",
        validation.validate_service_entry,
    ),
    _networking(
        "WorkloadEntry",
        workload_entry_pb2.WorkloadEntry,
        "workloadentries",
        validation.validate_workload_entry,
    ),
    _networking(
        "WorkloadGroup",
        workload_group_pb2.WorkloadGroup,
        "workloadgroups",
        validation.validate_workload_group,
    ),
    _networking(
        "VirtualService",
        virtual_service_pb2.VirtualService,
        "virtualservices",
        validation.validate_virtual_service,
    ),
    _networking(
        "DestinationRule",
        destination_rule_pb2.DestinationRule,
        "destinationrules",
        validation.validate_destination_rule,
    ),
    _networking("Gateway", gateway_pb2.Gateway, "gateways", validation.validate_gateway),
    _networking("Sidecar", sidecar_pb2.Sidecar, "sidecars", validation.validate_sidecar),
    _security(
        "PeerAuthentication",
        peer_authentication_pb2.PeerAuthentication,
        "peerauthentications",
        validation.validate_peer_authentication,
    ),
    _security(
        "AuthorizationPolicy",
        authorization_policy_pb2.AuthorizationPolicy,
        "authorizationpolicies",
        validation.validate_authorization_policy,
    ),
    _security(
        "RequestAuthentication",
        request_authentication_pb2.RequestAuthentication,
        "requestauthentications",
        validation.validate_request_authentication,
    ),
)


class SchemaSet:
    """Lookups over a set of schemas: by kind, by apiVersion, by GVK, by collection."""

    def __init__(self, schemas: Iterable[Schema] = SCHEMAS) -> None:
        self._schemas = tuple(schemas)
        self._by_kind = MappingProxyType({s.kind: s for s in self._schemas})
        self._by_gvk = MappingProxyType({g: s for s in self._schemas for g in s.gvks})
        self._by_collection = MappingProxyType({s.collection: s for s in self._schemas})
        self._by_proto = MappingProxyType({s.proto_name: s for s in self._schemas})

    def __iter__(self) -> Iterator[Schema]:
        return iter(self._schemas)

    def __len__(self) -> int:
        return len(self._schemas)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(s.kind for s in self._schemas)

    def by_kind(self, kind: str) -> Schema | None:
        return self._by_kind.get(kind)

    def by_gvk(self, gvk: str) -> Schema | None:
        return self._by_gvk.get(gvk)

    def by_collection(self, collection: str) -> Schema | None:
        return self._by_collection.get(collection)

    def by_proto_name(self, name: str) -> Schema | None:
        return self._by_proto.get(name)
