"""MCP-over-xDS resources in: one response's ``Any`` entries into validated Configs.

Each entry must be an ``istio.mcp.v1alpha1.Resource`` whose ``metadata.name`` is exactly
``<namespace>/<name>`` and whose body is an ``Any`` of the kind's spec message
(``type.googleapis.com/istio.networking.v1alpha3.<Kind>`` for every GVK spelling). A
decoded object goes through :meth:`Loader.load_message`: the name checks and the kind's
validator that objects from files get, on the decoded message itself (no trip through
the JSON form). Fields the spec message does not know (a newer upstream) are dropped by
the decoding, as protobuf readers do.

Anything wrong with an entry becomes a :class:`Rejection` (``ns/name: reason``) and the
entry is skipped; its siblings load. :class:`KindDecoder` remembers the entries of the
last response by a digest of their bytes, so an unchanged object is not decoded or
validated twice.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf.message import DecodeError

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.config.load import Loader
from pilothouse.config.model import EMPTY, Config, ConfigKey, Origin
from pilothouse.config.schema import Schema
from pilothouse.config.validation.report import Severity

TYPE_PREFIX: Final = "type.googleapis.com/"
MCP_RESOURCE_TYPE_URL: Final = TYPE_PREFIX + "istio.mcp.v1alpha1.Resource"
MESH_CONFIG_TYPE_URL: Final = TYPE_PREFIX + "istio.mesh.v1alpha1.MeshConfig"
MESH_CONFIG_GVK: Final = "core/v1alpha1/MeshConfig"
"""The type name istiod asks for first on an MCP-over-xDS stream."""

UNNAMED: Final = "<unnamed>"


@dataclass(frozen=True, slots=True)
class Rejection:
    """One entry of a response that was not accepted, and why."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass(frozen=True, slots=True)
class DecodedKind:
    """What one response of one kind held: the valid objects and the rejected entries."""

    configs: tuple[Config, ...]
    rejections: tuple[Rejection, ...]


def split_name(name: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of an MCP name, or None unless it is exactly ``ns/name``."""
    namespace, slash, rest = name.partition("/")
    if not slash or not namespace or not rest or "/" in rest:
        return None
    return namespace, rest


class KindDecoder:
    """Decodes responses of one kind for one source, remembering the last response."""

    def __init__(self, schema: Schema, source: str, loader: Loader | None = None) -> None:
        self.schema = schema
        self.source = source
        self._loader = loader if loader is not None else Loader(source=source)
        self._origin = Origin(source)
        self._body_type_url = schema.body_type_url
        self._message = schema.message
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
            outcome = last.get(digest) or self.decode_entry(value)
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

    def decode_entry(self, value: bytes) -> Config | Rejection:
        """One entry's bytes (an MCP Resource): the validated Config, or why it was rejected."""
        try:
            resource = resource_pb2.Resource.FromString(value)
        except DecodeError as problem:
            return Rejection(UNNAMED, f"not an MCP Resource: {problem}")
        metadata = resource.metadata
        full_name = metadata.name
        parts = split_name(full_name)
        if parts is None:
            return Rejection(full_name or UNNAMED, "metadata.name must be <namespace>/<name>")
        body = resource.body
        if body.type_url != self._body_type_url:
            return Rejection(
                full_name, f"body type {body.type_url!r}; expected {self._body_type_url}"
            )
        try:
            spec = self._message.FromString(body.value)
        except DecodeError as problem:
            return Rejection(full_name, f"body is not a {self.schema.proto_name}: {problem}")
        created = None
        if metadata.HasField("create_time"):
            created = metadata.create_time.ToDatetime(tzinfo=datetime.UTC)
        labels = metadata.labels
        annotations = metadata.annotations
        config, problems = self._loader.load_message(
            self.schema,
            parts[0],
            parts[1],
            spec,
            labels={key: labels[key] for key in labels} if labels else EMPTY,
            annotations={key: annotations[key] for key in annotations} if annotations else EMPTY,
            resource_version=metadata.version,
            creation_time=created,
            origin=self._origin,
        )
        if config is None:
            reasons = [p.message for p in problems if p.severity is Severity.ERROR]
            return Rejection(full_name, "; ".join(reasons) or "invalid")
        return config


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
