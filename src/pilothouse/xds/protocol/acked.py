"""What a proxy has acknowledged, per type: the very resources it was sent and ACKed.

The inspector (``/debug/acked``, ``pilothouse inspect``) compares what a proxy holds
with what pilothouse sent it *and* it accepted. ``AckedResources`` keeps that, per
stream and type, as references to the already-encoded :class:`Resource` objects the
responses carried (shared with every other proxy and the resource cache): recording
copies no bytes and encodes nothing.

- :meth:`AckedResources.sent` notes a response: its nonce, the resources it carried
  and the names it removed (delta), and whether it *replaces* everything before it
  (a SotW response of a full-state type: CDS, LDS) or adds to it (SotW EDS and RDS,
  whose responses may carry a few names, and every delta response).
- :meth:`AckedResources.answered` takes the client's answer to a nonce. Clients answer
  responses in order, so an ACK settles that response and every earlier one still
  waiting, and a NACK settles the earlier ones and drops the rejected one (the client
  keeps its last good config). SotW: the ACKed response's resources (with the per-name
  types' earlier ACKed ones); delta: the state after the ACKed delta. A response the
  client's subscription no longer covers is filtered when read.
- :meth:`AckedResources.seed`: a delta client that reconnects reports the versions it
  holds; those equal to the current resource (delta versions are content hashes) are
  what it holds, and were ACKed on an earlier stream.

No I/O, no clock. A full-state type keeps one response waiting (a newer one supersedes
it); a per-name type at most :data:`MAX_WAITING` (older ones are merged), so a client
that never answers cannot make the record grow without bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.subscriptions import Subscription

MAX_WAITING: Final = 16
"""Unanswered responses kept per per-name type before the oldest two are merged."""

_NOTHING: Final[Mapping[str, Resource]] = MappingProxyType({})
_NO_NAMES: Final[frozenset[str]] = frozenset()


class _Waiting(NamedTuple):
    """A response sent and not answered yet."""

    nonce: str
    resources: Mapping[str, Resource]
    removed: frozenset[str]
    replace: bool


class AckedResources:
    """Per type: the resources the client ACKed, and the responses it has not answered."""

    __slots__ = ("_held", "_owned", "_waiting")

    def __init__(self) -> None:
        self._held: dict[str, Mapping[str, Resource]] = {}
        self._owned: set[str] = set()
        """Types whose held mapping is a dict of this record's own, changed in place
        (otherwise it is a response's mapping, shared, and copied before a change)."""
        self._waiting: dict[str, list[_Waiting]] = {}

    def sent(
        self,
        type_url: str,
        nonce: str,
        resources: Mapping[str, Resource],
        removed: frozenset[str] = _NO_NAMES,
        *,
        replace: bool,
    ) -> None:
        """A response went out. ``resources`` must not change afterwards (it is kept
        by reference)."""
        entry = _Waiting(nonce, resources, removed, replace)
        waiting = self._waiting.get(type_url)
        if waiting is None or replace:
            self._waiting[type_url] = [entry]
            return
        waiting.append(entry)
        if len(waiting) > MAX_WAITING:
            waiting[0:2] = [_merged(waiting[0], waiting[1])]

    def answered(
        self, type_url: str, nonce: str, *, rejected: bool, subscription: Subscription | None
    ) -> None:
        """The client answered the response ``nonce`` (ACK, or NACK when ``rejected``);
        ``subscription`` is the one it had when it applied it (None: not watched)."""
        waiting = self._waiting.get(type_url)
        if not waiting or not nonce:
            return
        index = next((i for i, entry in enumerate(waiting) if entry.nonce == nonce), None)
        if index is None:
            return  # not one of ours (stale, or already settled)
        settled = waiting[:index] if rejected else waiting[: index + 1]
        del waiting[: index + 1]
        if settled:
            self._fold(type_url, settled, subscription)

    def seed(self, type_url: str, resources: Mapping[str, Resource]) -> None:
        """The client reports holding exactly ``resources`` (a delta reconnect)."""
        if resources:
            self._fold(type_url, [_Waiting("", resources, _NO_NAMES, False)], None)

    def held(self, type_url: str, subscription: Subscription | None) -> Mapping[str, Resource]:
        """Name → resource of everything of ``type_url`` the client ACKed and still
        subscribes to (``subscription``; None: not watched, so nothing)."""
        held = self._held.get(type_url, _NOTHING)
        if subscription is None:
            return _NOTHING
        if subscription.wildcard:
            return MappingProxyType(held) if type_url in self._owned else held
        names = subscription.names
        return {name: resource for name, resource in held.items() if name in names}

    def type_urls(self) -> frozenset[str]:
        """The types something was ever ACKed of on this stream."""
        return frozenset(self._held)

    def _fold(
        self, type_url: str, settled: Iterable[_Waiting], subscription: Subscription | None
    ) -> None:
        held = self._held.get(type_url, _NOTHING)
        owned = type_url in self._owned
        for entry in settled:
            if entry.replace:
                held, owned = entry.resources, False
                continue
            if not owned:
                held, owned = dict(held), True
            assert isinstance(held, dict)
            held.update(entry.resources)
            for name in entry.removed:
                held.pop(name, None)
        if (
            subscription is not None
            and not subscription.wildcard
            and len(held) > len(subscription.names)  # then some name is no longer covered
        ):
            names = subscription.names
            held, owned = {n: r for n, r in held.items() if n in names}, True
        self._held[type_url] = held
        if owned:
            self._owned.add(type_url)
        else:
            self._owned.discard(type_url)


def _merged(first: _Waiting, second: _Waiting) -> _Waiting:
    """Two unanswered additive responses as one, answered when the later one is."""
    resources = {n: r for n, r in first.resources.items() if n not in second.removed}
    resources.update(second.resources)
    removed = (first.removed - second.resources.keys()) | second.removed
    return _Waiting(second.nonce, resources, removed, False)
