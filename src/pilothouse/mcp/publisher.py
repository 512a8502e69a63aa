"""From a config store to MCP snapshots, by snapshot group, as Galley published them.

Collections are published in groups. Galley had two that matter here:

- ``default``: every ``istio/*`` collection, **debounced** (maxWait 1 s, quiesce 500 ms:
  publish once the store has been quiet for the quiesce time, or once max-wait has passed
  since the first change, whichever comes first);
- ``syntheticServiceEntry``: ``istio/networking/v1alpha3/synthetic/serviceentries``,
  published **immediately**. pilothouse synthesises no service entries, so this group is
  declared and its collection is served empty.

Nothing is published before the store has synced (Galley waited for every collection's
FullSync), and nothing before the first stream asks (:meth:`SnapshotPublisher.demand`):
a replica that no sink dials keeps no second encoding of its config (100,000 objects
would cost seconds of CPU and some 80 MB). Then everything is published once, and each
later change publishes its group. Each config is encoded into its ``mcp.Resource`` bytes
once and reused until it changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from pilothouse.config.model import Config, ConfigKey
from pilothouse.mcp.collections import SYNTHETIC_SERVICE_ENTRIES, CollectionTable, encode_config
from pilothouse.mcp.messages import EncodedResource
from pilothouse.mcp.snapshot import SnapshotCache
from pilothouse.push.clock import Clock
from pilothouse.push.debounce import Debouncer, DebounceSettings
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.settings import McpSettings
from pilothouse.sources.events import ConfigEvent, ConfigStore

log = logging.getLogger("pilothouse.mcp")

DEFAULT_GROUP = "default"
SYNTHETIC_GROUP = "syntheticServiceEntry"


@dataclass(frozen=True, slots=True)
class McpSourceOptions:
    """How pilothouse serves MCP as a source."""

    incremental: frozenset[str] = frozenset()
    """Collections that may be sent incrementally (Galley registered none: full state)."""
    max_wait: float = McpSettings.max_wait
    """The ``default`` group's longest wait from the first change to a publish, seconds."""
    quiesce: float = McpSettings.quiesce
    """The ``default`` group's quiet time before a publish, seconds."""
    empty_collections: tuple[str, ...] = field(default=(SYNTHETIC_SERVICE_ENTRIES,))
    """Collections served with no resources (so sinks that ask for them are not refused)."""
    sync_poll: float = 0.05
    """How often the dial-out source checks whether the store has synced before dialling."""


@dataclass(frozen=True, slots=True)
class SnapshotGroup:
    """Collections published together; ``debounce`` None means at once."""

    name: str
    collections: frozenset[str]
    debounce: DebounceSettings | None = None


def galley_groups(table: CollectionTable, options: McpSourceOptions) -> tuple[SnapshotGroup, ...]:
    names = set(table.names)
    synthetic = frozenset({SYNTHETIC_SERVICE_ENTRIES} & names)
    return (
        SnapshotGroup(
            DEFAULT_GROUP,
            frozenset(names - synthetic),
            DebounceSettings(debounce_after=options.quiesce, debounce_max=options.max_wait),
        ),
        SnapshotGroup(SYNTHETIC_GROUP, synthetic),
    )


class SnapshotPublisher:
    """Keeps a :class:`SnapshotCache` equal to a store, group by group."""

    def __init__(
        self,
        store: ConfigStore,
        table: CollectionTable | None = None,
        options: McpSourceOptions | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.options = options if options is not None else McpSourceOptions()
        self.table = (
            table if table is not None else CollectionTable.of(empty=self.options.empty_collections)
        )
        self.store = store
        self.cache = SnapshotCache()
        self.groups = galley_groups(self.table, self.options)
        self._group_of = {c: g for g in self.groups for c in g.collections}
        self._clock = clock
        self._debouncers: dict[str, Debouncer] = {}
        self._encoded: dict[ConfigKey, tuple[Config, EncodedResource]] = {}
        self._published = False
        self._demanded = asyncio.Event()
        self._closed = asyncio.Event()

    def has_synced(self) -> bool:
        """True once the store has synced: from then on :meth:`demand` publishes."""
        return self._published or self.store.has_synced()

    def demand(self) -> bool:
        """A stream is about to read the snapshots: publish every collection now unless
        already done. False while the store has not synced (nothing to publish yet)."""
        if self._published:
            return True
        if not self.store.has_synced() or self._closed.is_set():
            return False
        for group in self.groups:
            if group.debounce is not None:
                self._debouncers[group.name] = Debouncer(
                    group.debounce, _Release(self, group), self._clock
                )
        self.publish(self.table.names)
        self._published = True
        self._demanded.set()
        return True

    def close(self) -> None:
        self._closed.set()
        for debouncer in self._debouncers.values():
            debouncer.close()

    async def run(self) -> None:
        """Follow the store's changes once the first stream has demanded the snapshots."""
        unsubscribe = self.store.subscribe(self._on_event)
        try:
            demanded = asyncio.create_task(self._demanded.wait())
            closed = asyncio.create_task(self._closed.wait())
            await asyncio.wait({demanded, closed}, return_when=asyncio.FIRST_COMPLETED)
            for waiter in (demanded, closed):
                waiter.cancel()
            if self._closed.is_set():
                return
            async with asyncio.TaskGroup() as tasks:
                for debouncer in self._debouncers.values():
                    tasks.create_task(debouncer.run())
                tasks.create_task(self._closed.wait())
        finally:
            unsubscribe()

    def publish(self, collections: Iterable[str]) -> None:
        """Publish the store's current state of ``collections`` now."""
        for collection in collections:
            self.cache.publish(collection, self._encode(collection))

    def _encode(self, collection: str) -> list[EncodedResource]:
        schema = self.table.schema(collection)
        if schema is None:
            return []
        encoded: list[EncodedResource] = []
        for config in self.store.configs(schema.kind):
            cached = self._encoded.get(config.key)
            if cached is None or cached[0] is not config:
                cached = (config, encode_config(schema, config))
                self._encoded[config.key] = cached
            encoded.append(cached[1])
        return encoded

    def _on_event(self, event: ConfigEvent) -> None:
        if event.new is None:
            self._encoded.pop(event.key, None)
        if not self._published:
            return  # the first publish reads everything
        schema = self.table.schemas.by_kind(event.key.kind)
        if schema is None:
            return
        group = self._group_of.get(schema.collection)
        if group is None:
            return
        debouncer = self._debouncers.get(group.name)
        if debouncer is None:
            self.publish([schema.collection])
        else:
            debouncer.enqueue(
                PushRequest(
                    full=True,
                    configs_updated=frozenset({event.key}),
                    reasons={TriggerReason.CONFIG: 1},
                )
            )


class _Release:
    """Publishes the collections of one group named by a released push request."""

    def __init__(self, publisher: SnapshotPublisher, group: SnapshotGroup) -> None:
        self._publisher = publisher
        self._group = group

    async def __call__(self, request: PushRequest) -> None:
        table = self._publisher.table
        if request.configs_updated:
            collections = set()
            for key in request.configs_updated:
                schema = table.schemas.by_kind(key.kind)
                if schema is not None and schema.collection in self._group.collections:
                    collections.add(schema.collection)
        else:
            collections = set(self._group.collections)
        self._publisher.publish(sorted(collections))
        log.debug("published snapshot group %s: %s", self._group.name, sorted(collections))
