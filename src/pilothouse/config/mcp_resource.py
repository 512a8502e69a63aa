"""A Config as an ``istio.mcp.v1alpha1.Resource`` and back: the one MCP Resource codec.

Legacy MCP (:mod:`pilothouse.mcp`), MCP-over-xDS served by the ``api`` generator and
the ``xds://`` source all carry Istio config in this message::

    Resource{metadata: {name: "ns/name", version, create_time, labels, annotations},
             body: Any(spec)}

The body's type URL is the spec message's full name
(``type.googleapis.com/istio.networking.v1alpha3.ServiceEntry``, whatever API version the
object was written in). Kinds with no upstream protobuf message (the Gateway API's,
held in pilothouse's own ``k8s.*`` messages) travel as a ``google.protobuf.Struct`` of the
spec's JSON instead, as istiod sends them; either body is accepted for them.
``metadata.create_time`` is always set, as istiod's own server
sets it (older istiod sinks reject a resource without one): the object's
``creationTimestamp`` when it has one, else the time the caller says pilothouse first
saw it. ``metadata.version`` is the caller's choice: legacy MCP sends
:func:`content_version`, MCP-over-xDS the object's resource version.

Decoding goes through :meth:`Loader.load_message`, so a received object gets the name
checks and the kind's validator that objects from files get. Whatever is wrong with one
resource becomes a :class:`Rejection` (``ns/name: reason``), never an exception.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass
from typing import Final

from google.protobuf import json_format, struct_pb2
from google.protobuf.message import DecodeError, Message

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.config.load import Loader
from pilothouse.config.model import EMPTY, Config, ConfigKey, Origin
from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.config.validation.report import Severity

MCP_RESOURCE_TYPE_URL: Final = "type.googleapis.com/istio.mcp.v1alpha1.Resource"
STRUCT_TYPE_URL: Final = "type.googleapis.com/google.protobuf.Struct"
_STRUCT_PACKAGE_PREFIX: Final = "k8s."
"""Spec messages in these packages have no upstream proto: their body is a Struct."""


def struct_body(spec: Message) -> bool:
    """Whether ``spec`` travels over MCP as a ``google.protobuf.Struct`` of its JSON."""
    return str(spec.DESCRIPTOR.file.package).startswith(_STRUCT_PACKAGE_PREFIX)
UNNAMED: Final = "<unnamed>"
"""The name a rejection carries when the resource had none (or could not be read)."""


def resource_name(config: Config) -> str:
    """``metadata.name``: ``ns/name`` for namespaced objects, plain ``name`` otherwise."""
    return f"{config.namespace}/{config.name}" if config.namespace else config.name


def content_version(config: Config) -> str:
    """A digest of what the object says (name, labels, annotations, spec).

    Equal exactly when the content is, and the same in every process that holds the same
    object: legacy MCP sends it as ``metadata.version`` so that a sink resuming with
    ``initial_resource_versions`` after either side restarted skips everything unchanged.
    """
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


def encode_resource(config: Config, version: str, first_seen: datetime.datetime) -> bytes:
    """The serialized ``Resource`` carrying ``config`` (deterministic bytes).

    ``create_time`` is ``config.creation_time`` when the object has one, else
    ``first_seen``: pass the same time every time the same object is encoded again.
    """
    resource = resource_pb2.Resource()
    metadata = resource.metadata
    metadata.name = resource_name(config)
    metadata.version = version
    if config.labels:
        metadata.labels.update(config.labels)
    if config.annotations:
        metadata.annotations.update(config.annotations)
    seconds, nanos = _epoch_time(
        config.creation_time if config.creation_time is not None else first_seen
    )
    metadata.create_time.seconds = seconds
    metadata.create_time.nanos = nanos
    body = resource.body
    if struct_body(config.spec):
        spec_json = struct_pb2.Struct()
        spec_json.update(json_format.MessageToDict(config.spec))
        body.type_url = STRUCT_TYPE_URL
        body.value = spec_json.SerializeToString(deterministic=True)
    else:
        body.type_url = "type.googleapis.com/" + config.spec.DESCRIPTOR.full_name
        body.value = config.spec.SerializeToString(deterministic=True)
    return resource.SerializeToString(deterministic=True)


_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _epoch_time(moment: datetime.datetime) -> tuple[int, int]:
    """``(seconds, nanos)`` of a ``google.protobuf.Timestamp``; a naive time is UTC.

    The same values as ``Timestamp.FromDatetime``, in integer arithmetic and in less of
    its time (paid for every object encoded; ``bench/mcp_encode.py`` measures the whole
    encoding against protobuf's own helpers).
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    since = moment - _EPOCH
    return since.days * 86_400 + since.seconds, since.microseconds * 1_000


@dataclass(frozen=True, slots=True)
class Rejection:
    """One received resource that was not accepted, and why.

    ``undecodable`` when its bytes or body could not be read at all (legacy MCP NACKs
    those with ``UNKNOWN``, invalid ones with ``INVALID_ARGUMENT``).
    """

    name: str
    reason: str
    undecodable: bool = False

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


def split_name(name: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of an MCP name, or None unless it is exactly ``ns/name``."""
    namespace, slash, rest = name.partition("/")
    if not slash or not namespace or not rest or "/" in rest:
        return None
    return namespace, rest


def resource_key(schema: Schema, name: str) -> ConfigKey | None:
    """The key ``metadata.name`` stands for in ``schema``'s kind, or None if it cannot."""
    if not schema.namespaced:
        local = name.removeprefix("/")
        return ConfigKey(schema.kind, "", local) if local and "/" not in local else None
    parts = split_name(name)
    return None if parts is None else ConfigKey(schema.kind, parts[0], parts[1])


class ResourceDecoder:
    """Received resources of one kind into validated Configs from ``source``."""

    def __init__(self, schema: Schema, source: str, loader: Loader | None = None) -> None:
        self.schema = schema
        self.source = source
        self._loader = loader if loader is not None else Loader(SchemaSet((schema,)), source=source)
        self._origin = Origin(source)
        self._body_type_url = schema.body_type_url
        self._message = schema.message

    def decode_bytes(self, value: bytes) -> Config | Rejection:
        """One serialized ``Resource``: the validated Config, or why it was rejected."""
        try:
            resource = resource_pb2.Resource.FromString(value)
        except DecodeError as problem:
            return Rejection(UNNAMED, f"not an MCP Resource: {problem}", undecodable=True)
        return self.decode(resource)

    def decode(self, resource: resource_pb2.Resource) -> Config | Rejection:
        """One ``Resource`` message: the validated Config, or why it was rejected."""
        metadata = resource.metadata
        full_name = metadata.name
        body = resource.body
        if self.schema.struct_body and body.type_url == STRUCT_TYPE_URL:
            return self._decode_struct(resource)
        if body.type_url != self._body_type_url:
            return Rejection(
                full_name or UNNAMED,
                f"body type {body.type_url!r}; expected {self._body_type_url}",
                undecodable=True,
            )
        try:
            spec = self._message.FromString(body.value)
        except DecodeError as problem:
            return Rejection(
                full_name or UNNAMED,
                f"body is not a {self.schema.proto_name}: {problem}",
                undecodable=True,
            )
        return self._load(resource, spec)

    def _decode_struct(self, resource: resource_pb2.Resource) -> Config | Rejection:
        """A ``Struct`` body: the spec's JSON, decoded strictly into the kind's message."""
        name = resource.metadata.name or UNNAMED
        try:
            spec_json = struct_pb2.Struct.FromString(resource.body.value)
        except DecodeError as problem:
            return Rejection(name, f"body is not a google.protobuf.Struct: {problem}", True)
        try:
            spec = json_format.ParseDict(json_format.MessageToDict(spec_json), self._message())
        except json_format.ParseError as problem:
            return Rejection(name, f"spec: {problem}")
        return self._load(resource, spec)

    def _load(self, resource: resource_pb2.Resource, spec: Message) -> Config | Rejection:
        """The validated Config of ``resource`` whose body decoded into ``spec``."""
        metadata = resource.metadata
        full_name = metadata.name
        key = resource_key(self.schema, full_name)
        if key is None:
            expected = "<namespace>/<name>" if self.schema.namespaced else "<name>"
            return Rejection(full_name or UNNAMED, f"metadata.name must be {expected}")
        created = None
        if metadata.HasField("create_time"):
            created = metadata.create_time.ToDatetime(tzinfo=datetime.UTC)
        labels = metadata.labels
        annotations = metadata.annotations
        config, problems = self._loader.load_message(
            self.schema,
            key.namespace,
            key.name,
            spec,
            labels={name: labels[name] for name in labels} if labels else EMPTY,
            annotations={name: annotations[name] for name in annotations} if annotations else EMPTY,
            resource_version=metadata.version,
            creation_time=created,
            origin=self._origin,
        )
        if config is None:
            reasons = [p.message for p in problems if p.severity is Severity.ERROR]
            return Rejection(full_name, "; ".join(reasons) or "invalid")
        return config
