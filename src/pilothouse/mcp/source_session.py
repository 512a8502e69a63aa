"""The source side of one MCP stream: which request to accept, and what to send.

Used alike by the ``ResourceSource`` server (sinks dial in) and the dial-out source
(pilothouse dials a ``ResourceSink``). Per collection the stream has a :class:`Watch`, a
plain value; the rules are pure functions over it. ``receive`` classifies a
``RequestResources``, checked top to bottom, first match wins:

====================================================  ===============  ===================
request                                               decision         then
====================================================  ===============  ===================
collection ``$triggerCollection``, code UNIMPLEMENTED  TRIGGER          ignored
collection not served                                 UNKNOWN          the stream ends
                                                                       (InvalidArgument)
``response_nonce == ""``                              SUBSCRIBE        respond at once
nonce ≠ the nonce outstanding for the collection      STALE            dropped, counted
nonce = outstanding, ``error_detail`` set             NACK             recorded, counted
nonce = outstanding, no ``error_detail``              ACK              acked versions kept
====================================================  ===============  ===================

After SUBSCRIBE, ACK or NACK the watch is re-armed with the snapshot version last sent,
and :func:`plan_push` answers as soon as the collection's snapshot has another version.
So there is **at most one outstanding** ``Resources`` per collection, and a NACKed version
is **never resent**: the next push waits for a change.

A push is incremental only when the source allows it for the collection, the sink's last
accepted request asked for it, and the source knows what the sink holds: the versions it
ACKed, or the ``initial_resource_versions`` of its subscription (a resumed sink). Added =
new names or names whose version changed; removed = held names no longer present.
Otherwise, and always after a NACK (the sink's state is then uncertain), the push is the
full state with ``incremental=false``. Nonces are a per-stream counter, "1", "2", …
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from pilothouse.mcp.messages import (
    TRIGGER_COLLECTION,
    Code,
    McpError,
    Push,
    SinkRequest,
)
from pilothouse.mcp.snapshot import CollectionSnapshot


class SourceKind(enum.Enum):
    TRIGGER = "trigger"
    UNKNOWN = "unknown"
    SUBSCRIBE = "subscribe"
    STALE = "stale"
    NACK = "nack"
    ACK = "ack"


@dataclass(frozen=True, slots=True)
class Watch:
    """What one stream knows about one collection."""

    collection: str
    incremental: bool = False
    """The sink's last accepted request asked for incremental delivery."""
    pending_nonce: str = ""
    """The nonce of the ``Resources`` waiting for its ACK/NACK; "" when none is."""
    pending_versions: Mapping[str, str] | None = None
    """name → version the sink holds once it ACKs the outstanding push."""
    sent_version: str = ""
    """Snapshot version of the last push ("" before the first): the watch's version."""
    held: Mapping[str, str] | None = None
    """name → version the sink is known to hold (ACKed, or announced on resume); None when
    unknown (nothing ACKed yet, or after a NACK)."""
    last_error: McpError | None = None
    nacked_version: str = ""


@dataclass(frozen=True, slots=True)
class SourceDecision:
    """The verdict on one request, and the push to send now (already recorded as sent)."""

    kind: SourceKind
    collection: str
    push: Push | None = None
    error: McpError | None = None
    """The sink's error (NACK), or why the stream must end (UNKNOWN)."""


@dataclass(frozen=True, slots=True)
class SourceStats:
    requests: int = 0
    subscribes: int = 0
    acks: int = 0
    nacks: int = 0
    stale: int = 0
    triggers: int = 0
    pushes: int = 0
    incremental_pushes: int = 0
    resources_sent: int = 0


def _frozen(versions: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(versions))


def accept(watch: Watch, request: SinkRequest) -> tuple[SourceKind, Watch]:
    """Classify ``request`` for ``watch``'s collection and return the watch after it."""
    if request.response_nonce == "":
        resumed = request.initial_resource_versions
        return SourceKind.SUBSCRIBE, Watch(
            collection=watch.collection,
            incremental=request.incremental,
            held=_frozen(resumed) if resumed else None,
            last_error=watch.last_error,
            nacked_version=watch.nacked_version,
        )
    if not watch.pending_nonce or request.response_nonce != watch.pending_nonce:
        return SourceKind.STALE, watch
    cleared = replace(
        watch, incremental=request.incremental, pending_nonce="", pending_versions=None
    )
    if request.error is not None:
        return SourceKind.NACK, replace(
            cleared, held=None, last_error=request.error, nacked_version=watch.sent_version
        )
    return SourceKind.ACK, replace(cleared, held=watch.pending_versions)


def plan_push(
    watch: Watch,
    snapshot: CollectionSnapshot | None,
    allow_incremental: bool,
    nonce: str,
) -> tuple[Push, Watch] | None:
    """The push owed to ``watch`` now, with the watch after sending it; None if none is."""
    if snapshot is None or watch.pending_nonce or snapshot.version == watch.sent_version:
        return None
    held = watch.held
    current = snapshot.versions
    if allow_incremental and watch.incremental and held is not None:
        push = Push(
            collection=watch.collection,
            nonce=nonce,
            system_version_info=snapshot.version,
            incremental=True,
            resources=tuple(
                snapshot.resources[name]
                for name in sorted(current)
                if held.get(name) != current[name]
            ),
            removed=tuple(sorted(set(held) - set(current))),
        )
    else:
        push = Push(
            collection=watch.collection,
            nonce=nonce,
            system_version_info=snapshot.version,
            resources=tuple(snapshot.resources[name] for name in sorted(current)),
        )
    after = replace(
        watch,
        pending_nonce=nonce,
        pending_versions=_frozen(current),
        sent_version=snapshot.version,
    )
    return push, after


class SourceSession:
    """The source side of one stream. No I/O: requests and snapshots in, pushes out."""

    def __init__(
        self,
        collections: Iterable[str],
        *,
        incremental: Iterable[str] = (),
        snapshots: Mapping[str, CollectionSnapshot] | None = None,
    ) -> None:
        self._collections = frozenset(collections)
        self._incremental = frozenset(incremental)
        self._snapshots: dict[str, CollectionSnapshot] = dict(snapshots or {})
        self._watches: dict[str, Watch] = {}
        self._counter = 0
        self._sink_id = ""
        self.stats = SourceStats()

    @property
    def sink_id(self) -> str:
        """The ``sink_node.id`` of the last accepted request (informational)."""
        return self._sink_id

    def watches(self) -> dict[str, Watch]:
        return dict(self._watches)

    def watch(self, collection: str) -> Watch | None:
        return self._watches.get(collection)

    def receive(self, request: SinkRequest) -> SourceDecision:
        collection = request.collection
        self.stats = replace(self.stats, requests=self.stats.requests + 1)
        if (
            collection == TRIGGER_COLLECTION
            and request.error is not None
            and request.error.code == Code.UNIMPLEMENTED
        ):
            self.stats = replace(self.stats, triggers=self.stats.triggers + 1)
            return SourceDecision(SourceKind.TRIGGER, collection, error=request.error)
        if collection not in self._collections:
            return SourceDecision(
                SourceKind.UNKNOWN,
                collection,
                error=McpError(Code.INVALID_ARGUMENT, f"unsupported collection {collection!r}"),
            )
        watch = self._watches.get(collection, Watch(collection))
        kind, watch = accept(watch, request)
        self._count(kind)
        if kind is SourceKind.STALE:
            return SourceDecision(kind, collection, error=request.error)
        self._sink_id = request.sink_id
        self._watches[collection] = watch
        return SourceDecision(kind, collection, self._plan(collection), request.error)

    def set_snapshot(self, snapshot: CollectionSnapshot) -> Push | None:
        """A new snapshot of a collection: the push it causes on this stream, if any."""
        if snapshot.collection not in self._collections:
            return None
        self._snapshots[snapshot.collection] = snapshot
        if snapshot.collection not in self._watches:
            return None
        return self._plan(snapshot.collection)

    def _plan(self, collection: str) -> Push | None:
        planned = plan_push(
            self._watches[collection],
            self._snapshots.get(collection),
            collection in self._incremental,
            str(self._counter + 1),
        )
        if planned is None:
            return None
        push, watch = planned
        self._counter += 1
        self._watches[collection] = watch
        stats = self.stats
        self.stats = replace(
            stats,
            pushes=stats.pushes + 1,
            incremental_pushes=stats.incremental_pushes + int(push.incremental),
            resources_sent=stats.resources_sent + len(push.resources),
        )
        return push

    def _count(self, kind: SourceKind) -> None:
        stats = self.stats
        if kind is SourceKind.SUBSCRIBE:
            self.stats = replace(stats, subscribes=stats.subscribes + 1)
        elif kind is SourceKind.STALE:
            self.stats = replace(stats, stale=stats.stale + 1)
        elif kind is SourceKind.NACK:
            self.stats = replace(stats, nacks=stats.nacks + 1)
        elif kind is SourceKind.ACK:
            self.stats = replace(stats, acks=stats.acks + 1)
