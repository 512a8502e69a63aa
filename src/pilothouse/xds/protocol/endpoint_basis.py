"""Which assignments a full push must send a SotW stream, without a walk over them all.

A full push that can move endpoints sends each stream the assignments whose version
differs from the one it was last sent. Compared name by name, that is a walk over every
watched assignment per stream. But a stream's sent versions usually agree, name for
name, with one generated mapping (the scope's, shared by its streams): the last one it
was sent whole, or the last one a push brought it up to. :class:`EndpointBasis` keeps
that mapping (its *basis*) while the subscription stays the same object, and the
difference between the basis and the push's mapping is worked out once for every stream
that holds the same basis (:meth:`SharedContents.difference`). Per stream, only the names
the basis lacks are compared, which is proportional to what changed.

The names other responses of the type send (an endpoint push of a few names, lingering
ones) are noted as sent *since* the basis and compared one by one, until a full push
sets the basis again; once they are more than half the basis, or the subscription
changes, the basis is dropped and the next full push compares name by name once.
"""

from __future__ import annotations

from collections.abc import Mapping

from pilothouse.protocol.subscriptions import Subscription
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.shared_content import SharedContents
from pilothouse.xds.protocol.sotw_watch import SotwWatch


class EndpointBasis:
    """The generated mapping a stream's sent EDS versions agree with, name for name (but
    for the names sent since)."""

    __slots__ = ("_pending", "_resources", "_since", "_subscription")

    def __init__(self) -> None:
        self._subscription: Subscription | None = None
        self._resources: Mapping[str, Resource] | None = None
        self._since: set[str] = set()
        """Names sent since the basis was set: their versions are the watch's to say."""
        self._pending: tuple[frozenset[str], Mapping[str, Resource]] | None = None
        """The names :meth:`changed` last found, and the mapping they were found in."""

    def changed(
        self, watch: SotwWatch, current: Mapping[str, Resource], contents: SharedContents
    ) -> frozenset[str]:
        """The names of ``current`` (the push's assignments for the watched names) whose
        version differs from the one the stream was last sent."""
        subscription = watch.subscription
        held = watch.held_versions.get
        basis = self._resources
        if basis is not None and self._subscription is subscription:
            difference = contents.difference(basis, current)
            since = self._since
            changed = difference.changed - since if since else difference.changed
            checked = [*difference.added, *(n for n in since if n in current)]
            fresh = [n for n in checked if held(n) != current[n].version]
            if fresh:
                changed = changed | frozenset(fresh)
        else:
            changed = frozenset(n for n, r in current.items() if held(n) != r.version)
        if changed:
            self._pending = (changed, current)
        else:  # the stream holds every one as it is now
            self._rebase(subscription, current)
        return changed

    def sent(
        self,
        subscription: Subscription,
        changed: frozenset[str] | None,
        resources: Mapping[str, Resource],
        *,
        whole: bool,
    ) -> None:
        """A response of the type went out with ``resources`` (all of the generated
        mapping when ``whole``), for the ``changed`` names (None: every watched one)."""
        pending, self._pending = self._pending, None
        basis = self._resources
        if changed is None and whole:
            self._rebase(subscription, resources)
        elif pending is not None and changed is pending[0]:
            # the names :meth:`changed` found, sent: now every one is as in its mapping
            self._rebase(subscription, pending[1])
        elif (
            basis is not None
            and self._subscription is subscription
            and 2 * (len(self._since) + len(resources)) <= max(len(basis), 64)
        ):
            self._since.update(resources)
        else:
            self._subscription = self._resources = None
            self._since = set()

    def _rebase(self, subscription: Subscription, resources: Mapping[str, Resource]) -> None:
        self._subscription, self._resources, self._pending = subscription, resources, None
        if self._since:
            self._since = set()
