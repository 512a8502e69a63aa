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
  types' earlier ACKed ones); delta: the state after the ACKed delta. Names the
  client no longer subscribes to, it no longer holds: they are filtered when read, and
  dropped once the record holds more names than the subscription has.
- :meth:`AckedResources.seed`: a delta client that reconnects reports the versions it
  holds; those equal to the current resource (delta versions are content hashes) are
  what it holds, and were ACKed on an earlier stream.

What is held per type is a *base* mapping, kept by reference (a full-state response's
resources, or an additive one that carries every name held: the generated mapping,
shared by every proxy of a scope), plus a small *overlay* of this stream's own for the
names later responses changed or removed. A push of one changed assignment costs an
entry in the overlay, not a copy of the proxy's hundred assignments; the overlay is
folded into a base of its own when it grows to half the base, and dropped whenever a
response carries everything again.

No I/O, no clock. A full-state type keeps one response waiting (a newer one supersedes
it); a per-name type at most :data:`MAX_WAITING` (older ones are merged), so a client
that never answers cannot make the record grow without bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from pilothouse.protocol.subscriptions import Subscription
from pilothouse.push.cache import Resource

MAX_WAITING: Final = 16
"""Unanswered responses kept per per-name type before the oldest two are merged."""
MIN_FOLDED: Final = 32
"""An overlay is folded into a base of its own once it has this many names and at
least half as many as the base."""

_NOTHING: Final[Mapping[str, Resource]] = MappingProxyType({})
_NO_NAMES: Final[frozenset[str]] = frozenset()

_Waiting = tuple[str, Mapping[str, Resource], frozenset[str], bool]
"""A response sent and not answered yet: nonce, resources, names removed, whether it
replaces what came before. A plain tuple: one is made per response (a NamedTuple costs
five times as much to build)."""


class _Held:
    """What the client holds of one type: ``base`` (by reference) under ``overlay``,
    less the ``gone`` names of the base that a later response removed; ``count`` names
    in all."""

    __slots__ = ("base", "count", "gone", "overlay")

    def __init__(self, base: Mapping[str, Resource]) -> None:
        self.base = base
        self.overlay: dict[str, Resource] | None = None
        self.gone: set[str] | None = None
        self.count = len(base)

    def replace(self, base: Mapping[str, Resource]) -> None:
        self.base, self.overlay, self.gone, self.count = base, None, None, len(base)

    def add(
        self,
        resources: Mapping[str, Resource],
        removed: frozenset[str],
        subscription: Subscription | None,
    ) -> None:
        base, overlay, gone = self.base, self.overlay, self.gone
        if not removed and len(resources) >= len(base) - (len(gone) if gone else 0):
            names = resources.keys()
            if names >= (base.keys() - gone if gone else base.keys()) and (
                not overlay or names >= overlay.keys()
            ):  # it carries every name held: it is the whole state, shared as it is
                self.replace(resources)
                return
        if overlay is None:
            overlay = self.overlay = {}
        for name in resources:  # count the names new to the client (inlined: hot)
            if name not in overlay and (name not in base or (gone and name in gone)):
                self.count += 1
        overlay.update(resources)
        for name in removed:
            if self._holds(name):
                self.count -= 1
            overlay.pop(name, None)
            if name in base:
                if self.gone is None:
                    self.gone = set()
                self.gone.add(name)
        if (len(overlay) >= MIN_FOLDED and 2 * len(overlay) >= len(base)) or (
            subscription is not None
            and not subscription.wildcard
            and self.count > len(subscription.names)  # the client dropped some names
        ):
            self.replace(self.view(subscription))

    def _holds(self, name: str) -> bool:
        overlay, gone = self.overlay, self.gone
        if overlay and name in overlay:
            return True
        return name in self.base and not (gone and name in gone)

    def view(self, subscription: Subscription | None) -> Mapping[str, Resource]:
        """Name → resource, only of names ``subscription`` covers (None: all)."""
        base, overlay, gone = self.base, self.overlay, self.gone
        if not overlay and not gone:
            held = base
        else:
            held = {n: r for n, r in base.items() if not gone or n not in gone}
            if overlay:
                held.update(overlay)
        if subscription is None or subscription.wildcard:
            return held
        names = subscription.names
        return {name: resource for name, resource in held.items() if name in names}


class AckedResources:
    """Per type: the resources the client ACKed, and the responses it has not answered."""

    __slots__ = ("_held", "_waiting")

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
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
            _nonce, resources, removed, replace = waiting.pop(0)
            if rejected:
                return
            held = self._held.get(type_url)
            if held is None:
                self._held[type_url] = _Held(resources)
            elif replace:
                held.replace(resources)
            else:
                held.add(resources, removed, subscription)
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
        held = self._held.get(type_url)
        if held is None or subscription is None:
            return _NOTHING
        return held.view(subscription)

    def type_urls(self) -> frozenset[str]:
        """The types something was ever ACKed of on this stream."""
        return frozenset(self._held)

    def _fold(self, type_url: str, entry: _Waiting, subscription: Subscription | None) -> None:
        _nonce, resources, removed, replace = entry
        held = self._held.get(type_url)
        if held is None:
            self._held[type_url] = held = _Held(_NOTHING)
        if replace:
            held.replace(resources)
        else:
            held.add(resources, removed, subscription)


def _merged(first: _Waiting, second: _Waiting) -> _Waiting:
    """Two unanswered additive responses as one, answered when the later one is."""
    _, first_resources, first_removed, _ = first
    nonce, second_resources, second_removed, _ = second
    resources = {n: r for n, r in first_resources.items() if n not in second_removed}
    resources.update(second_resources)
    removed = (first_removed - second_resources.keys()) | second_removed
    return (nonce, resources, removed, False)
