"""Equal sets of requested resource names, kept once for every stream of a server.

The proxies of one scope request the same names (Envoy asks for the assignment of each
of its EDS clusters, a hundred at a hundred services), and each SotW stream keeps the
names of its subscription for as long as it lives: a set of a hundred names is about
4 KB, the same set per stream. :class:`NameSets` hands out one set for all the equal
ones, so a stream's subscription holds the shared set. A lookup is a hash (a frozenset
keeps its own) and, when found, one comparison; it is made when a request names other
names than the last one, never on an ACK repeating them or on a push.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

KEPT_SETS: Final = 4096
"""Distinct name sets remembered at most; the least recently used go first."""


class NameSets:
    """The name sets streams subscribe with, one object per distinct set."""

    __slots__ = ("_kept", "_sets")

    def __init__(self, kept: int = KEPT_SETS) -> None:
        self._kept = kept
        self._sets: OrderedDict[frozenset[str], frozenset[str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sets)

    def shared(self, names: frozenset[str]) -> frozenset[str]:
        """The set equal to ``names`` that other streams hold (``names`` itself when it
        is the first of its kind)."""
        sets = self._sets
        found = sets.get(names)
        if found is not None:
            sets.move_to_end(names)
            return found
        sets[names] = names
        if len(sets) > self._kept:
            sets.popitem(last=False)
        return names
