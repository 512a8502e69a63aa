"""An in-memory config store indexed by kind, namespace and name, with a revision counter.

Every source keeps its objects in one of these. Writes that change nothing (same labels,
annotations and spec) are no-ops: no event, no new revision, so reloading an unchanged
file or re-receiving the same upstream state pushes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable

from pilothouse.config.model import Config, ConfigKey
from pilothouse.sources.events import ConfigEvent, EventType, Handler, Unsubscribe

log = logging.getLogger("pilothouse.sources")


class MemoryStore:
    """Configs by kind → namespace → name. Single-threaded: call it from the event loop."""

    def __init__(self, name: str = "memory") -> None:
        self._name = name
        self._by_kind: dict[str, dict[tuple[str, str], Config]] = {}
        self._handlers: tuple[Handler, ...] = ()
        """Replaced, never changed in place: an event walks the tuple it started with."""
        self._revision = 0
        self._synced = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def revision(self) -> int:
        return self._revision

    def __len__(self) -> int:
        return sum(len(objects) for objects in self._by_kind.values())

    def get(self, key: ConfigKey) -> Config | None:
        return self._by_kind.get(key.kind, {}).get((key.namespace, key.name))

    def configs(self, kind: str, namespace: str | None = None) -> list[Config]:
        objects = self._by_kind.get(kind, {})
        if namespace is None:
            return [objects[k] for k in sorted(objects)]
        return [objects[k] for k in sorted(objects) if k[0] == namespace]

    def keys(self) -> list[ConfigKey]:
        return sorted(
            ConfigKey(kind, ns, name)
            for kind, objects in self._by_kind.items()
            for ns, name in objects
        )

    def subscribe(self, handler: Handler) -> Unsubscribe:
        self._handlers = (*self._handlers, handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                held = list(self._handlers)
                held.remove(handler)
                self._handlers = tuple(held)

        return unsubscribe

    def has_synced(self) -> bool:
        return self._synced

    def mark_synced(self) -> None:
        self._synced = True

    def apply(self, config: Config, *, compare_version: bool = False) -> ConfigEvent | None:
        """Add or update ``config``; returns the event, or None when nothing changed.

        With ``compare_version`` a new resource version alone is a change (a source whose
        versions come from its store, as etcd's mod revisions, keeps them exact)."""
        objects = self._by_kind.setdefault(config.kind, {})
        slot = (config.namespace, config.name)
        old = objects.get(slot)
        if (
            old is not None
            and old.same_content(config)
            and not (compare_version and old.resource_version != config.resource_version)
        ):
            return None
        self._revision += 1
        if not config.resource_version:
            config = dataclasses.replace(config, resource_version=str(self._revision))
        objects[slot] = config
        kind = EventType.ADD if old is None else EventType.UPDATE
        return self._emit(ConfigEvent(kind, config.key, old, config, self._revision))

    def delete(self, key: ConfigKey) -> ConfigEvent | None:
        objects = self._by_kind.get(key.kind)
        if objects is None:
            return None
        old = objects.pop((key.namespace, key.name), None)
        if old is None:
            return None
        if not objects:
            del self._by_kind[key.kind]
        self._revision += 1
        return self._emit(ConfigEvent(EventType.DELETE, key, old, None, self._revision))

    def replace_kind(self, kind: str, configs: Iterable[Config]) -> list[ConfigEvent]:
        """Make ``configs`` the full state of ``kind``: apply each, delete what is missing."""
        events: list[ConfigEvent] = []
        wanted: set[ConfigKey] = set()
        for config in configs:
            if config.kind != kind:
                raise ValueError(f"replace_kind({kind}) got a {config.kind}")
            wanted.add(config.key)
            event = self.apply(config)
            if event is not None:
                events.append(event)
        held = self._by_kind.get(kind, {})
        for namespace, name in sorted(k for k in held if ConfigKey(kind, *k) not in wanted):
            event = self.delete(ConfigKey(kind, namespace, name))
            if event is not None:
                events.append(event)
        return events

    def _emit(self, event: ConfigEvent) -> ConfigEvent:
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:
                log.exception("config event handler failed", extra={"store": self._name})
        return event
