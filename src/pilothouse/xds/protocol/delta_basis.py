"""Which names a full push must compare on a delta stream, without a walk over them all.

A delta response carries what the client does not hold at the current version, and the
names it holds that are gone. Compared name by name, that is a walk over every resource
of the type per stream on every push. But after a response planned over the whole type
(a full push, or the answer to a request), what the client holds of the names it
subscribes to is, name for name, the generated mapping the plan was made from: the
scope's, shared by its streams. :class:`DeltaBasis` keeps that mapping (the stream's
*basis*) while the watch's subscription stays the same object and no rejected response
holds anything back. The next full push then compares only the names in which the
push's mapping differs from the basis (worked out once for every stream that holds the
same basis, :meth:`SharedContents.difference`: changed, added, removed), which is
proportional to what changed.

The names other responses of the type send (an endpoint push of a few assignments, a
refresh) are noted as sent *since* the basis and compared one by one, until a full push
sets the basis again; once they are more than half the basis, the basis is dropped.
A NACK (which rolls the client's holdings back), a subscription change or a rejected
unit drops it too, and the next full push compares every name once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from pilothouse.protocol.subscriptions import Subscription
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.delta_watch import DeltaWatch
from pilothouse.xds.protocol.shared_content import SharedContents

SINCE_FLOOR = 64
"""Names noted since the basis that are always allowed, however small the basis."""


class ResourceVersions(Mapping[str, str]):
    """Name → version of a generated mapping, read name by name (a plan over a few names
    of a large mapping reads only those)."""

    __slots__ = ("_resources",)

    def __init__(self, resources: Mapping[str, Resource]) -> None:
        self._resources = resources

    def __getitem__(self, name: str) -> str:
        return self._resources[name].version

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        resource = self._resources.get(name)
        return default if resource is None else resource.version

    def __contains__(self, name: object) -> bool:
        return name in self._resources

    def __iter__(self) -> Iterator[str]:
        return iter(self._resources)

    def __len__(self) -> int:
        return len(self._resources)


class DeltaBasis:
    """The generated mapping a delta stream's holdings of one type agree with, name for
    name (but for the names sent since)."""

    __slots__ = ("_resources", "_since", "_subscription")

    def __init__(self) -> None:
        self._subscription: Subscription | None = None
        self._resources: Mapping[str, Resource] | None = None
        self._since: set[str] = set()

    def candidates(
        self, watch: DeltaWatch, current: Mapping[str, Resource], contents: SharedContents
    ) -> frozenset[str] | None:
        """The names a push of ``current`` must compare with what the client holds (every
        other name it holds as ``current`` has it); None when that is not known (compare
        them all)."""
        basis = self._resources
        if basis is None or self._subscription is not watch.subscription or watch.rejected:
            return None
        changed, added, removed = contents.difference(basis, current)
        found = changed | added | removed if added or removed else changed
        since = self._since
        return found | since if since else found

    def rebase(self, subscription: Subscription, resources: Mapping[str, Resource]) -> None:
        """The client now holds, of the names ``subscription`` covers, exactly
        ``resources`` (a mapping never changed afterwards)."""
        self._subscription, self._resources = subscription, resources
        if self._since:
            self._since = set()

    def sent(self, names: Iterable[str]) -> None:
        """A response of a few names went out (their versions are the watch's to say)."""
        basis = self._resources
        if basis is None:
            return
        since = self._since
        since.update(names)
        if 2 * len(since) > max(len(basis), SINCE_FLOOR):
            self.drop()

    def drop(self) -> None:
        """What the client holds is no longer known from a mapping: compare every name."""
        self._subscription = self._resources = None
        self._since = set()
