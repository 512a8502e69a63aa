"""The resource cache: hits, misses, dependency invalidation and the LRU bound.

An entry's dependencies are the config keys its key holds (pilothouse.push.inputs).
"""

from __future__ import annotations

import pytest

from pilothouse.config.model import ConfigKey
from pilothouse.push.cache import Resource, ResourceCache

A = ConfigKey("DestinationRule", "ns", "a")
B = ConfigKey("Service", "ns", "b.ns.svc.cluster.local")


def res(name: str) -> Resource:
    return Resource(name, f"v-{name}", name.encode())


def test_hit_miss_and_invalidate_by_dependency() -> None:
    cache = ResourceCache()
    cache.put(("k", 1, A), res("one"))
    cache.put(("k", 2, (A, B)), res("two"))
    cache.put(("k", 3, B), res("three"))
    assert cache.get(("k", 1, A)) == res("one")
    assert cache.get(("k", 9)) is None
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)
    assert cache.invalidate([A]) == 2
    assert cache.get(("k", 1, A)) is None and cache.get(("k", 2, (A, B))) is None
    assert cache.get(("k", 3, B)) == res("three")
    assert cache.invalidate([A]) == 0 and len(cache) == 1


def test_lru_bound_evicts_least_recently_used() -> None:
    cache = ResourceCache(max_entries=2)
    cache.put((1, A), res("a"))
    cache.put(2, res("b"))
    cache.get((1, A))
    cache.put(3, res("c"))
    assert cache.get(2) is None and cache.get((1, A)) is not None and cache.get(3) is not None
    assert cache.stats.evictions == 1
    cache.invalidate([A])
    assert len(cache) == 1


def test_replacing_an_entry_keeps_one_registration() -> None:
    cache = ResourceCache()
    cache.put((1, A), res("a"))
    cache.put((1, A), res("a2"))
    assert cache.get((1, A)) == res("a2")
    assert cache.invalidate([B]) == 0
    assert cache.invalidate([A]) == 1
    assert len(cache) == 0


def test_a_derived_value_is_built_once_none_included_and_evicted_like_a_resource() -> None:
    cache = ResourceCache()
    builds: list[str] = []

    def build(what: str | None) -> str | None:
        builds.append(str(what))
        return what

    assert cache.value(("template", A), lambda: build("t")) == "t"
    assert cache.value(("template", A), lambda: build("other")) == "t"
    assert cache.value(("nothing", B), lambda: build(None)) is None
    assert cache.value(("nothing", B), lambda: build("late")) is None
    assert builds == ["t", "None"]
    assert (cache.stats.hits, cache.stats.misses) == (2, 2)
    assert cache.invalidate([A]) == 1
    assert cache.value(("template", A), lambda: build("t2")) == "t2"
    with pytest.raises(TypeError, match="holds a str, not a resource"):
        cache.get(("template", A))


class _Probe:
    """A key equal to any other of the same name: counts how often it is compared."""

    compared = 0

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        _Probe.compared += 1
        return isinstance(other, _Probe) and other.name == self.name


def test_a_hit_compares_the_callers_key_once_and_refreshes_the_stored_one() -> None:
    cache = ResourceCache(max_entries=2)
    stored = _Probe("a")
    cache.resource(stored, lambda _: res("a"))
    cache.put(2, res("b"))
    _Probe.compared = 0
    assert cache.resource(_Probe("a"), lambda _: res("other")) == res("a")
    assert _Probe.compared == 1  # the lookup; the LRU moves the stored key by identity
    cache.put(3, res("c"))  # evicts 2, the least recently used
    assert cache.get(2) is None and cache.get(stored) == res("a")


def test_a_replaced_entry_is_not_evicted_twice_by_its_old_registration() -> None:
    cache = ResourceCache()
    cache.put((1, A), res("a"))
    cache.put((1, A), res("a2"))  # the first registration under A is dropped with its entry
    cache.put((2, A, B), res("b"))
    assert cache.invalidate([A]) == 2
    assert len(cache) == 0 and cache.invalidate([B]) == 0
