"""MCP-over-xDS responses in: one response's ``Any`` entries into validated Configs.

Each entry must be an ``istio.mcp.v1alpha1.Resource`` whose ``metadata.name`` is exactly
``<namespace>/<name>`` and whose body is an ``Any`` of the kind's spec message
(``type.googleapis.com/istio.networking.v1alpha3.<Kind>`` for every GVK spelling). One
entry is decoded by the MCP Resource codec (:mod:`pilothouse.config.mcp_resource`): the
name checks and the kind's validator that objects from files get, on the decoded message
itself (no trip through the JSON form). Fields the spec message does not know (a newer
upstream) are dropped by the decoding, as protobuf readers do.

Anything wrong with an entry becomes a :class:`Rejection` (``ns/name: reason``) and the
entry is skipped; its siblings load. :class:`KindDecoder` remembers the entries of the
last response by a digest of their bytes, so an unchanged object is not decoded or
validated twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf.message import DecodeError

from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import (
    MCP_RESOURCE_TYPE_URL,
    UNNAMED,
    Rejection,
    ResourceDecoder,
)
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.schema import Schema

MESH_CONFIG_TYPE_URL: Final = "type.googleapis.com/istio.mesh.v1alpha1.MeshConfig"
MESH_CONFIG_GVK: Final = "core/v1alpha1/MeshConfig"
"""The type name istiod asks for first on an MCP-over-xDS stream."""


@dataclass(frozen=True, slots=True)
class DecodedKind:
    """What one response of one kind held: the valid objects and the rejected entries."""

    configs: tuple[Config, ...]
    rejections: tuple[Rejection, ...]


class KindDecoder:
    """Decodes responses of one kind for one source, remembering the last response."""

    def __init__(self, schema: Schema, source: str, loader: Loader | None = None) -> None:
        self.schema = schema
        self.source = source
        self._resources = ResourceDecoder(schema, source, loader)
        self._last: Mapping[bytes, Config] = {}
        """The valid objects of the last response by a 128-bit BLAKE2b digest of their
        entry's bytes (a digest, not the bytes: 100,000 remembered entries would otherwise
        keep 40 MB). Only MCP Resource entries are remembered, so the bytes say it all."""

    def decode(self, entries: Iterable[Any]) -> DecodedKind:
        """Every entry (``google.protobuf.Any``) of one response."""
        last = self._last
        configs: list[Config] = []
        rejections: list[Rejection] = []
        seen: set[ConfigKey] = set()
        remembered: dict[bytes, Config] = {}
        for entry in entries:
            type_url = entry.type_url
            if type_url != MCP_RESOURCE_TYPE_URL:
                rejections.append(
                    Rejection(UNNAMED, f"type {type_url!r}; expected {MCP_RESOURCE_TYPE_URL}")
                )
                continue
            value = entry.value
            digest = hashlib.blake2b(value, digest_size=16).digest()
            outcome = last.get(digest) or self._resources.decode_bytes(value)
            if isinstance(outcome, Rejection):
                rejections.append(outcome)
                continue
            if outcome.key in seen:
                name = f"{outcome.namespace}/{outcome.name}"
                rejections.append(Rejection(name, "appears more than once in the response"))
                continue
            seen.add(outcome.key)
            remembered[digest] = outcome
            configs.append(outcome)
        self._last = remembered
        return DecodedKind(tuple(configs), tuple(rejections))


def decode_mesh_config(entries: Iterable[Any]) -> config_pb2.MeshConfig | Rejection | None:
    """The MeshConfig answer: one raw MeshConfig ``Any`` (None when the list is empty)."""
    found = list(entries)
    if not found:
        return None
    if len(found) > 1:
        return Rejection("MeshConfig", f"{len(found)} resources; expected one")
    entry = found[0]
    if entry.type_url != MESH_CONFIG_TYPE_URL:
        return Rejection("MeshConfig", f"type {entry.type_url!r}; expected {MESH_CONFIG_TYPE_URL}")
    try:
        return config_pb2.MeshConfig.FromString(entry.value)
    except DecodeError as problem:
        return Rejection("MeshConfig", f"not a MeshConfig: {problem}")
