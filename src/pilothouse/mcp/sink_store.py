"""Where a pilothouse sink keeps what it received: a MemoryStore that outlives streams.

Both sink roles (the ``mcp://`` client and the ``ResourceSink`` server) put decisions of
their :class:`SinkSession` here. The store keeps its last good state while no stream is
up; what it holds is handed to the next stream's session, which announces it in
``initial_resource_versions`` (for incremental collections) so an unchanged config is not
sent again. The sink has synced once every collection it asks for got a first response.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from pilothouse.config.schema import SchemaSet
from pilothouse.mcp.collections import Rejection
from pilothouse.mcp.sink_session import Held, SinkDecision, SinkKind, SinkOptions, SinkSession
from pilothouse.sources.memory import MemoryStore

log = logging.getLogger("pilothouse.mcp")


@dataclass(frozen=True, slots=True)
class SinkTotals:
    """Counters over every stream this sink had."""

    streams: int = 0
    acks: int = 0
    nacks: int = 0
    unsupported: int = 0
    resources_received: int = 0
    full: int = 0
    incremental: int = 0


class SinkStore:
    """The received configs, the versions held, and the synced flag."""

    def __init__(self, options: SinkOptions, schemas: SchemaSet, name: str) -> None:
        self.options = options
        self.schemas = schemas
        self.store = MemoryStore(name=name)
        self._held: Held = {}
        self._answered: set[str] = set()
        self.totals = SinkTotals()
        self.last_rejections: tuple[Rejection, ...] = ()

    def has_synced(self) -> bool:
        return self.store.has_synced()

    @property
    def held(self) -> Held:
        return self._held

    def new_session(self) -> SinkSession:
        self.totals = _bump(self.totals, streams=1)
        return SinkSession(self.options, self.schemas, self._held)

    def apply(self, session: SinkSession, decision: SinkDecision) -> None:
        """Apply ``decision``'s change to the store and take note of its outcome."""
        change = decision.change
        if change is not None:
            for key in change.deletes:
                self.store.delete(key)
            for config in change.upserts:
                self.store.apply(config)
            self._held = session.held
            self.totals = _bump(
                self.totals,
                resources_received=len(change.upserts) + len(decision.rejections),
                full=int(change.full),
                incremental=int(not change.full),
            )
        if decision.kind is SinkKind.FAILED:
            # Nothing was applied: the collection does not count as answered (synced).
            self.totals = _bump(self.totals, nacks=1)
            log.warning(
                "NACK %s: %s", decision.collection, decision.reply.error, extra=self._extra()
            )
            return
        if decision.kind is SinkKind.UNSUPPORTED:
            self.totals = _bump(self.totals, unsupported=1)
            log.info("NACK for unsupported collection %s", decision.collection, extra=self._extra())
            return
        if decision.kind is SinkKind.NACK:
            self.totals = _bump(self.totals, nacks=1)
            self.last_rejections = decision.rejections
            log.warning(
                "NACK %s nonce %s: %s",
                decision.collection,
                decision.reply.response_nonce,
                decision.reply.error,
                extra=self._extra(),
            )
        else:
            self.totals = _bump(self.totals, acks=1)
        self._answered.add(decision.collection)
        if not self.store.has_synced() and self._answered >= set(self.options.collections):
            self.store.mark_synced()
            log.info("MCP sink synced", extra=self._extra())

    def _extra(self) -> dict[str, str]:
        return {"store": self.store.name}


def _bump(totals: SinkTotals, **increments: int) -> SinkTotals:
    return replace(totals, **{k: getattr(totals, k) + v for k, v in increments.items()})
