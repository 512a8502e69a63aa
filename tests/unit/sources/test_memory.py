"""The memory store: index, revisions, events, and no-op writes."""

from __future__ import annotations

from pilothouse.config.model import ConfigKey
from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.sources.memory import MemoryStore
from tests.unit.sources.configs import make_gateway


def test_apply_get_list_and_events() -> None:
    store = MemoryStore("m")
    events: list[ConfigEvent] = []
    store.subscribe(events.append)
    store.apply(make_gateway("a", "ns1"))
    store.apply(make_gateway("b", "ns2"))
    assert [c.name for c in store.configs("Gateway")] == ["a", "b"]
    assert [c.name for c in store.configs("Gateway", "ns2")] == ["b"]
    assert store.get(ConfigKey("Gateway", "ns1", "a")) is not None
    assert store.get(ConfigKey("Gateway", "ns1", "b")) is None
    assert [e.type for e in events] == [EventType.ADD, EventType.ADD]
    assert store.revision == 2


def test_unchanged_write_is_a_noop_and_changes_bump_revision() -> None:
    store = MemoryStore()
    events: list[ConfigEvent] = []
    store.subscribe(events.append)
    store.apply(make_gateway("a"))
    assert store.apply(make_gateway("a")) is None
    assert store.revision == 1 and len(events) == 1
    event = store.apply(make_gateway("a", port=81))
    assert event is not None and event.type is EventType.UPDATE
    assert event.old is not None and event.new is not None
    assert event.new.resource_version == "2" and event.old.resource_version == "1"


def test_delete_and_replace_kind() -> None:
    store = MemoryStore()
    store.apply(make_gateway("a"))
    store.apply(make_gateway("b"))
    events = store.replace_kind("Gateway", [make_gateway("b", port=81), make_gateway("c")])
    assert [(e.type, e.key.name) for e in events] == [
        (EventType.UPDATE, "b"),
        (EventType.ADD, "c"),
        (EventType.DELETE, "a"),
    ]
    assert store.delete(ConfigKey("Gateway", "default", "zzz")) is None
    assert store.keys() == [
        ConfigKey("Gateway", "default", "b"),
        ConfigKey("Gateway", "default", "c"),
    ]


def test_unsubscribe_and_failing_handler_do_not_break_the_store() -> None:
    store = MemoryStore()
    seen: list[ConfigEvent] = []

    def broken(_event: ConfigEvent) -> None:
        raise RuntimeError("boom")

    store.subscribe(broken)
    stop = store.subscribe(seen.append)
    store.apply(make_gateway("a"))
    stop()
    store.apply(make_gateway("b"))
    assert len(seen) == 1 and len(store) == 2
