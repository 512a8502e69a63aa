"""The state of one SotW watch (one type on one stream) and what to send on it.

``SotwWatch`` is the per-type record of one stream's session: the subscription,
whether the stream ever named resources of the type, the nonce and version last sent
and last ACKed, the last NACK, the ``always_respond`` flag of the warming fix, the
content of the latest response and of the latest NACKed one, and what the client
holds: the responses still carrying a resource (``SentResponse``) and, for a per-name
type, which of them last carried each name.  ``resources`` reads a
``ResourceRecord`` per resource from those.

It is mutable and private to one session (as the client side's ``ClientWatch`` is):
a transition changes it in place and returns it.  A push changes a few of a proxy's
names, and a frozen value would copy every per-name mapping on every response of
every proxy; with a thousand proxies those copies miss the CPU caches and were the
largest single cost of an EDS push.  In place, a send touches only the names it
carries: each response counts the names that still point at it, and goes when none
does.  What it hands out (``SentResponse``, ``ResourceRecord``, the content
mappings of responses) is never changed once made.

``plan_sotw`` decides what a response for the watch holds, given the current
resources of the type (name → content hash): everything the subscription
resolves to.  It withholds a response whose content is exactly what the client
last NACKed (the proxy keeps its last good config; we do not resend bad config
until it changes), and a server-initiated push whose content equals what was
last sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import is_full_state_type
from pilothouse.xds.protocol.records import HeldRecords, SentResponse
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status
from pilothouse.xds.protocol.versions import check_version_advance

_NOTHING: Mapping[str, str] = MappingProxyType({})
_NO_SUBSCRIPTION = Subscription()


class SotwWatch:
    """One type's watch on a SotW stream (mutable, owned by one session)."""

    __slots__ = (
        "_live",
        "_own_versions",
        "always_respond",
        "carriers",
        "last_error",
        "last_sent",
        "named_before",
        "nonce_acked",
        "nonce_nacked",
        "nonce_sent",
        "rejected",
        "responses",
        "strays",
        "subscription",
        "type_url",
        "version_acked",
        "version_sent",
        "versions",
    )

    def __init__(self, type_url: str, subscription: Subscription = _NO_SUBSCRIPTION) -> None:
        self.type_url = type_url
        self.subscription = subscription
        self.named_before = False
        self.nonce_sent = ""
        self.version_sent = ""
        self.nonce_acked = ""
        self.version_acked = ""
        self.nonce_nacked = ""
        self.last_error: NackError | None = None
        self.always_respond = False
        self.last_sent: Mapping[str, str] = _NOTHING
        """Content (name → resource version) of the latest response."""
        self.rejected: Mapping[str, str] | None = None
        """Content of the latest response the client NACKed, until an ACK clears it."""
        self.responses: dict[str, SentResponse] = {}
        """Nonce → response, for the latest response and every other that still carries
        a resource the client holds (full-state types: the latest response only)."""
        per_name = not is_full_state_type(type_url)
        self.carriers: dict[str, str] | None = {} if per_name else None
        """Per-name types: resource name → nonce of the response that last carried it.
        None for full-state types, whose latest response carries everything held."""
        self.versions: Mapping[str, str] | None = _NOTHING if per_name else None
        """Per-name types: resource name → the version last sent of it. None for
        full-state types, whose ``last_sent`` is that."""
        self._own_versions: dict[str, str] | None = None
        """``versions`` once it is this watch's own. Until then it is the first
        response's content, copied when a second response changes it: an idle proxy
        holds one mapping of its names, not two."""
        self._live: dict[str, int] = {}
        """Per-name types: nonce → how many names ``carriers`` points at it with."""
        self.strays = False
        """``carriers`` may name resources the subscription does not cover (sent since the
        last request); the next request drops them."""

    def __repr__(self) -> str:
        return (
            f"SotwWatch({self.type_url!r}, sent={self.nonce_sent!r}, "
            f"acked={self.nonce_acked!r}, names={len(self.held_versions)})"
        )

    @property
    def sync_status(self) -> SyncStatus:
        return sync_status(self.nonce_sent, self.nonce_acked, self.last_error)

    @property
    def sent_anything(self) -> bool:
        return bool(self.nonce_sent)

    @property
    def resources(self) -> HeldRecords:
        """Name → ``ResourceRecord`` of every resource the client was sent and holds
        (read it at once: it reads the watch as it is when used)."""
        return HeldRecords(self.carriers, self.responses, self.responses.get(self.nonce_sent))

    @property
    def held_versions(self) -> Mapping[str, str]:
        """Name → version of every resource the client was sent and holds."""
        return self.last_sent if self.versions is None else self.versions

    def sent_version(self, name: str) -> str | None:
        """The version of ``name`` the client was last sent (None if it holds none)."""
        return self.held_versions.get(name)

    def acked_resource(self, name: str) -> bool:
        """Whether the response that last carried ``name`` was ACKed."""
        response = self.resources.carrier(name)
        return response is not None and response.acked_at is not None

    def requested(self, subscription: Subscription) -> SotwWatch:
        """The client asked for ``subscription``; records that explicit names were used."""
        self.named_before = self.named_before or bool(subscription.names)
        if subscription is not self.subscription or self.strays:
            # names no longer asked for (or sent beyond the last request) are dropped
            self.subscription = subscription
            self.strays = False
            if _strays(self.carriers, subscription):
                self._drop_strays(subscription.names)
        return self

    def _drop_strays(self, names: frozenset[str]) -> None:
        carriers, versions = self.carriers, self.versions
        assert carriers is not None and versions is not None
        kept = {n: c for n, c in carriers.items() if n in names}
        self.carriers = kept
        self.versions = self._own_versions = {
            n: v for n, v in versions.items() if n in names
        }
        live: dict[str, int] = {}
        for nonce in kept.values():
            live[nonce] = live.get(nonce, 0) + 1
        if self.nonce_sent:
            live.setdefault(self.nonce_sent, 0)  # the latest response stays, even empty
        self._live = live
        self.responses = {n: r for n, r in self.responses.items() if n in live}

    def rejected_nonce(self, nonce: str) -> bool:
        """Whether ``nonce`` is the one the client NACKed last (its error still stands)."""
        return self.last_error is not None and bool(nonce) and nonce == self.nonce_nacked

    def acked(self, nonce: str, version: str, now: float) -> SotwWatch:
        """The client ACKed the response with ``nonce`` (the latest one sent)."""
        responses = self.responses
        answered = responses.get(nonce)
        if answered is not None:
            responses[nonce] = answered.ack(now)
        self.nonce_acked = nonce
        self.version_acked = version
        self.last_error = None
        self.rejected = None
        return self

    def nacked(self, nonce: str, error: NackError) -> SotwWatch:
        """The client NACKed the response with ``nonce``."""
        responses = self.responses
        answered = responses.get(nonce)
        if answered is not None:
            responses[nonce] = answered.nack(error)
        if nonce and nonce == self.nonce_sent:
            self.rejected = self.last_sent
        self.nonce_nacked = nonce
        self.last_error = error
        return self

    def warming(self) -> SotwWatch:
        """A type this one warms on was pushed: answer the next ACK even if unchanged."""
        self.always_respond = True
        return self

    def answered(self) -> SotwWatch:
        """A request was answered: the warming flag has done its job."""
        self.always_respond = False
        return self

    def sent(self, version: str, nonce: str, content: Mapping[str, str], now: float) -> SotwWatch:
        """A response (``version``, ``nonce``, name → resource version) went out.
        ``content`` is kept as given (a plan's, made for this response): it must not
        change afterwards."""
        if not nonce:
            raise ValueError(f"{self.type_url}: a response needs a nonce")
        if nonce == self.nonce_sent or nonce in self.responses:
            raise ValueError(f"{self.type_url}: nonce {nonce!r} already used")
        check_version_advance(self.type_url, self.version_sent, version)
        held = content
        response = SentResponse(nonce, now, held)
        carriers, versions = self.carriers, self.versions
        if carriers is None or versions is None:
            self.responses = {nonce: response}
        else:
            # only the names this response carries move: the responses they leave lose
            # a name each, and one left with none (and not the latest) is forgotten
            responses, live = self.responses, self._live
            previous = self.nonce_sent
            if previous and live.get(previous) == 0:
                del live[previous], responses[previous]
            for name in held if carriers else ():  # the first response moves nothing
                old = carriers.get(name)
                if old is not None:
                    left = live[old] - 1
                    if left:
                        live[old] = left
                    else:
                        del live[old], responses[old]
            carriers.update(dict.fromkeys(held, nonce))
            own = self._own_versions
            if own is None and not versions:
                self.versions = held
            else:
                if own is None:
                    own = self.versions = self._own_versions = dict(versions)
                own.update(held)
            live[nonce] = len(held)
            responses[nonce] = response
            if not self.strays and _strays(held, self.subscription):
                self.strays = True
        self.nonce_sent = nonce
        self.version_sent = version
        self.last_sent = held
        return self


def _strays(names: Mapping[str, object] | None, subscription: Subscription) -> bool:
    """Whether ``names`` (a per-name type's) has one that ``subscription`` does not cover."""
    if names is None or subscription.wildcard:
        return False
    return not names.keys() <= subscription.names


@dataclass(frozen=True, slots=True)
class SotwPlan:
    """What a SotW response holds: name → resource version, and requested names missing."""

    resources: Mapping[str, str]
    requested: frozenset[str] = frozenset()
    """The names the subscription asks for explicitly."""

    @property
    def missing(self) -> frozenset[str]:
        """Names requested explicitly that do not exist (worked out only when asked:
        a push of a few changed resources would otherwise walk every name)."""
        resources = self.resources
        return frozenset(name for name in self.requested if name not in resources)


def plan_sotw(
    watch: SotwWatch, available: Mapping[str, str], *, answering: bool
) -> SotwPlan | None:
    """The response to send on ``watch``, or None when nothing should be sent.

    ``available`` maps every current resource of the type to its content hash.
    ``answering`` is True when a request was decided to need a response (then the
    response goes out even if unchanged); False for a push started by the server,
    which is only sent when its content differs from the latest response. The plan's
    content is a mapping of its own (the watch keeps it once sent).
    """
    subscription = watch.subscription
    content = subscription.select(available)
    if watch.rejected is not None and content == watch.rejected:
        return None
    if not answering and watch.sent_anything and content == watch.last_sent:
        return None
    return SotwPlan(content, subscription.names)
