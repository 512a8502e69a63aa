"""Legacy MCP messages as plain values, and their conversion to and from the wire.

The protocol engines (:mod:`pilothouse.mcp.protocol`) read and return these frozen values,
never gRPC objects. ``RequestResources`` (sink → source) is :class:`SinkRequest`;
``Resources`` (source → sink) is :class:`Push` when we send it (resources already encoded,
so a response is assembled from cached bytes, :func:`encode_push`) and
:class:`ReceivedResources` when we receive it (resources still as protobuf messages, to
be decoded by schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType

from google.rpc import status_pb2

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2, resource_pb2

EMPTY: Mapping[str, str] = MappingProxyType({})

TRIGGER_COLLECTION = "$triggerCollection"
"""The collection a dial-out source opens its stream with (a gRPC client must send first)."""


class Code(IntEnum):
    """The gRPC status codes MCP puts in ``error_detail``."""

    OK = 0
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    UNIMPLEMENTED = 12
    INTERNAL = 13


@dataclass(frozen=True, slots=True)
class McpError:
    """``error_detail`` of a NACK: a gRPC code and a message."""

    code: int
    message: str

    def __str__(self) -> str:
        try:
            name = Code(self.code).name
        except ValueError:
            name = str(self.code)
        return f"{name}: {self.message}"


def _frozen(values: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(values)) if values else EMPTY


@dataclass(frozen=True, slots=True)
class SinkRequest:
    """``RequestResources``: a subscription, or the ACK/NACK of the last ``Resources``."""

    collection: str
    response_nonce: str = ""
    incremental: bool = False
    initial_resource_versions: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    error: McpError | None = None
    sink_id: str = ""
    sink_annotations: Mapping[str, str] = field(default_factory=lambda: EMPTY)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "initial_resource_versions", _frozen(self.initial_resource_versions)
        )
        object.__setattr__(self, "sink_annotations", _frozen(self.sink_annotations))

    @property
    def is_nack(self) -> bool:
        return self.error is not None


@dataclass(frozen=True, slots=True)
class EncodedResource:
    """One ``mcp.Resource``, serialized once: its name, its version and its bytes."""

    name: str
    version: str
    encoded: bytes


@dataclass(frozen=True, slots=True)
class Push:
    """A ``Resources`` message the source sends (or the trigger a dial-out source opens with)."""

    collection: str
    nonce: str
    system_version_info: str = ""
    incremental: bool = False
    resources: tuple[EncodedResource, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.resources)


@dataclass(frozen=True, slots=True)
class ReceivedResources:
    """A ``Resources`` message the sink received; resources are decoded later, by schema."""

    collection: str
    nonce: str
    system_version_info: str = ""
    incremental: bool = False
    resources: tuple[resource_pb2.Resource, ...] = ()
    removed: tuple[str, ...] = ()


def trigger_push() -> Push:
    """``Resources{collection: "$triggerCollection"}``, with no nonce, as the reference sent."""
    return Push(collection=TRIGGER_COLLECTION, nonce="")


# --- wire conversion -------------------------------------------------------------------------


def request_from_proto(message: mcp_pb2.RequestResources) -> SinkRequest:
    error = None
    if message.HasField("error_detail"):
        error = McpError(message.error_detail.code, message.error_detail.message)
    return SinkRequest(
        collection=message.collection,
        response_nonce=message.response_nonce,
        incremental=message.incremental,
        initial_resource_versions=dict(message.initial_resource_versions),
        error=error,
        sink_id=message.sink_node.id,
        sink_annotations=dict(message.sink_node.annotations),
    )


def request_to_proto(request: SinkRequest) -> mcp_pb2.RequestResources:
    message = mcp_pb2.RequestResources(
        collection=request.collection,
        response_nonce=request.response_nonce,
        incremental=request.incremental,
        initial_resource_versions=dict(request.initial_resource_versions),
    )
    message.sink_node.id = request.sink_id
    message.sink_node.annotations.update(request.sink_annotations)
    if request.error is not None:
        message.error_detail.CopyFrom(
            status_pb2.Status(code=request.error.code, message=request.error.message)
        )
    return message


def received_from_proto(message: mcp_pb2.Resources) -> ReceivedResources:
    return ReceivedResources(
        collection=message.collection,
        nonce=message.nonce,
        system_version_info=message.system_version_info,
        incremental=message.incremental,
        resources=tuple(message.resources),
        removed=tuple(message.removed_resources),
    )


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _delimited(field_number: int, payload: bytes) -> bytes:
    return _varint(field_number << 3 | 2) + _varint(len(payload)) + payload


def _text(field_number: int, value: str) -> bytes:
    return _delimited(field_number, value.encode()) if value else b""


def encode_push(push: Push) -> bytes:
    """The serialized ``Resources`` message, assembled from the resources' cached bytes.

    Fields go out in field-number order with proto3 defaults omitted, exactly as protobuf
    itself serializes the message, so nothing is re-encoded per push.
    """
    parts = [_text(1, push.system_version_info), _text(2, push.collection)]
    parts.extend(_delimited(3, r.encoded) for r in push.resources)
    parts.extend(_delimited(4, name.encode()) for name in push.removed)
    parts.append(_text(5, push.nonce))
    if push.incremental:
        parts.append(_varint(6 << 3 | 0) + b"\x01")
    return b"".join(parts)
