"""Collection snapshots: the immutable state of one collection that a source serves.

A :class:`CollectionSnapshot` is what a source session compares and sends; a
:class:`SnapshotCache` holds the latest one per collection and tells watchers (one per
stream) when one changes. Publishing content equal to the current snapshot changes nothing:
the version moves only when the collection does, as ``"<collection>/<generation>"``
(Galley's spelling).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pilothouse.mcp.messages import EncodedResource

log = logging.getLogger("pilothouse.mcp")

_NO_RESOURCES: Mapping[str, EncodedResource] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CollectionSnapshot:
    """One collection at one version: resources by ``metadata.name``."""

    collection: str
    version: str
    resources: Mapping[str, EncodedResource] = field(default_factory=lambda: _NO_RESOURCES)

    def __post_init__(self) -> None:
        if not self.version:
            raise ValueError("a snapshot needs a non-empty version")
        if not isinstance(self.resources, MappingProxyType):
            object.__setattr__(self, "resources", MappingProxyType(dict(self.resources)))

    @classmethod
    def of(
        cls, collection: str, version: str, resources: Iterable[EncodedResource]
    ) -> CollectionSnapshot:
        return cls(collection, version, MappingProxyType({r.name: r for r in resources}))

    @property
    def versions(self) -> Mapping[str, str]:
        """name → ``metadata.version``."""
        return {name: r.version for name, r in self.resources.items()}

    def same_content(self, other: CollectionSnapshot) -> bool:
        return self.collection == other.collection and self.versions == other.versions


SnapshotWatcher = Callable[[CollectionSnapshot], None]


class SnapshotCache:
    """The latest snapshot per collection; single-threaded (the event loop)."""

    def __init__(self) -> None:
        self._snapshots: dict[str, CollectionSnapshot] = {}
        self._generations: dict[str, int] = {}
        self._watchers: list[SnapshotWatcher] = []

    def get(self, collection: str) -> CollectionSnapshot | None:
        return self._snapshots.get(collection)

    def snapshots(self) -> dict[str, CollectionSnapshot]:
        return dict(self._snapshots)

    def publish(self, collection: str, resources: Iterable[EncodedResource]) -> bool:
        """Make ``resources`` the state of ``collection``; True if that changed anything."""
        items = MappingProxyType({r.name: r for r in resources})
        current = self._snapshots.get(collection)
        if current is not None and {n: r.version for n, r in items.items()} == current.versions:
            return False
        generation = self._generations.get(collection, 0) + 1
        self._generations[collection] = generation
        snapshot = CollectionSnapshot(collection, f"{collection}/{generation}", items)
        self._snapshots[collection] = snapshot
        for watcher in list(self._watchers):
            try:
                watcher(snapshot)
            except Exception:
                log.exception("snapshot watcher failed for %s", collection)
        return True

    def watch(self, watcher: SnapshotWatcher) -> Callable[[], None]:
        self._watchers.append(watcher)

        def unwatch() -> None:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

        return unwatch
