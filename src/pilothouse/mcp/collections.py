"""MCP collections: which ones pilothouse knows, and Config ↔ ``mcp.Resource`` by schema.

Collection names come from the schema table (``istio/networking/v1alpha3/serviceentries``).
A resource travels as ``Resource{metadata: {name: "ns/name", version, labels, annotations,
create_time}, body: Any(spec)}``.

The version pilothouse puts in ``metadata.version`` is a digest of what the resource says
(name, labels, annotations, spec). It changes exactly when the content does and is the same
in every process that holds the same object, so a sink resuming with
``initial_resource_versions`` after either side restarted skips everything unchanged.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from google.protobuf import any_pb2, timestamp_pb2
from google.protobuf.message import DecodeError

from pilothouse.api.istio.mcp.v1alpha1 import metadata_pb2, resource_pb2
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.config.validation.report import Report
from pilothouse.mcp.messages import EncodedResource

SYNTHETIC_SERVICE_ENTRIES = "istio/networking/v1alpha3/synthetic/serviceentries"
"""Galley's synthetic service entries (from k8s Services); pilothouse has none to serve."""

ISTIO_PILOT_COLLECTIONS = (
    "istio/networking/v1alpha3/virtualservices",
    "istio/networking/v1alpha3/gateways",
    "istio/networking/v1alpha3/serviceentries",
    "istio/networking/v1alpha3/destinationrules",
    "istio/networking/v1alpha3/envoyfilters",
    "istio/networking/v1alpha3/sidecars",
    "istio/networking/v1alpha3/workloadentries",
    "istio/config/v1alpha2/httpapispecs",
    "istio/config/v1alpha2/httpapispecbindings",
    "istio/mixer/v1/config/client/quotaspecs",
    "istio/mixer/v1/config/client/quotaspecbindings",
    "istio/authentication/v1alpha1/policies",
    "istio/authentication/v1alpha1/meshpolicies",
    "istio/rbac/v1alpha1/serviceroles",
    "istio/rbac/v1alpha1/servicerolebindings",
    "istio/rbac/v1alpha1/rbacconfigs",
    "istio/rbac/v1alpha1/clusterrbacconfigs",
    "istio/security/v1beta1/authorizationpolicies",
    "istio/security/v1beta1/requestauthentications",
    "istio/security/v1beta1/peerauthentications",
)
"""Every collection an Istio 1.4–1.6 Pilot asked for (the union of those releases).

A source that should accept such a Pilot serves the ones it has no schema for as empty
collections (``McpSourceServer(extra_collections=...)``); otherwise the stream is refused.
"""

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def resource_name(config: Config) -> str:
    """``metadata.name``: ``ns/name`` for namespaced objects, plain ``name`` otherwise."""
    return f"{config.namespace}/{config.name}" if config.namespace else config.name


def content_version(config: Config) -> str:
    """A digest of the object's content: equal exactly when the content is."""
    digest = hashlib.sha256()
    for part in (
        resource_name(config),
        *(f"{k}={v}" for k, v in sorted(config.labels.items())),
        "\x00",
        *(f"{k}={v}" for k, v in sorted(config.annotations.items())),
        "\x00",
    ):
        digest.update(part.encode())
        digest.update(b"\x00")
    digest.update(config.spec.SerializeToString(deterministic=True))
    return digest.hexdigest()[:16]


def encode_config(schema: Schema, config: Config) -> EncodedResource:
    """The ``mcp.Resource`` for ``config``, serialized once."""
    name = resource_name(config)
    version = content_version(config)
    metadata = metadata_pb2.Metadata(
        name=name,
        version=version,
        labels=dict(config.labels),
        annotations=dict(config.annotations),
    )
    if config.creation_time is not None:
        stamp = timestamp_pb2.Timestamp()
        stamp.FromDatetime(config.creation_time)
        metadata.create_time.CopyFrom(stamp)
    body = any_pb2.Any(
        type_url=schema.body_type_url, value=config.spec.SerializeToString(deterministic=True)
    )
    resource = resource_pb2.Resource(metadata=metadata, body=body)
    return EncodedResource(name, version, resource.SerializeToString(deterministic=True))


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why one received resource was not applied. ``undecodable`` for a bad body."""

    name: str
    reason: str
    undecodable: bool = False

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


def decode_resource(
    schema: Schema, resource: resource_pb2.Resource, source: str
) -> Config | Rejection:
    """A received resource as a validated Config, or why it cannot be one."""
    name = resource.metadata.name
    if resource.body.type_url != schema.body_type_url:
        return Rejection(
            name,
            f"body has type {resource.body.type_url!r}, expected {schema.body_type_url!r}",
            undecodable=True,
        )
    spec = schema.new_spec()
    try:
        spec.ParseFromString(resource.body.value)
    except DecodeError as exc:
        return Rejection(name, f"cannot decode {schema.proto_name}: {exc}", undecodable=True)
    key = _key(schema, name)
    if isinstance(key, str):
        return Rejection(name, key)
    report = Report(namespace=key.namespace, name=key.name)
    try:
        schema.validator(spec, report)
    except Exception as exc:  # a validator bug must not take the stream down
        report.error("spec", f"validator failed: {type(exc).__name__}: {exc}")
    if not report.ok:
        return Rejection(name, "; ".join(str(f) for f in report.errors))
    metadata = resource.metadata
    created = None
    if metadata.HasField("create_time"):
        created = metadata.create_time.ToDatetime(tzinfo=datetime.UTC)
    return Config(
        kind=schema.kind,
        name=key.name,
        namespace=key.namespace,
        spec=spec,
        labels=_frozen(metadata.labels),
        annotations=_frozen(metadata.annotations),
        resource_version=metadata.version,
        creation_time=created,
        origin=Origin(source),
    )


def config_key(schema: Schema, name: str) -> ConfigKey | None:
    """The key a resource name stands for in ``schema``'s kind, or None if it is malformed."""
    key = _key(schema, name)
    return None if isinstance(key, str) else key


def _key(schema: Schema, name: str) -> ConfigKey | str:
    if schema.namespaced:
        namespace, slash, local = name.partition("/")
        if not slash:
            return f"metadata.name {name!r} must be namespace/name"
        if not _DNS1123_LABEL.match(namespace) or len(namespace) > 63:
            return f"namespace {namespace!r} must be a lowercase RFC 1123 label"
    else:
        namespace, local = "", name.removeprefix("/")
    if not local or len(local) > 253 or not _DNS1123_SUBDOMAIN.match(local):
        return f"name {local!r} must be a lowercase RFC 1123 subdomain"
    return ConfigKey(schema.kind, namespace, local)


def _frozen(values: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(values))


@dataclass(frozen=True, slots=True)
class CollectionTable:
    """The collections one endpoint knows: those with a schema, plus ones served empty."""

    schemas: SchemaSet
    empty: frozenset[str] = frozenset()

    @classmethod
    def of(cls, schemas: SchemaSet | None = None, empty: Iterable[str] = ()) -> CollectionTable:
        table = schemas if schemas is not None else SchemaSet()
        known = {s.collection for s in table}
        return cls(table, frozenset(c for c in empty if c not in known))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.collection for s in self.schemas) + tuple(sorted(self.empty))

    def schema(self, collection: str) -> Schema | None:
        return self.schemas.by_collection(collection)

    def __contains__(self, collection: object) -> bool:
        return isinstance(collection, str) and (
            collection in self.empty or self.schemas.by_collection(collection) is not None
        )
