"""Snapshots and their publication: versions move only on change; Galley's snapshot groups."""

from __future__ import annotations

import asyncio

import pytest

from pilothouse.config.model import ConfigKey
from pilothouse.mcp.collection_table import SYNTHETIC_SERVICE_ENTRIES
from pilothouse.mcp.publisher import (
    DEFAULT_GROUP,
    SYNTHETIC_GROUP,
    McpSourceOptions,
    SnapshotPublisher,
)
from pilothouse.mcp.snapshot import CollectionSnapshot, SnapshotCache
from pilothouse.push.clock import ManualClock
from pilothouse.sources.memory import MemoryStore
from tests.unit.mcp.builders import SE, encoded, service_entry

WE = "istio/networking/v1alpha3/workloadentries"


def test_cache_versions_move_only_when_content_changes() -> None:
    cache = SnapshotCache()
    seen: list[CollectionSnapshot] = []
    unwatch = cache.watch(seen.append)
    assert cache.publish(SE, [encoded(service_entry("a"))])
    assert not cache.publish(SE, [encoded(service_entry("a"))])
    assert cache.publish(SE, [encoded(service_entry("a", host="x.example.com"))])
    assert [s.version for s in seen] == [f"{SE}/1", f"{SE}/2"]
    assert cache.publish(WE, [])
    assert cache.get(WE) == CollectionSnapshot(WE, f"{WE}/1")
    unwatch()
    cache.publish(SE, [])
    assert len(seen) == 3


def test_snapshot_needs_a_version() -> None:
    with pytest.raises(ValueError, match="version"):
        CollectionSnapshot(SE, "")


def test_groups_are_galleys() -> None:
    options = McpSourceOptions(max_wait=1.0, quiesce=0.5)
    publisher = SnapshotPublisher(MemoryStore(), options=options)
    groups = {g.name: g for g in publisher.groups}
    assert set(groups) == {DEFAULT_GROUP, SYNTHETIC_GROUP}
    default = groups[DEFAULT_GROUP]
    assert SE in default.collections and WE in default.collections
    assert SYNTHETIC_SERVICE_ENTRIES not in default.collections
    assert default.debounce is not None
    assert (default.debounce.debounce_after, default.debounce.debounce_max) == (0.5, 1.0)
    assert groups[SYNTHETIC_GROUP].collections == {SYNTHETIC_SERVICE_ENTRIES}
    assert groups[SYNTHETIC_GROUP].debounce is None


async def settle() -> None:
    for _ in range(30):
        await asyncio.sleep(0)


class Running:
    def __init__(self, store: MemoryStore, clock: ManualClock) -> None:
        options = McpSourceOptions(max_wait=1.0, quiesce=0.5, sync_poll=0.01)
        self.publisher = SnapshotPublisher(store, options=options, clock=clock)
        self.task = asyncio.create_task(self.publisher.run())

    def version(self, collection: str) -> str | None:
        snapshot = self.publisher.cache.get(collection)
        return None if snapshot is None else snapshot.version


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


async def start(store: MemoryStore, clock: ManualClock) -> Running:
    """A running publisher whose snapshots a stream has asked for (when the store synced)."""
    running = Running(store, clock)
    await settle()
    running.publisher.demand()
    await settle()
    return running


async def stop(running: Running) -> None:
    running.publisher.close()
    await asyncio.wait_for(running.task, 1)


async def test_nothing_is_published_before_the_store_syncs(store: MemoryStore) -> None:
    running = await start(store, ManualClock())
    await asyncio.sleep(0.05)
    assert not running.publisher.has_synced() and running.version(SE) is None
    assert not running.publisher.demand()  # a stream now would be refused
    assert running.version(SE) is None
    store.apply(service_entry("a"))
    store.mark_synced()
    await asyncio.sleep(0.05)
    assert running.publisher.has_synced()
    assert running.publisher.demand()
    snapshot = running.publisher.cache.get(SE)
    assert snapshot is not None and list(snapshot.resources) == ["default/a"]
    assert running.version(SYNTHETIC_SERVICE_ENTRIES) == f"{SYNTHETIC_SERVICE_ENTRIES}/1"
    await stop(running)


async def test_nothing_is_encoded_until_a_stream_asks(store: MemoryStore) -> None:
    """A synced store with no MCP streams: no snapshots, no encodings, no reaction to
    changes; the first demand publishes the current state, later changes follow."""
    clock = ManualClock()
    store.apply(service_entry("a"))
    store.mark_synced()
    running = Running(store, clock)
    await settle()
    store.apply(service_entry("b"))
    clock.advance(2.0)
    await settle()
    assert running.publisher.has_synced()
    assert running.version(SE) is None and running.publisher.cache.snapshots() == {}
    assert running.publisher.demand()
    snapshot = running.publisher.cache.get(SE)
    assert snapshot is not None and sorted(snapshot.resources) == ["default/a", "default/b"]
    assert running.publisher.demand()  # a second stream: nothing published again
    assert running.version(SE) == f"{SE}/1"
    await settle()
    store.apply(service_entry("c"))
    await settle()
    clock.advance(0.5)
    await settle()
    assert running.version(SE) == f"{SE}/2"
    await stop(running)


async def test_default_group_waits_for_quiet(store: MemoryStore) -> None:
    clock = ManualClock()
    store.mark_synced()
    running = await start(store, clock)
    assert running.version(SE) == f"{SE}/1"
    store.apply(service_entry("a"))
    await settle()
    clock.advance(0.4)
    await settle()
    assert running.version(SE) == f"{SE}/1"  # quiet for 0.4 s < 0.5 s
    clock.advance(0.1)
    await settle()
    assert running.version(SE) == f"{SE}/2"
    assert running.version(WE) == f"{WE}/1"  # unchanged collection: no new version
    await stop(running)


async def test_default_group_publishes_by_max_wait_under_constant_change(
    store: MemoryStore,
) -> None:
    clock = ManualClock()
    store.mark_synced()
    running = await start(store, clock)
    for step in range(4):  # a change every 0.3 s: never quiet for 0.5 s
        store.apply(service_entry(f"s{step}"))
        await settle()
        clock.advance(0.3)
        await settle()
    assert running.version(SE) == f"{SE}/2"  # published at 1.0 s (max wait)
    snapshot = running.publisher.cache.get(SE)
    assert snapshot is not None and len(snapshot.resources) == 4
    await stop(running)


async def test_encodings_are_reused_until_the_config_changes(store: MemoryStore) -> None:
    store.apply(service_entry("a"))
    store.apply(service_entry("b"))
    store.mark_synced()
    clock = ManualClock()
    running = await start(store, clock)
    first = running.publisher.cache.get(SE)
    store.apply(service_entry("b", host="new.example.com"))
    await settle()
    clock.advance(0.5)
    await settle()
    second = running.publisher.cache.get(SE)
    assert first is not None and second is not None
    assert second.resources["default/a"] is first.resources["default/a"]
    assert second.resources["default/b"] != first.resources["default/b"]
    store.delete(ConfigKey("ServiceEntry", "default", "a"))
    await settle()
    clock.advance(0.5)
    await settle()
    third = running.publisher.cache.get(SE)
    assert third is not None and list(third.resources) == ["default/b"]
    await stop(running)
