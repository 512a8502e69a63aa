"""The sink side of one MCP stream: the opening requests, and the reply to each ``Resources``.

Used alike by the sink client (pilothouse dials a ``ResourceSource``) and the
``ResourceSink`` server (a source dials pilothouse). The stream opens with one
``RequestResources`` per collection, ``response_nonce=""``, ``incremental`` as configured
and, for incremental collections, ``initial_resource_versions`` = what the sink holds.
Then every ``Resources`` gets exactly one reply, which is also the request for the next:

======================================  =======================================
``Resources``                           reply
======================================  =======================================
collection not subscribed               NACK 12 UNIMPLEMENTED "unsupported collection"
                                        (this is also the answer to ``$triggerCollection``)
a body that cannot be decoded           NACK 2 UNKNOWN with the reasons
a resource that fails validation        NACK 3 INVALID_ARGUMENT with the reasons
everything applied                      ACK
handling it raised (a bug of ours)      NACK 13 INTERNAL, nothing applied (:meth:`failed`)
======================================  =======================================

A bad resource never takes the good ones down: the valid ones of a NACKed message are
applied, and a rejected name keeps the version the sink held before (a full push does not
delete it). ``incremental=false`` replaces the collection; ``incremental=true`` upserts the
resources and deletes ``removed_resources``. The change to make is returned as a value
(:class:`CollectionChange`); the caller applies it to its store.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.schema import SchemaSet
from pilothouse.mcp.collections import Rejection, config_key, decode_resource, resource_name
from pilothouse.mcp.messages import (
    EMPTY,
    Code,
    McpError,
    ReceivedResources,
    SinkRequest,
)

Held = Mapping[str, Mapping[str, str]]
"""collection → (resource name → version) the sink holds."""


class SinkKind(enum.Enum):
    ACK = "ack"
    NACK = "nack"
    UNSUPPORTED = "unsupported"
    FAILED = "failed"
    """Handling the message raised: NACKed with INTERNAL, nothing applied."""


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """What a sink asks for and how it names itself."""

    collections: tuple[str, ...]
    incremental: frozenset[str] = frozenset()
    """Collections for which the sink asks for incremental delivery."""
    sink_id: str = ""
    annotations: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    source: str = "mcp"
    """Origin name given to the configs received."""


@dataclass(frozen=True, slots=True)
class CollectionChange:
    """What to do to the store: upsert these configs, delete these keys."""

    collection: str
    full: bool
    upserts: tuple[Config, ...] = ()
    deletes: tuple[ConfigKey, ...] = ()


@dataclass(frozen=True, slots=True)
class SinkDecision:
    kind: SinkKind
    collection: str
    reply: SinkRequest
    change: CollectionChange | None = None
    rejections: tuple[Rejection, ...] = ()
    first: bool = False
    """The first ``Resources`` of this collection on this stream."""


@dataclass(frozen=True, slots=True)
class SinkStats:
    received: int = 0
    full: int = 0
    incremental: int = 0
    resources_received: int = 0
    acks: int = 0
    nacks: int = 0
    unsupported: int = 0


def _frozen(versions: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(versions))


class SinkSession:
    """The sink side of one stream. No I/O: ``Resources`` in, replies and changes out."""

    def __init__(self, options: SinkOptions, schemas: SchemaSet, held: Held | None = None) -> None:
        self._options = options
        self._schemas = schemas
        for collection in options.collections:
            if schemas.by_collection(collection) is None:
                raise ValueError(f"no schema for collection {collection!r}")
        previous = held or {}
        self._held: dict[str, Mapping[str, str]] = {
            c: _frozen(previous.get(c, {})) for c in options.collections
        }
        self._answered: set[str] = set()
        self.stats = SinkStats()

    @property
    def options(self) -> SinkOptions:
        return self._options

    @property
    def held(self) -> Held:
        """What the sink holds now, per collection: pass it to the next stream's session."""
        return MappingProxyType(dict(self._held))

    def answered(self) -> frozenset[str]:
        """Collections that got at least one ``Resources`` on this stream."""
        return frozenset(self._answered)

    def initial_requests(self) -> tuple[SinkRequest, ...]:
        return tuple(self._request(c, "", initial=True) for c in self._options.collections)

    def _request(
        self, collection: str, nonce: str, *, error: McpError | None = None, initial: bool = False
    ) -> SinkRequest:
        incremental = collection in self._options.incremental
        versions = self._held.get(collection, EMPTY) if initial and incremental else EMPTY
        return SinkRequest(
            collection=collection,
            response_nonce=nonce,
            incremental=incremental,
            initial_resource_versions=versions,
            error=error,
            sink_id=self._options.sink_id,
            sink_annotations=self._options.annotations,
        )

    def receive(self, message: ReceivedResources) -> SinkDecision:
        collection = message.collection
        schema = self._schemas.by_collection(collection)
        self.stats = replace(self.stats, received=self.stats.received + 1)
        if schema is None or collection not in self._held:
            self.stats = replace(self.stats, unsupported=self.stats.unsupported + 1)
            error = McpError(Code.UNIMPLEMENTED, "unsupported collection")
            return SinkDecision(
                SinkKind.UNSUPPORTED,
                collection,
                self._request(collection, message.nonce, error=error),
            )
        first = collection not in self._answered
        self._answered.add(collection)
        held = dict(self._held[collection])
        configs: list[Config] = []
        rejections: list[Rejection] = []
        seen: set[str] = set()
        for resource in message.resources:
            name = resource.metadata.name
            if name in seen:
                rejections.append(Rejection(name, "duplicate name in one message"))
                continue
            seen.add(name)
            decoded = decode_resource(schema, resource, self._options.source)
            if isinstance(decoded, Rejection):
                rejections.append(decoded)
            else:
                configs.append(decoded)
        if message.incremental:
            gone = [n for n in message.removed if n in held and n not in seen]
        else:
            gone = [n for n in held if n not in seen]
        deletes: list[ConfigKey] = []
        for name in sorted(gone):
            del held[name]
            key = config_key(schema, name)
            if key is not None:
                deletes.append(key)
        for config in configs:
            held[resource_name(config)] = config.resource_version
        self._held[collection] = _frozen(held)
        change = CollectionChange(
            collection, not message.incremental, tuple(configs), tuple(deletes)
        )
        self._count(message, configs, rejections)
        if rejections:
            code = Code.UNKNOWN if any(r.undecodable for r in rejections) else Code.INVALID_ARGUMENT
            total = len(message.resources)
            text = f"rejected {len(rejections)} of {total} resources: " + "; ".join(
                str(r) for r in rejections
            )
            reply = self._request(collection, message.nonce, error=McpError(code, text))
            return SinkDecision(SinkKind.NACK, collection, reply, change, tuple(rejections), first)
        reply = self._request(collection, message.nonce)
        return SinkDecision(SinkKind.ACK, collection, reply, change, (), first)

    def failed(self, message: ReceivedResources, held: Held) -> SinkDecision:
        """The reply to a message whose handling raised: a NACK with INTERNAL, and no change.

        ``held`` is what :attr:`held` said before the message; the versions go back to it,
        so that the next stream announces only what the store is known to hold.
        """
        self._held = {c: _frozen(held.get(c, {})) for c in self._options.collections}
        self.stats = replace(self.stats, nacks=self.stats.nacks + 1)
        count = len(message.resources)
        error = McpError(
            Code.INTERNAL,
            f"pilothouse failed to apply {count} resource(s) of {message.collection} "
            "(internal error; details in its log); its last good config is kept",
        )
        reply = self._request(message.collection, message.nonce, error=error)
        return SinkDecision(SinkKind.FAILED, message.collection, reply)

    def _count(
        self, message: ReceivedResources, configs: list[Config], rejections: list[Rejection]
    ) -> None:
        stats = self.stats
        self.stats = replace(
            stats,
            full=stats.full + int(not message.incremental),
            incremental=stats.incremental + int(message.incremental),
            resources_received=stats.resources_received + len(message.resources),
            acks=stats.acks + int(not rejections),
            nacks=stats.nacks + int(bool(rejections)),
        )
