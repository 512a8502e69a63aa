"""One digest per resource, the same whether it comes as pilothouse's bytes or Envoy's JSON.

Both sides are read into the resource's proto message first: pilothouse's ``Any``
bytes (what it sent) with ``ParseFromString``, an Envoy ``/config_dump`` entry with
``google.protobuf.json_format`` (``@type`` names the message). The digest is then taken
over one canonical form of that message: its proto3 JSON mapping, every nested ``Any``
expanded into its message, keys sorted, no whitespace, hashed with BLAKE2b (16 hex
digits, as resource versions are).

Why not the message's deterministic serialisation: it does not reach into a nested
``Any``, whose ``value`` is bytes serialised by whoever packed it (pilothouse packs
deterministically; ``json_format`` packs a parsed ``typed_config`` in its own field
order), and it keeps unknown fields. The JSON form of the parsed message has neither
problem: equal messages give equal text, maps included.

What is normalised, and only that:

- Envoy's wrapping of each resource (``version_info``, ``last_updated``, the state it
  is in) is not part of the resource and is not read;
- ``@type`` names the message and is not hashed as a field;
- fields of Envoy's dump that these protos do not know are ignored (pilothouse builds
  its resources from the same protos, so it cannot have sent them);
- a ClusterLoadAssignment is rebuilt by Envoy from its hosts, not dumped as received,
  and is compared on its comparable part (:mod:`pilothouse.inspector.endpoints`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from google.protobuf import any_pb2, json_format
from google.protobuf.message import DecodeError, Message

from pilothouse.inspector.endpoints import comparable_assignment
from pilothouse.inspector.message_types import MessageTypes, UnknownType
from pilothouse.protocol.type_urls import EDS
from pilothouse.xds.builders.encode import content_hash

TYPE_KEY: Final = "@type"


class Unreadable(ValueError):
    """The resource cannot be read into its message; the message says why."""


def canonical_text(message: Message, types: MessageTypes) -> str:
    """The canonical form of ``message``: sorted proto3 JSON, nested ``Any``s expanded."""
    try:
        mapped = json_format.MessageToDict(
            message, preserving_proto_field_name=True, descriptor_pool=types.pool
        )
    except TypeError as problem:  # an Any whose type no module defines
        raise Unreadable(str(problem)) from None
    return json.dumps(mapped, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(type_url: str, message: Message, types: MessageTypes) -> str:
    """The digest of a resource of ``type_url``, read into ``message``."""
    if type_url == EDS:
        message = comparable_assignment(message)
    return content_hash(canonical_text(message, types).encode())


def from_any_bytes(body: bytes, types: MessageTypes) -> Message:
    """The resource in a serialised ``google.protobuf.Any`` (what pilothouse sends)."""
    try:
        wrapped = any_pb2.Any.FromString(body)
        message = types.new(wrapped.type_url)
        message.ParseFromString(wrapped.value)
    except (DecodeError, UnknownType) as problem:
        raise Unreadable(str(problem)) from None
    return message


def from_json(resource: Mapping[str, Any], types: MessageTypes) -> Message:
    """The resource in a JSON object carrying its ``@type`` (an Envoy dump's entry)."""
    type_url = resource.get(TYPE_KEY)
    if not isinstance(type_url, str):
        raise Unreadable(f"no {TYPE_KEY} in the resource")
    fields = {key: value for key, value in resource.items() if key != TYPE_KEY}
    try:
        message = types.new(type_url)
        json_format.ParseDict(
            fields, message, ignore_unknown_fields=True, descriptor_pool=types.pool
        )
    except (json_format.ParseError, UnknownType) as problem:
        raise Unreadable(str(problem)) from None
    return message


def bytes_digest(type_url: str, body: bytes, types: MessageTypes) -> str:
    """The digest of a resource as pilothouse sent it."""
    return digest(type_url, from_any_bytes(body, types), types)


def json_digest(type_url: str, resource: Mapping[str, Any], types: MessageTypes) -> str:
    """The digest of a resource as an Envoy dump shows it."""
    return digest(type_url, from_json(resource, types), types)
