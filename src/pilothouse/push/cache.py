"""The resource cache: each generated resource encoded once, sent many times.

An entry's key *is* its inputs: a frozen, hashable value holding everything its
builder reads (a Service, a port, a subset, the DestinationRule's revision, mesh
settings...; see :mod:`pilothouse.push.inputs`). Equal inputs therefore always mean
equal output, and the cache can never serve something stale. Invalidation by changed
config keys is there to free memory early: every entry records the config keys its
inputs name (derived from the inputs, never passed in), and a push evicts the entries
of the keys it changed. A size bound (LRU) keeps memory flat whatever happens.

:meth:`ResourceCache.resource` and :meth:`ResourceCache.group` are how builders use
it: the inputs value, and a builder that takes that value and nothing else.

Most entries are single resources. A :class:`ResourceGroup` is an entry for resources
that are only known together (a scope's outbound listeners: which ones exist is found
out by building them), with the few facts about them its generator needs later.
:meth:`ResourceCache.value` keeps anything else a builder derives from an inputs value
alone (an inbound listener's address template, a workload's inbound ports, the answer to
a set of watched EDS names, which access policies apply to a workload), under the same
rules, so that it outlives the PushContext it was first built for: generators keep no
memo of their own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from pilothouse.config.model import ConfigKey
from pilothouse.push.inputs import InputKey, dependencies
from pilothouse.settings import XdsSettings

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "CacheStats",
    "InputKey",
    "Resource",
    "ResourceCache",
    "ResourceGroup",
]

Inputs = TypeVar("Inputs", bound=Hashable)
Value = TypeVar("Value")

DEFAULT_MAX_ENTRIES = XdsSettings.cache_size


class Slot:
    """Where one entry is registered under each config key its inputs name.

    Compared and hashed by identity: registering an entry under a scope's thousand
    config keys hashes a pointer a thousand times, not the inputs value. It holds the
    inputs value the entry is stored under, so a hit refreshes the entry's place in the
    LRU by that very value (found by identity, not compared with the caller's again).
    """

    __slots__ = ("key",)

    def __init__(self, key: Hashable) -> None:
        self.key = key


Entry = tuple[object, frozenset[ConfigKey], Slot]
"""A cache entry: what was built, the config keys its inputs name, and its slot."""


@dataclass(frozen=True, slots=True)
class Resource:
    """One generated resource: its name, content hash (the version) and ``Any`` bytes."""

    name: str
    version: str
    body: bytes


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """Resources built together and cached as one entry, and what their builder noted."""

    resources: tuple[Resource, ...]
    notes: frozenset[Hashable] = frozenset()
    _named: Mapping[str, Resource] | None = field(default=None, compare=False, repr=False)

    def named(self) -> Mapping[str, Resource]:
        """The resources by name (made once per group: every proxy that shares the group
        shares the mapping; nobody may change it)."""
        found = self._named
        if found is None:
            found = {resource.name: resource for resource in self.resources}
            object.__setattr__(self, "_named", found)
        return found


@dataclass(slots=True)
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    invalidations: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class ResourceCache:
    """Resources by input key, with dependency-based eviction and an LRU bound."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._dependents: dict[ConfigKey, set[Slot]] = {}
        self._max = max_entries
        self._compared: dict[type, tuple[str, ...]] = {}
        """Each inputs class's compared fields, for deriving dependencies."""
        self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Resource | None:
        found = self._lookup(key)
        if found is None or isinstance(found, Resource):
            return found
        raise TypeError(f"cache key {key!r} holds a {type(found).__name__}, not a resource")

    def get_group(self, key: Hashable) -> ResourceGroup | None:
        found = self._lookup(key)
        if found is None or isinstance(found, ResourceGroup):
            return found
        raise TypeError(f"cache key {key!r} holds a {type(found).__name__}, not a group")

    def put(self, key: Hashable, resource: Resource) -> None:
        self._store(key, resource, dependencies(key, self._compared))

    def put_group(self, key: Hashable, group: ResourceGroup) -> None:
        self._store(key, group, dependencies(key, self._compared))

    def resource(self, inputs: Inputs, build: Callable[[Inputs], Resource]) -> Resource:
        """What ``build(inputs)`` gives, built once per distinct ``inputs``."""
        entry = self._entries.get(inputs)
        if entry is not None:  # a hit, as in _entry (inlined: most lookups hit)
            self._entries.move_to_end(entry[2].key)
            self.stats.hits += 1
            found = entry[0]
            if isinstance(found, Resource):
                return found
            raise TypeError(f"cache key {inputs!r} holds a {type(found).__name__}, not a resource")
        self.stats.misses += 1
        made = build(inputs)
        self._store(inputs, made, dependencies(inputs, self._compared))
        return made

    def group(self, inputs: Inputs, build: Callable[[Inputs], ResourceGroup]) -> ResourceGroup:
        """What ``build(inputs)`` gives, built once per distinct ``inputs``."""
        entry = self._entries.get(inputs)
        if entry is not None:  # a hit, as in _entry (inlined: most lookups hit)
            self._entries.move_to_end(entry[2].key)
            self.stats.hits += 1
            found = entry[0]
            if isinstance(found, ResourceGroup):
                return found
            raise TypeError(f"cache key {inputs!r} holds a {type(found).__name__}, not a group")
        self.stats.misses += 1
        made = build(inputs)
        self._store(inputs, made, dependencies(inputs, self._compared))
        return made

    def value(self, inputs: Hashable, build: Callable[[], Value]) -> Value:
        """What ``build()`` derives from ``inputs`` alone (an immutable value, None
        included), built once per distinct ``inputs`` and evicted like a resource. Keys
        must not collide with resource keys: use an inputs class of its own (or a tuple
        starting with one)."""
        entry = self._entries.get(inputs)
        if entry is not None:  # a hit, as in _entry (inlined: most lookups hit)
            self._entries.move_to_end(entry[2].key)
            self.stats.hits += 1
            return entry[0]  # type: ignore[return-value]
        self.stats.misses += 1
        made = build()
        self._store(inputs, made, dependencies(inputs, self._compared))
        return made

    def _lookup(self, key: Hashable) -> object:
        entry = self._entry(key)
        return None if entry is None else entry[0]

    def _entry(self, key: Hashable) -> Entry | None:
        """The entry under ``key`` (a hit moves it to the LRU's fresh end), counted."""
        entry = self._entries.get(key)
        if entry is None:
            self.stats.misses += 1
            return None
        self._entries.move_to_end(entry[2].key)
        self.stats.hits += 1
        return entry

    def _store(self, key: Hashable, resource: object, depends_on: frozenset[ConfigKey]) -> None:
        if key in self._entries:
            self._forget(key)
        slot = Slot(key)
        self._entries[key] = (resource, depends_on, slot)
        for dependency in depends_on:
            self._dependents.setdefault(dependency, set()).add(slot)
        while len(self._entries) > self._max:
            oldest = next(iter(self._entries))
            self._forget(oldest)
            self.stats.evictions += 1

    def invalidate(self, keys: Iterable[ConfigKey]) -> int:
        """Evict every entry built from any of ``keys``; returns how many."""
        evicted = 0
        entries = self._entries
        for config_key in keys:
            for slot in self._dependents.pop(config_key, ()):
                entry = entries.get(slot.key)
                if entry is not None and entry[2] is slot:
                    self._forget(slot.key)
                    evicted += 1
        self.stats.invalidations += evicted
        return evicted

    def clear(self) -> None:
        self._entries.clear()
        self._dependents.clear()

    def _forget(self, key: Hashable) -> None:
        _resource, depends_on, slot = self._entries.pop(key)
        for dependency in depends_on:
            dependents = self._dependents.get(dependency)
            if dependents is not None:
                dependents.discard(slot)
                if not dependents:
                    del self._dependents[dependency]
