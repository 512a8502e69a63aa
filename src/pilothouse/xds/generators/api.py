"""The ``api`` generator: Istio config itself over xDS (MCP-over-xDS), the Galley role.

Clients (istiod, another pilothouse) ask for GVK type names such as
``networking.istio.io/v1/ServiceEntry`` and get the full state of that kind in every
response, each object an ``Any`` of ``istio.mcp.v1alpha1.Resource``
(:mod:`~pilothouse.xds.generators.api_resource`). Every spelling of a kind the schema
table accepts (v1, v1beta1, v1alpha3 …) lists the same objects; the server echoes the
requested type name. A kind pilothouse has no schema for (Telemetry,
WasmPlugin …) is answered with an empty list, so an
istiod that asks for it still becomes ready. ``core/v1alpha1/MeshConfig`` is answered
with one unwrapped MeshConfig built from the server's mesh settings.

Objects are read from the config store (the PushContext indexes only what Envoy
config needs). Each wrapped object is encoded once per Config object (configs are
immutable: a change is a new object) and kept in a memo per kind that every spelling of
the kind shares; a kind's memo keeps exactly the objects the store holds, so it costs
one encoded copy per object and never evicts a live one. The memo also keeps, beside the
bytes, when it first saw each object: ``metadata.create_time`` of an object without a
``creationTimestamp``. A changed object is encoded again with the same time (as
Kubernetes keeps ``creationTimestamp`` across updates); one that leaves the store and
comes back is a new object with a new time. :meth:`ApiGenerator.warm`
encodes every object ahead of the first request (the config-server role does it before
it reports ready, as Galley built its snapshots), so a sink that connects gets its
answer without waiting for encoding. A resource's version is the hash of its bytes,
so a push re-sends a kind only when something in it changed.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import Resource
from pilothouse.sources.events import ConfigStore
from pilothouse.xds.builders.encode import content_hash
from pilothouse.xds.generators.api_resource import (
    MESH_CONFIG_GVK,
    api_kind,
    mcp_name,
    wrap_config,
    wrap_mesh_config,
)
from pilothouse.xds.generators.base import GenerationInput, Generator, Resources

MESH_CONFIG_NAME = "mesh"
"""The (internal) resource name of the MeshConfig answer; it is not on the wire."""


def wall_clock_now() -> datetime.datetime:
    """Now, in UTC: when a memo first sees an object."""
    return datetime.datetime.now(datetime.UTC)


class ApiGenerator:
    """Hands out the generator of each MCP-over-xDS type name, reading ``store``."""

    def __init__(
        self,
        store: ConfigStore,
        schemas: SchemaSet | None = None,
        *,
        clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self._store = store
        self._schemas = schemas if schemas is not None else SCHEMAS
        self._clock = clock if clock is not None else wall_clock_now
        self._by_type: dict[str, Generator] = {}
        self._memos: dict[str, KindMemo] = {}

    def warm(self) -> int:
        """Encode every object of every kind the store holds now; returns how many."""
        return sum(len(self._memo(schema).current()) for schema in self._schemas)

    def _memo(self, schema: Schema) -> KindMemo:
        memo = self._memos.get(schema.kind)
        if memo is None:
            memo = self._memos[schema.kind] = KindMemo(schema.kind, self._store, self._clock)
        return memo

    def for_type(self, type_name: str) -> Generator | None:
        """The generator for ``type_name``, or None when it is not an Istio GVK."""
        found = self._by_type.get(type_name)
        if found is not None:
            return found
        if api_kind(type_name) is None:
            return None
        schema = self._schemas.by_gvk(type_name)
        made: Generator
        if schema is not None:
            made = KindGenerator(type_name, self._memo(schema))
        elif type_name == MESH_CONFIG_GVK:
            made = MeshConfigGenerator(type_name)
        else:
            made = UnknownKindGenerator(type_name)
        self._by_type[type_name] = made
        return made


class KindMemo:
    """The encoded MCP resources of one kind, kept in step with the store."""

    def __init__(
        self,
        kind: str,
        store: ConfigStore,
        clock: Callable[[], datetime.datetime] = wall_clock_now,
    ) -> None:
        self.kind = kind
        self._store = store
        self._clock = clock
        self._held: dict[ConfigKey, _Held] = {}

    def current(self) -> list[Resource]:
        """Every object of the kind now, in key order; only new or changed ones are encoded."""
        held = self._held
        fresh: dict[ConfigKey, _Held] = {}
        now: datetime.datetime | None = None  # one reading per pass, shared by what is new
        for config in self._store.configs(self.kind):
            entry = held.get(config.key)
            if entry is None:
                now = now if now is not None else self._clock()
                entry = _Held(config, now, encode_api_resource(config, now))
            elif entry.config is not config:
                seen = entry.first_seen
                entry = _Held(config, seen, encode_api_resource(config, seen))
            fresh[config.key] = entry
        self._held = fresh
        return [entry.resource for entry in fresh.values()]


class _Held(NamedTuple):
    """One object of a kind memo: the Config, when the memo first saw it, its resource."""

    config: Config
    first_seen: datetime.datetime
    resource: Resource


class KindGenerator:
    """Every object of one kind, wrapped as MCP resources named ``ns/name``."""

    def __init__(self, type_url: str, memo: KindMemo) -> None:
        self.type_url = type_url
        self._memo = memo

    def generate(self, given: GenerationInput) -> Resources:
        names = given.names
        return {
            resource.name: resource
            for resource in self._memo.current()
            if names is None or resource.name in names
        }


class MeshConfigGenerator:
    """``core/v1alpha1/MeshConfig``: one raw MeshConfig from the server's mesh settings."""

    def __init__(self, type_url: str = MESH_CONFIG_GVK) -> None:
        self.type_url = type_url

    def generate(self, given: GenerationInput) -> Resources:
        found = given.cache.resource(MeshConfigInputs(given.context.mesh), mesh_config_resource)
        return {found.name: found}


@dataclass(frozen=True, slots=True)
class MeshConfigInputs:
    """What the MeshConfig answer is built from: the mesh settings."""

    mesh: MeshSettings


def mesh_config_resource(inputs: MeshConfigInputs) -> Resource:
    body = wrap_mesh_config(inputs.mesh)
    return Resource(MESH_CONFIG_NAME, content_hash(body), body)


class UnknownKindGenerator:
    """A kind without a schema here: always the empty list (which still answers)."""

    def __init__(self, type_url: str) -> None:
        self.type_url = type_url

    def generate(self, given: GenerationInput) -> Resources:
        return {}


def encode_api_resource(config: Config, first_seen: datetime.datetime) -> Resource:
    """``config`` as an MCP resource: name ``ns/name``, version the hash of its bytes."""
    body = wrap_config(config, first_seen)
    return Resource(mcp_name(config), content_hash(body), body)


def watched_kinds(type_names: list[str]) -> frozenset[str]:
    """The Kinds behind the MCP-over-xDS type names among ``type_names``."""
    return frozenset(kind for kind in map(api_kind, type_names) if kind is not None)
