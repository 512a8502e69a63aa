"""Equal sets of requested resource names, kept once for every stream of a server.

The proxies of one scope request the same names (Envoy asks for the assignment of each
of its EDS clusters, a hundred at a hundred services), and each SotW stream keeps the
names of its subscription for as long as it lives: a set of a hundred names is about
4 KB, the same set per stream. :class:`NameSets` hands out one set for all the equal
ones, so a stream's subscription holds the shared set. A lookup is a hash (a frozenset
keeps its own) and, when found, one comparison; it is made when a request names other
names than the last one, never on an ACK repeating them or on a push.

A request whose names come with a fingerprint (taken from its bytes:
:func:`pilothouse.protocol.request_bytes.names_fingerprint`) finds the subscription
another stream made of the same names by that fingerprint
(:meth:`NameSets.subscription`), without reading the names: a thousand proxies
connecting each name the same hundred EDS clusters, and reading them (a string per
name, interned, then a set) was a tenth of a connection's own Python.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from pilothouse.protocol.subscriptions import Subscription

KEPT_SETS: Final = 4096
"""Distinct name sets remembered at most; the least recently used go first."""


class NameSets:
    """The name sets streams subscribe with, one object per distinct set."""

    __slots__ = ("_kept", "_made", "_sets")

    def __init__(self, kept: int = KEPT_SETS) -> None:
        self._kept = kept
        self._sets: OrderedDict[frozenset[str], frozenset[str]] = OrderedDict()
        self._made: OrderedDict[tuple[str, int, bool], Subscription] = OrderedDict()
        """(type URL, names' fingerprint, named before) → the subscription they made."""

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

    def subscription(
        self, type_url: str, fingerprint: int, named_before: bool
    ) -> Subscription | None:
        """The subscription a request of ``type_url`` whose names have ``fingerprint``
        made on a stream (that had, or had not, ``named_before``); None if none yet."""
        made = self._made
        key = (type_url, fingerprint, named_before)
        found = made.get(key)
        if found is not None:
            made.move_to_end(key)
        return found

    def made(
        self, type_url: str, fingerprint: int, named_before: bool, subscription: Subscription
    ) -> None:
        """Remember what names with ``fingerprint`` made (see :meth:`subscription`)."""
        made = self._made
        made[(type_url, fingerprint, named_before)] = subscription
        if len(made) > self._kept:
            made.popitem(last=False)
