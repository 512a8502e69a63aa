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

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.subscriptions import Subscription

MAX_WAITING: Final = 16
"""Unanswered responses kept per per-name type before the oldest two are merged."""

_NOTHING: Final[Mapping[str, Resource]] = MappingProxyType({})
_NO_NAMES: Final[frozenset[str]] = frozenset()


_Waiting = tuple[str, Mapping[str, Resource], frozenset[str], bool]
"""A response sent and not answered yet: nonce, resources, names removed, whether it
replaces what came before. A plain tuple: one is made per response (a NamedTuple costs
five times as much to build)."""


class AckedResources:
    """Per type: the resources the client ACKed, and the responses it has not answered."""

    __slots__ = ("_held", "_own", "_waiting")

    def __init__(self) -> None:
        self._held: dict[str, Mapping[str, Resource]] = {}
        self._own: dict[str, dict[str, Resource]] = {}
        """Per type, a dict of this record's own, changed in place while it is the held
        mapping (a response's mapping is shared, and copied before a change)."""
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
        entry = (nonce, resources, removed, replace)
        waiting = self._waiting.get(type_url)
        if waiting is None:
            self._waiting[type_url] = [entry]
        elif replace:
            waiting[:] = (entry,)
        else:
            waiting.append(entry)
            if len(waiting) > MAX_WAITING:
                waiting[0:2] = [_merged(waiting[0], waiting[1])]

    def answered(
        self, type_url: str, nonce: str, *, rejected: bool, subscription: Subscription | None
    ) -> None:
        """The client answered the response ``nonce`` (ACK, or NACK when ``rejected``);
        ``subscription`` is the one it has now (names it no longer subscribes to, it no
        longer holds; None: not watched)."""
        waiting = self._waiting.get(type_url)
        if not waiting:
            return
        if waiting[0][0] == nonce:  # the usual case: one response out, answered
            entry = waiting.pop(0)
            if not rejected:
                self._fold(type_url, entry, subscription)
            return
        index = next((i for i, entry in enumerate(waiting) if entry[0] == nonce), None)
        if index is None:
            return  # not one of ours (stale, or already settled)
        settled = waiting[:index] if rejected else waiting[: index + 1]
        del waiting[: index + 1]
        for entry in settled:
            self._fold(type_url, entry, subscription)

    def seed(self, type_url: str, resources: Mapping[str, Resource]) -> None:
        """The client reports holding exactly ``resources`` (a delta reconnect)."""
        if resources:
            self._fold(type_url, ("", resources, _NO_NAMES, False), None)

    def held(self, type_url: str, subscription: Subscription | None) -> Mapping[str, Resource]:
        """Name → resource of everything of ``type_url`` the client ACKed and still
        subscribes to (``subscription``; None: not watched, so nothing)."""
        held = self._held.get(type_url, _NOTHING)
        if subscription is None:
            return _NOTHING
        if subscription.wildcard:
            return MappingProxyType(held) if held is self._own.get(type_url) else held
        names = subscription.names
        return {name: resource for name, resource in held.items() if name in names}

    def type_urls(self) -> frozenset[str]:
        """The types something was ever ACKed of on this stream."""
        return frozenset(self._held)

    def _fold(self, type_url: str, entry: _Waiting, subscription: Subscription | None) -> None:
        _nonce, resources, removed, replace = entry
        if replace:
            self._held[type_url] = resources
            return
        held = self._held.get(type_url, _NOTHING)
        own = self._own.get(type_url)
        if own is None or held is not own:
            own = self._own[type_url] = dict(held)
            self._held[type_url] = own
        own.update(resources)
        for name in removed:
            own.pop(name, None)
        if (
            subscription is not None
            and not subscription.wildcard
            and len(own) > len(subscription.names)  # then some name is no longer covered
        ):
            names = subscription.names
            for name in [n for n in own if n not in names]:
                del own[name]


def _merged(first: _Waiting, second: _Waiting) -> _Waiting:
    """Two unanswered additive responses as one, answered when the later one is."""
    _, first_resources, first_removed, _ = first
    nonce, second_resources, second_removed, _ = second
    resources = {n: r for n, r in first_resources.items() if n not in second_removed}
    resources.update(second_resources)
    removed = (first_removed - second_resources.keys()) | second_removed
    return (nonce, resources, removed, False)
