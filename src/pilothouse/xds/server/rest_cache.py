"""Bounded LRU maps for REST discovery's finished answers, poll versions and nodes.

REST polls repeat: a proxy posts the same body every ``refresh_delay`` until something
changes. :class:`Lru` remembers what was worked out for a key, up to a number of entries
and, when given, a total weight (bytes), so that many distinct proxies cannot grow
memory without limit: the least recently used entries go first. An entry heavier than
a sixteenth of the byte budget is not kept at all, so one huge request cannot flush
everything else.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """A map that forgets its least recently used entries beyond ``max_entries`` entries
    or ``max_bytes`` total weight (0: no weight bound)."""

    def __init__(self, max_entries: int, max_bytes: int = 0) -> None:
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def weight(self) -> int:
        """The total weight of the entries held."""
        return self._bytes

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return found[0]

    def put(self, key: K, value: V, weight: int = 0) -> None:
        """Remember ``value`` under ``key``; ``weight`` counts against ``max_bytes``."""
        if self._max_entries <= 0 or (self._max_bytes and weight * 16 > self._max_bytes):
            return
        held = self._entries.pop(key, None)
        if held is not None:
            self._bytes -= held[1]
        self._entries[key] = (value, weight)
        self._bytes += weight
        while len(self._entries) > self._max_entries or (
            self._max_bytes and self._bytes > self._max_bytes
        ):
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
