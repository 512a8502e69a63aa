"""The aggregate store: a read-only union of several sources, each source's objects isolated.

Sources are ordered as configured (``configSources`` order, or the order given on the
command line). **When two sources hold the same key, the earlier source wins**; the
later copy is shadowed, listed by :meth:`AggregateStore.conflicts`, and logged once.
If the winner later deletes the object, the shadowed copy becomes visible (an UPDATE
event if it differs, nothing if it is identical). A source that reports a new resource
version alone for its visible object (``MemoryStore.apply(compare_version=True)``) is
forwarded as an UPDATE, so that the version served stays the source's. Subscribers see
only visible changes: an edit to a shadowed copy produces no event.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pilothouse.config.model import Config, ConfigKey
from pilothouse.sources.events import (
    ConfigEvent,
    ConfigStore,
    EventType,
    Handler,
    Unsubscribe,
)

log = logging.getLogger("pilothouse.sources")


class AggregateStore:
    """Union of ``stores``; earlier stores shadow later ones on the same key."""

    def __init__(self, stores: Sequence[ConfigStore], name: str = "aggregate") -> None:
        self._name = name
        self._stores = tuple(stores)
        self._handlers: tuple[Handler, ...] = ()
        """Replaced, never changed in place: an event walks the tuple it started with."""
        self._revision = 0
        self._reported: set[ConfigKey] = set()
        self._unsubscribes = [
            store.subscribe(self._on_event_from(index)) for index, store in enumerate(self._stores)
        ]

    @property
    def name(self) -> str:
        return self._name

    @property
    def stores(self) -> tuple[ConfigStore, ...]:
        return self._stores

    @property
    def revision(self) -> int:
        return self._revision

    def get(self, key: ConfigKey) -> Config | None:
        for store in self._stores:
            config = store.get(key)
            if config is not None:
                return config
        return None

    def configs(self, kind: str, namespace: str | None = None) -> list[Config]:
        seen: dict[ConfigKey, Config] = {}
        for store in self._stores:
            for config in store.configs(kind, namespace):
                seen.setdefault(config.key, config)
        return [seen[k] for k in sorted(seen)]

    def keys(self) -> list[ConfigKey]:
        return sorted({key for store in self._stores for key in store.keys()})

    def conflicts(self) -> dict[ConfigKey, list[str]]:
        """Keys held by more than one source, with the sources in precedence order."""
        holders: dict[ConfigKey, list[str]] = {}
        for store in self._stores:
            for key in store.keys():
                holders.setdefault(key, []).append(store.name)
        return {k: v for k, v in holders.items() if len(v) > 1}

    def subscribe(self, handler: Handler) -> Unsubscribe:
        self._handlers = (*self._handlers, handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                held = list(self._handlers)
                held.remove(handler)
                self._handlers = tuple(held)

        return unsubscribe

    def has_synced(self) -> bool:
        return all(store.has_synced() for store in self._stores)

    def close(self) -> None:
        for unsubscribe in self._unsubscribes:
            unsubscribe()
        self._unsubscribes = []

    def _owner(self, key: ConfigKey) -> int | None:
        for index, store in enumerate(self._stores):
            if store.get(key) is not None:
                return index
        return None

    def _on_event_from(self, index: int) -> Handler:
        earlier = self._stores[:index]
        later = self._stores[index + 1 :]

        def handle(event: ConfigEvent) -> None:
            self._forward(earlier, later, event)

        return handle

    def _forward(
        self, earlier: tuple[ConfigStore, ...], later: tuple[ConfigStore, ...], event: ConfigEvent
    ) -> None:
        """Forward ``event`` from the source between the ``earlier`` and ``later`` ones."""
        key = event.key
        # What was visible before this change: an earlier source's copy, or this
        # source's old copy if this source was the owner, or a later source's copy.
        # (Plain loops: with one source, the common case, neither runs at all.)
        for store in earlier:
            if store.get(key) is not None:
                self._report_conflict(key)
                return  # shadowed: nothing visible changes
        behind: Config | None = None
        for store in later:
            behind = store.get(key)
            if behind is not None:
                break
        before = event.old if event.old is not None else behind
        after = event.new if event.new is not None else behind
        if behind is not None and event.new is not None:
            self._report_conflict(key)
        if before is None and after is None:
            return
        if (
            before is not None
            and after is not None
            and before.same_content(after)
            and not _new_version(event, before, after)
        ):
            return
        self._revision += 1
        if before is None:
            kind = EventType.ADD
        elif after is None:
            kind = EventType.DELETE
        else:
            kind = EventType.UPDATE
        forwarded = ConfigEvent(kind, key, before, after, self._revision)
        for handler in self._handlers:
            try:
                handler(forwarded)
            except Exception:
                log.exception("config event handler failed", extra={"store": self._name})

    def _report_conflict(self, key: ConfigKey) -> None:
        if key in self._reported:
            return
        self._reported.add(key)
        holders = [s.name for s in self._stores if s.get(key) is not None]
        if len(holders) > 1:
            log.warning(
                "%s is defined by several sources; %s wins, %s shadowed",
                key,
                holders[0],
                ", ".join(holders[1:]),
            )


def _new_version(event: ConfigEvent, before: Config, after: Config) -> bool:
    """A visible object that changed only its resource version in its own source (a
    source whose versions are its store's, as etcd's mod revisions): still a change."""
    return (
        event.old is before
        and event.new is after
        and before.resource_version != after.resource_version
    )
