"""The ``api`` generator: Istio config itself over xDS (MCP-over-xDS), the Galley role.

Clients (istiod, another pilothouse) ask for GVK type names such as
``networking.istio.io/v1/ServiceEntry`` and get the full state of that kind in every
response, each object an ``Any`` of ``istio.mcp.v1alpha1.Resource``
(:mod:`~pilothouse.xds.generators.api_resource`). Every spelling of a kind the schema
table accepts (v1, v1beta1, v1alpha3 …) lists the same objects; the server echoes the
requested type name. A kind pilothouse has no schema for (Telemetry …) is
answered with an empty list, so an
istiod that asks for it still becomes ready. ``core/v1alpha1/MeshConfig`` is answered
with one unwrapped MeshConfig built from the server's mesh settings.

Objects are read from the config store (the PushContext indexes only what Envoy
config needs). Each wrapped object is encoded from :class:`ApiResourceInputs` (the
object by revision, and when the server first saw it) and kept beside those inputs by
:class:`FirstSeen`, which reuses the bytes only while an object's inputs are equal to
the ones they were made from, and drops them when the object leaves the store: one
encoded copy per object, every spelling of a kind sharing them, nothing keyed by hand.
They are not in the server's resource cache on purpose: their lifetime is the object's,
which FirstSeen tracks anyway, whereas a cache entry per object pays for LRU
bookkeeping and dependency sets (mcp_sync at 10,000 objects ran at 0.62× with them),
and a store above the cache's bound would be encoded again in full on every pass.
What FirstSeen keeps is history, not something to rebuild: ``metadata.create_time`` of
an object without a ``creationTimestamp`` is when the server first saw it; a changed
object keeps its time (as Kubernetes keeps ``creationTimestamp`` across updates); one
that leaves the store and comes back is a new object with a new time.
:meth:`ApiGenerator.warm` encodes every object ahead of the first request (the
config-server role does it before it reports ready, as Galley built its snapshots), so
a sink that connects gets its answer without waiting for encoding. A resource's version
is the hash of its bytes, so a push re-sends a kind only when something in it changed.
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
from pilothouse.push.inputs import ConfigRevision
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
    """Now, in UTC: when the server first sees an object."""
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
        self._first_seen: dict[str, FirstSeen] = {}

    def warm(self) -> int:
        """Encode every object of every kind the store holds now; returns how many."""
        return sum(len(self._seen(schema).current()) for schema in self._schemas)

    def _seen(self, schema: Schema) -> FirstSeen:
        seen = self._first_seen.get(schema.kind)
        if seen is None:
            seen = self._first_seen[schema.kind] = FirstSeen(schema.kind, self._store, self._clock)
        return seen

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
            made = KindGenerator(type_name, self._seen(schema))
        elif type_name == MESH_CONFIG_GVK:
            made = MeshConfigGenerator(type_name)
        else:
            made = UnknownKindGenerator(type_name)
        self._by_type[type_name] = made
        return made


class FirstSeen:
    """When the server first saw each object of one kind that the store holds (state that
    must outlive any cache: it is the objects' history), and each object's resource with
    the inputs it was encoded from."""

    def __init__(
        self,
        kind: str,
        store: ConfigStore,
        clock: Callable[[], datetime.datetime] = wall_clock_now,
    ) -> None:
        self.kind = kind
        self._store = store
        self._clock = clock
        self._held: dict[ConfigKey, Encoded] = {}

    def current(self) -> list[Resource]:
        """Every object of the kind now, in key order (only new or changed objects are
        encoded); objects gone from the store are forgotten."""
        held = self._held
        fresh: dict[ConfigKey, Encoded] = {}
        now: datetime.datetime | None = None  # one reading per pass, shared by what is new
        for config in self._store.configs(self.kind):
            key = config.key
            encoded = held.get(key)
            if encoded is None:
                now = now if now is not None else self._clock()
                encoded = Encoded.of(ApiResourceInputs(_revision(config), now))
            elif encoded.inputs.config.config is not config:  # else: the same inputs
                inputs = ApiResourceInputs(_revision(config), encoded.inputs.first_seen)
                if inputs != encoded.inputs:
                    encoded = Encoded.of(inputs)
            fresh[key] = encoded
        self._held = fresh
        return [encoded.resource for encoded in fresh.values()]


class Encoded(NamedTuple):
    """One object's resource and the inputs it was encoded from (and only from)."""

    inputs: ApiResourceInputs
    resource: Resource

    @classmethod
    def of(cls, inputs: ApiResourceInputs) -> Encoded:
        return cls(inputs, api_resource(inputs))


@dataclass(frozen=True, slots=True)
class ApiResourceInputs:
    """What one MCP resource is encoded from: the object, by revision, and when the
    server first saw it."""

    config: ConfigRevision
    first_seen: datetime.datetime


def _revision(config: Config) -> ConfigRevision:
    return ConfigRevision(config.key, config.origin.source, config.resource_version, config)


def api_resource(inputs: ApiResourceInputs) -> Resource:
    return encode_api_resource(inputs.config.config, inputs.first_seen)


class KindGenerator:
    """Every object of one kind, wrapped as MCP resources named ``ns/name``."""

    def __init__(self, type_url: str, seen: FirstSeen) -> None:
        self.type_url = type_url
        self._seen = seen

    def generate(self, given: GenerationInput) -> Resources:
        names = given.names
        return {
            resource.name: resource
            for resource in self._seen.current()
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
