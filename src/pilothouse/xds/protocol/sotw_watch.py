"""The state of one SotW watch (one type on one stream) and what to send on it.

``SotwWatch`` is a frozen value: the subscription, whether the stream ever named
resources of the type, the nonce and version last sent and last ACKed, the last
NACK, the ``always_respond`` flag of the warming fix, the content of the latest
response and of the latest NACKed one, and what the client holds: the responses
still carrying a resource (``SentResponse``) and, for a per-name type, which of them
last carried each name.  ``resources`` reads a ``ResourceRecord`` per resource from
those.  Its transitions return new values; none of them walks the resources except
a send (C-level copies of the names) and a subscription that drops names.  The
mappings it holds are plain dicts typed ``Mapping``, made for the watch and never
changed once stored (copying a dict is C-level, copying a ``MappingProxyType`` is
not, and a push copies them on every stream).

``plan_sotw`` decides what a response for the watch holds, given the current
resources of the type (name → content hash): everything the subscription
resolves to.  It withholds a response whose content is exactly what the client
last NACKed (the proxy keeps its last good config; we do not resend bad config
until it changes), and a server-initiated push whose content equals what was
last sent.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import is_full_state_type
from pilothouse.xds.protocol.records import HeldRecords, SentResponse
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status
from pilothouse.xds.protocol.versions import check_version_advance

_NOTHING: Mapping[str, str] = MappingProxyType({})
_NO_RESPONSES: Mapping[str, SentResponse] = MappingProxyType({})
_NO_SUBSCRIPTION = Subscription()
_SCANNED_RESPONSES = 3
"""Up to this many responses held, a send scans the carriers for each (see ``sent``)."""


class SotwWatch(NamedTuple):
    """One type's watch on a SotW stream.

    A NamedTuple rather than a frozen dataclass: every request and every response
    makes a new one, and ``_replace`` is several times cheaper than
    ``dataclasses.replace``.
    """

    type_url: str
    subscription: Subscription = _NO_SUBSCRIPTION
    named_before: bool = False
    nonce_sent: str = ""
    version_sent: str = ""
    nonce_acked: str = ""
    version_acked: str = ""
    nonce_nacked: str = ""
    last_error: NackError | None = None
    always_respond: bool = False
    last_sent: Mapping[str, str] = _NOTHING
    """Content (name → resource version) of the latest response."""
    rejected: Mapping[str, str] | None = None
    """Content of the latest response the client NACKed, until an ACK clears it."""
    responses: Mapping[str, SentResponse] = _NO_RESPONSES
    """Nonce → response, for every response that still carries a resource the client
    holds (full-state types: the latest response only)."""
    carriers: Mapping[str, str] | None = None
    """Per-name types: resource name → nonce of the response that last carried it.
    None for full-state types, whose latest response carries everything held."""
    versions: Mapping[str, str] | None = None
    """Per-name types: resource name → the version last sent of it. None for
    full-state types, whose ``last_sent`` is that."""
    strays: bool = False
    """``carriers`` may name resources the subscription does not cover (sent since the
    last request); the next request drops them."""

    @property
    def sync_status(self) -> SyncStatus:
        return sync_status(self.nonce_sent, self.nonce_acked, self.last_error)

    @property
    def sent_anything(self) -> bool:
        return bool(self.nonce_sent)

    @property
    def resources(self) -> HeldRecords:
        """Name → ``ResourceRecord`` of every resource the client was sent and holds."""
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
        named = self.named_before or bool(subscription.names)
        same = subscription is self.subscription and named == self.named_before
        if same and not self.strays:
            return self  # an ACK naming what the watch already has
        carriers, versions = self.carriers, self.versions
        if _strays(carriers, subscription):
            assert carriers is not None and versions is not None
            names = subscription.names
            carriers = {n: c for n, c in carriers.items() if n in names}
            versions = {n: v for n, v in versions.items() if n in names}
        elif same:
            return self._replace(strays=False)
        return self._replace(
            subscription=subscription,
            named_before=named,
            carriers=carriers,
            versions=versions,
            strays=False,
        )

    def rejected_nonce(self, nonce: str) -> bool:
        """Whether ``nonce`` is the one the client NACKed last (its error still stands)."""
        return self.last_error is not None and bool(nonce) and nonce == self.nonce_nacked

    def acked(self, nonce: str, version: str, now: float) -> SotwWatch:
        """The client ACKed the response with ``nonce`` (the latest one sent)."""
        responses = self.responses
        answered = responses.get(nonce)
        if answered is not None:
            responses = {**responses, nonce: answered.ack(now)}
        return self._replace(
            nonce_acked=nonce,
            version_acked=version,
            last_error=None,
            rejected=None,
            responses=responses,
        )

    def nacked(self, nonce: str, error: NackError) -> SotwWatch:
        """The client NACKed the response with ``nonce``."""
        responses = self.responses
        answered = responses.get(nonce)
        if answered is not None:
            responses = {**responses, nonce: answered.nack(error)}
        rejected = self.rejected
        if nonce and nonce == self.nonce_sent:
            rejected = self.last_sent
        return self._replace(
            nonce_nacked=nonce, last_error=error, rejected=rejected, responses=responses
        )

    def warming(self) -> SotwWatch:
        """A type this one warms on was pushed: answer the next ACK even if unchanged."""
        if self.always_respond:
            return self
        return self._replace(always_respond=True)

    def answered(self) -> SotwWatch:
        """A request was answered: the warming flag has done its job."""
        if not self.always_respond:
            return self
        return self._replace(always_respond=False)

    def sent(self, version: str, nonce: str, content: Mapping[str, str], now: float) -> SotwWatch:
        """A response (``version``, ``nonce``, name → resource version) went out."""
        if not nonce:
            raise ValueError(f"{self.type_url}: a response needs a nonce")
        if nonce == self.nonce_sent:
            raise ValueError(f"{self.type_url}: nonce {nonce!r} already used")
        check_version_advance(self.type_url, self.version_sent, version)
        held = dict(content)
        response = SentResponse(nonce, now, held)
        carriers: Mapping[str, str] | None = None
        versions: Mapping[str, str] | None = None
        if is_full_state_type(self.type_url):
            responses: dict[str, SentResponse] = {nonce: response}
        else:
            merged = {**self.carriers} if self.carriers is not None else {}
            merged.update(dict.fromkeys(held, nonce))
            # a response stays while a name still points at it. With a few responses
            # (one push after the first answer) a C-level scan of the values, stopping at
            # the first, is cheaper than a set of them; under churn the names' carriers
            # spread over many responses, and then one set beats a scan per response.
            live: Collection[str] = merged.values()
            if len(self.responses) > _SCANNED_RESPONSES:
                live = set(live)
            responses = {n: r for n, r in self.responses.items() if n in live}
            responses[nonce] = response
            carriers = merged
            versions = {**self.versions, **held} if self.versions is not None else held
        return self._replace(
            nonce_sent=nonce,
            version_sent=version,
            last_sent=held,
            responses=responses,
            carriers=carriers,
            versions=versions,
            strays=self.strays or (carriers is not None and _strays(held, self.subscription)),
        )


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
    which is only sent when its content differs from the latest response.
    """
    content = watch.subscription.select(available)
    if watch.rejected is not None and content == watch.rejected:
        return None
    if not answering and watch.sent_anything and content == watch.last_sent:
        return None
    return SotwPlan(content, watch.subscription.names)
