"""The state of one SotW watch (one type on one stream) and what to send on it.

``SotwWatch`` is a frozen value: the subscription, whether the stream ever named
resources of the type, the nonce and version last sent and last ACKed, the last
NACK, the ``always_respond`` flag of the warming fix, the content of the latest
response and of the latest NACKed one, and a ``ResourceRecord`` per resource.
Its transitions return new values.

``plan_sotw`` decides what a response for the watch holds, given the current
resources of the type (name → content hash): everything the subscription
resolves to.  It withholds a response whose content is exactly what the client
last NACKed (the proxy keeps its last good config; we do not resend bad config
until it changes), and a server-initiated push whose content equals what was
last sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pilothouse.xds.protocol.messages import NackError
from pilothouse.xds.protocol.records import ResourceRecord, sent_record
from pilothouse.xds.protocol.subscriptions import Subscription
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status
from pilothouse.xds.protocol.type_urls import is_full_state_type
from pilothouse.xds.protocol.versions import check_version_advance


def _no_versions() -> Mapping[str, str]:
    return MappingProxyType({})


def _no_records() -> Mapping[str, ResourceRecord]:
    return MappingProxyType({})


@dataclass(frozen=True)
class SotwWatch:
    """One type's watch on a SotW stream."""

    type_url: str
    subscription: Subscription = field(default_factory=Subscription)
    named_before: bool = False
    nonce_sent: str = ""
    version_sent: str = ""
    nonce_acked: str = ""
    version_acked: str = ""
    nonce_nacked: str = ""
    last_error: NackError | None = None
    always_respond: bool = False
    last_sent: Mapping[str, str] = field(default_factory=_no_versions)
    """Content (name → resource version) of the latest response."""
    rejected: Mapping[str, str] | None = None
    """Content of the latest response the client NACKed, until an ACK clears it."""
    resources: Mapping[str, ResourceRecord] = field(default_factory=_no_records)

    @property
    def sync_status(self) -> SyncStatus:
        return sync_status(self.nonce_sent, self.nonce_acked, self.last_error)

    @property
    def sent_anything(self) -> bool:
        return bool(self.nonce_sent)

    def requested(self, subscription: Subscription) -> SotwWatch:
        """The client asked for ``subscription``; records that explicit names were used."""
        named = self.named_before or bool(subscription.names)
        resources = self.resources
        if not is_full_state_type(self.type_url):
            resources = MappingProxyType(
                {n: r for n, r in resources.items() if subscription.covers(n)}
            )
        return replace(self, subscription=subscription, named_before=named, resources=resources)

    def rejected_nonce(self, nonce: str) -> bool:
        """Whether ``nonce`` is the one the client NACKed last (its error still stands)."""
        return self.last_error is not None and bool(nonce) and nonce == self.nonce_nacked

    def acked(self, nonce: str, version: str, now: float) -> SotwWatch:
        """The client ACKed the response with ``nonce`` (the latest one sent)."""
        resources = MappingProxyType(
            {n: (r.ack(now) if r.nonce == nonce else r) for n, r in self.resources.items()}
        )
        return replace(
            self,
            nonce_acked=nonce,
            version_acked=version,
            last_error=None,
            rejected=None,
            resources=resources,
        )

    def nacked(self, nonce: str, error: NackError) -> SotwWatch:
        """The client NACKed the response with ``nonce``."""
        resources = MappingProxyType(
            {n: (r.nack(error) if r.nonce == nonce else r) for n, r in self.resources.items()}
        )
        rejected = self.rejected
        if nonce and nonce == self.nonce_sent:
            rejected = self.last_sent
        return replace(
            self, nonce_nacked=nonce, last_error=error, rejected=rejected, resources=resources
        )

    def warming(self) -> SotwWatch:
        """A type this one warms on was pushed: answer the next ACK even if unchanged."""
        return replace(self, always_respond=True)

    def answered(self) -> SotwWatch:
        """A request was answered: the warming flag has done its job."""
        return replace(self, always_respond=False)

    def sent(
        self, version: str, nonce: str, content: Mapping[str, str], now: float
    ) -> SotwWatch:
        """A response (``version``, ``nonce``, name → resource version) went out."""
        if not nonce:
            raise ValueError(f"{self.type_url}: a response needs a nonce")
        if nonce == self.nonce_sent:
            raise ValueError(f"{self.type_url}: nonce {nonce!r} already used")
        check_version_advance(self.type_url, self.version_sent, version)
        fresh = {n: sent_record(n, v, nonce, now) for n, v in content.items()}
        records = fresh if is_full_state_type(self.type_url) else {**self.resources, **fresh}
        return replace(
            self,
            nonce_sent=nonce,
            version_sent=version,
            last_sent=MappingProxyType(dict(content)),
            resources=MappingProxyType(records),
        )


@dataclass(frozen=True)
class SotwPlan:
    """What a SotW response holds: name → resource version, and requested names missing."""

    resources: Mapping[str, str]
    missing: frozenset[str] = frozenset()


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
    if watch.rejected is not None and content == dict(watch.rejected):
        return None
    if not answering and watch.sent_anything and content == dict(watch.last_sent):
        return None
    missing = watch.subscription.missing(available)
    return SotwPlan(resources=MappingProxyType(content), missing=missing)
