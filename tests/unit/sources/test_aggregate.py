"""The aggregate store: union of sources, earlier source wins, only visible changes emitted."""

from __future__ import annotations

from pilothouse.config.model import ConfigKey
from pilothouse.sources.aggregate import AggregateStore
from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.sources.memory import MemoryStore
from tests.unit.sources.configs import make_gateway

KEY = ConfigKey("Gateway", "default", "g")


def _setup() -> tuple[MemoryStore, MemoryStore, AggregateStore, list[ConfigEvent]]:
    first, second = MemoryStore("first"), MemoryStore("second")
    aggregate = AggregateStore([first, second])
    events: list[ConfigEvent] = []
    aggregate.subscribe(events.append)
    return first, second, aggregate, events


def test_union_and_isolation() -> None:
    first, second, aggregate, events = _setup()
    first.apply(make_gateway("a"))
    second.apply(make_gateway("b"))
    assert [c.name for c in aggregate.configs("Gateway")] == ["a", "b"]
    assert [e.key.name for e in events] == ["a", "b"]
    assert first.get(ConfigKey("Gateway", "default", "b")) is None


def test_earlier_source_wins_and_shadow_changes_are_silent() -> None:
    first, second, aggregate, events = _setup()
    second.apply(make_gateway("g", port=2, source="second"))
    first.apply(make_gateway("g", port=1, source="first"))
    current = aggregate.get(KEY)
    assert current is not None and current.origin.source == "first"
    assert [e.type for e in events] == [EventType.ADD, EventType.UPDATE]
    second.apply(make_gateway("g", port=3, source="second"))  # shadowed edit
    assert len(events) == 2
    assert aggregate.conflicts() == {KEY: ["first", "second"]}


def test_deleting_the_winner_reveals_the_shadowed_copy() -> None:
    first, second, aggregate, events = _setup()
    first.apply(make_gateway("g", port=1))
    second.apply(make_gateway("g", port=2))
    first.delete(KEY)
    assert events[-1].type is EventType.UPDATE
    revealed = aggregate.get(KEY)
    assert revealed is not None and revealed.spec.servers[0].port.number == 2  # type: ignore[attr-defined]
    second.delete(KEY)
    assert events[-1].type is EventType.DELETE and aggregate.get(KEY) is None


def test_identical_copies_produce_no_event_on_takeover() -> None:
    first, second, _aggregate, events = _setup()
    first.apply(make_gateway("g"))
    second.apply(make_gateway("g"))
    first.delete(KEY)
    assert [e.type for e in events] == [EventType.ADD]


def test_synced_only_when_every_source_is() -> None:
    first, second, aggregate, _ = _setup()
    first.mark_synced()
    assert not aggregate.has_synced()
    second.mark_synced()
    assert aggregate.has_synced()


def test_a_new_version_alone_is_forwarded_when_the_source_says_so() -> None:
    import dataclasses

    store = MemoryStore("etcd")
    aggregate = AggregateStore([store])
    seen: list[ConfigEvent] = []
    aggregate.subscribe(seen.append)
    first = dataclasses.replace(make_gateway("g"), resource_version="5")
    store.apply(first, compare_version=True)
    again = dataclasses.replace(make_gateway("g"), resource_version="9")
    assert store.apply(again) is None  # by default a version alone is no change
    store.apply(again, compare_version=True)
    assert [(e.type, e.config.resource_version) for e in seen] == [
        (EventType.ADD, "5"),
        (EventType.UPDATE, "9"),
    ]
    current = aggregate.get(ConfigKey("Gateway", "default", "g"))
    assert current is not None and current.resource_version == "9"
    assert store.apply(again, compare_version=True) is None  # same version: nothing
