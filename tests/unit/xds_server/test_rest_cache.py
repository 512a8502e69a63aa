"""The LRU behind REST discovery's remembered answers: bounded by entries and by bytes."""

from __future__ import annotations

from pilothouse.xds.server.rest_cache import Lru


def test_keeps_the_most_recently_used_entries() -> None:
    lru: Lru[str, int] = Lru(max_entries=2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "a" is now the most recent
    lru.put("c", 3)
    assert lru.get("b") is None
    assert lru.get("a") == 1 and lru.get("c") == 3
    assert len(lru) == 2
    assert (lru.hits, lru.misses) == (3, 1)


def test_the_byte_budget_evicts_the_oldest() -> None:
    lru: Lru[str, str] = Lru(max_entries=100, max_bytes=160)
    for name in "abcd":
        lru.put(name, name, weight=10)
    assert lru.weight == 40
    lru.put("e", "e", weight=10)  # the largest weight kept is 160 / 16 = 10
    assert lru.weight == 50
    for name in "fghijklmnopq":
        lru.put(name, name, weight=10)
    assert lru.weight <= 160 and len(lru) == 16
    assert lru.get("a") is None and lru.get("q") == "q"


def test_an_entry_heavier_than_a_sixteenth_of_the_budget_is_not_kept() -> None:
    lru: Lru[str, str] = Lru(max_entries=100, max_bytes=160)
    lru.put("small", "s", weight=1)
    lru.put("huge", "h", weight=11)
    assert lru.get("huge") is None
    assert lru.get("small") == "s" and lru.weight == 1


def test_replacing_an_entry_replaces_its_weight() -> None:
    lru: Lru[str, str] = Lru(max_entries=10, max_bytes=1600)
    lru.put("a", "old", weight=100)
    lru.put("a", "new", weight=7)
    assert lru.get("a") == "new" and lru.weight == 7 and len(lru) == 1


def test_clear_and_a_zero_bound() -> None:
    lru: Lru[str, int] = Lru(max_entries=4, max_bytes=1600)
    lru.put("a", 1, weight=5)
    lru.clear()
    assert len(lru) == 0 and lru.weight == 0 and lru.get("a") is None
    nothing: Lru[str, int] = Lru(max_entries=0)
    nothing.put("a", 1)
    assert len(nothing) == 0
