"""What a shared SotW response holds, summarised once for every stream it goes to.

A push generates one mapping of resources per scope (name → :class:`Resource`, the
very same object for every proxy of the scope) and sends it to each of the scope's
streams. What a stream needs to deliver it depends only on that mapping: the content
it records as sent (name → version), the bodies in name order that the response
frames, and a digest saying whether two contents are equal. :class:`SharedContents`
works that out once per mapping (found again by identity) and every stream reads the
same :class:`SotwContent`: delivering a shared response to one more stream is a digest
comparison and a hand-off of shared bytes, with no walk over its resources.

A mapping is summarised the second time it is seen: a mapping made for one stream
alone (a proxy's own routes) is delivered the way it always was, and costs no summary.
Only mappings that are never changed once made may be given (every generated mapping:
streams already keep them by reference).

How one mapping differs from an earlier one (:meth:`SharedContents.difference`: names
at another version, names added, names removed) is likewise worked out once per pair:
the streams of a scope move from the same clusters to the same clusters, and from the
same assignments to the same ones (:mod:`pilothouse.xds.protocol.endpoint_basis`, and
for delta streams :mod:`pilothouse.xds.protocol.delta_basis`). The few names of a mapping
that a full push sends its streams (the assignments found changed, taken from the very
mapping they were found in, :meth:`SharedContents.subset`) are one mapping for every
stream taking the same names, summarised once like any other.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Final, NamedTuple

from pilothouse.push.cache import Resource

KEPT_MAPPINGS: Final = 256
"""Mappings summarised, and mappings seen once, remembered at most (each): the oldest
used go first."""
KEPT_NAMES: Final = 1 << 17
"""Resource names the remembered mappings may hold in all, however few they are."""
KEPT_CHANGES: Final = 256
"""Pairs of mappings whose difference is remembered at most (the least recently used
go first)."""


class ContentVersions(dict[str, str]):
    """Name → resource version of a response's content, and a digest of it: two of
    these are equal exactly when their digests are. Never changed once made."""

    __slots__ = ("digest",)

    def __init__(self, versions: Mapping[str, str]) -> None:
        super().__init__(versions)
        names = sorted(self)
        self.digest = hashlib.blake2b(
            "\0".join([f"{name}\0{self[name]}" for name in names]).encode(), digest_size=16
        ).digest()


def same_content(first: Mapping[str, str] | None, second: Mapping[str, str]) -> bool:
    """Whether two contents (name → version) are equal; by digest when both have one."""
    if first is second:
        return True
    if first is None:
        return False
    if type(first) is ContentVersions and type(second) is ContentVersions:
        return first.digest == second.digest
    return first == second


class SotwContent:
    """One generated mapping, summarised: its content and its bodies in name order.

    Hashed and compared by identity (a key of the shared responses: one lookup, no walk).
    """

    __slots__ = ("bodies", "resources", "versions")

    def __init__(self, resources: Mapping[str, Resource]) -> None:
        self.resources = resources
        names = sorted(resources)
        self.bodies = tuple([resources[name].body for name in names])
        self.versions = ContentVersions({name: resources[name].version for name in names})

    def __len__(self) -> int:
        return len(self.bodies)


class SharedContents:
    """Summaries of the generated mappings a server's streams are sent, by identity.

    ``summaries`` counts the mappings summarised (each a walk over its resources), for
    the tests that check a delivery walks nothing.
    """

    __slots__ = (
        "_differences",
        "_entries",
        "_kept",
        "_names",
        "_names_budget",
        "_seen",
        "_subsets",
        "summaries",
    )

    def __init__(self, kept: int = KEPT_MAPPINGS, names: int = KEPT_NAMES) -> None:
        self._kept = kept
        self._names_budget = names
        self._names = 0
        self._entries: OrderedDict[int, tuple[Mapping[str, Resource], SotwContent]]
        self._entries = OrderedDict()
        """id(mapping) → the mapping (kept alive, so its id is not reused) and its
        summary."""
        self._seen: OrderedDict[int, None] = OrderedDict()
        """The ids of the mappings seen once (not summarised yet)."""
        self._differences: OrderedDict[
            tuple[int, int],
            tuple[Mapping[str, Resource], Mapping[str, Resource], Difference],
        ] = OrderedDict()
        self._subsets: OrderedDict[
            tuple[int, frozenset[str]], tuple[Mapping[str, Resource], Mapping[str, Resource]]
        ] = OrderedDict()
        self.summaries = 0

    def of(self, resources: Mapping[str, Resource]) -> SotwContent | None:
        """The summary of ``resources``; None the first time it is seen."""
        key = id(resources)
        entries = self._entries
        found = entries.get(key)
        if found is not None and found[0] is resources:
            entries.move_to_end(key)  # the most recently used goes last
            return found[1]
        seen = self._seen
        if key not in seen:
            # only its id: a mapping made for one stream is not kept alive (an id
            # reused by a later mapping only has that one summarised a sighting early)
            seen[key] = None
            if len(seen) > self._kept:
                seen.popitem(last=False)  # not next(iter()): that walks deleted slots
            return None
        del seen[key]
        content = SotwContent(resources)
        self.summaries += 1
        entries[key] = (resources, content)
        self._names += len(resources)
        while len(entries) > self._kept or (self._names > self._names_budget and entries):
            self._names -= len(entries.popitem(last=False)[1][0])
        return content

    def difference(
        self, before: Mapping[str, Resource], after: Mapping[str, Resource]
    ) -> Difference:
        """The names of ``after`` whose version differs in ``before``, those ``before``
        lacks, and those of ``before`` that ``after`` lacks: worked out once per pair of
        mappings."""
        if after is before:
            return _NO_DIFFERENCE
        key = (id(before), id(after))
        differences = self._differences
        found = differences.get(key)
        if found is not None and found[0] is before and found[1] is after:
            # the most recently used goes last: a scope's pair, read by each of its streams,
            # outlives the pairs of mappings made for one stream alone that come between
            differences.move_to_end(key)
            return found[2]
        changed: set[str] = set()
        added: set[str] = set()
        for name, resource in after.items():
            previous = before.get(name)
            if previous is None:
                added.add(name)
            elif previous.version != resource.version:
                changed.add(name)
        removed = (
            frozenset(before.keys() - after.keys())
            if len(before) > len(after) - len(added)
            else _NO_NAMES
        )  # every name of ``before`` is in ``after`` when it has no more than they share
        result = Difference(frozenset(changed), frozenset(added), removed)
        differences[key] = (before, after, result)
        if len(differences) > KEPT_CHANGES:
            differences.popitem(last=False)
        return result

    def subset(
        self, resources: Mapping[str, Resource], names: frozenset[str]
    ) -> Mapping[str, Resource]:
        """The resources of ``names`` that ``resources`` has: one mapping, never changed
        afterwards, for every caller taking the same names of the same mapping (streams
        of a scope sent the same changed assignments share it, and its summary)."""
        key = (id(resources), names)
        subsets = self._subsets
        found = subsets.get(key)
        if found is not None and found[0] is resources:
            subsets.move_to_end(key)
            return found[1]
        taken: dict[str, Resource] = {}
        for name in names:
            resource = resources.get(name)  # one read a name
            if resource is not None:
                taken[name] = resource
        subsets[key] = (resources, taken)
        if len(subsets) > KEPT_CHANGES:
            subsets.popitem(last=False)
        return taken


class Difference(NamedTuple):
    """How one generated mapping differs from an earlier one, for the names it has."""

    changed: frozenset[str]
    """Names in both, at another version."""
    added: frozenset[str]
    """Names the earlier one lacks."""
    removed: frozenset[str]
    """Names the later one lacks."""


_NO_NAMES: Final[frozenset[str]] = frozenset()
_NO_DIFFERENCE: Final = Difference(_NO_NAMES, _NO_NAMES, _NO_NAMES)
