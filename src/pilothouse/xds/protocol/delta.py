"""The incremental (delta) xDS engine for one stream: request in, decision out.

``DeltaSession.receive`` classifies a ``DeltaDiscoveryRequest``:

- **INIT / RECONNECT** — the first request for a type on the stream.  The
  subscription is ``"*"`` in ``resource_names_subscribe``, or the legacy form
  (both lists empty on a wildcard type), plus the names subscribed.
  ``initial_resource_versions`` (RECONNECT) seeds what the client holds, so
  resources whose version is unchanged are not sent again.  Always answered.
- **NACK** — ``error_detail`` set and the nonce is a response in flight: that
  response is rolled back (see ``delta_watch``), the error recorded, a reject
  counted.  Not answered, unless the request also subscribed names.
- **ACK** — the nonce is a response in flight: the client holds it.  Answered
  only for subscription changes or when ``always_respond`` is set.
- **SUBSCRIPTION** — empty nonce: a subscription change only (Envoy sends these
  when CDS adds or removes a cluster).
- **STALE** — a nonce that is not a response in flight.  Its ACK/NACK meaning is
  ignored and an expired nonce counted.

Where we deliberately differ from istiod: **subscription changes apply even
with a stale nonce** (the spec rule, envoy PR #16659); istiod drops the whole
request.  So ``resource_names_subscribe`` / ``_unsubscribe`` are applied on every
request, and a stale request that subscribes names is answered for them.  And
the nonce correlates an ACK/NACK with *any* response still in flight, not only
the latest: in delta every response is a change of its own, so a NACK of an
earlier response must be honoured even if a later one was sent meanwhile.

Answering rules (spec §3): every name in ``resource_names_subscribe`` is sent
even if the client already holds it, except the names the server counted subscribed
ahead of the client and sent since (``expect``: the assignments of the EDS clusters a
CDS push adds, sent in that push, which Envoy subscribed to before it read them);
unsubscribing a name never subscribed is ignored; unsubscribing a name the wildcard
still covers is answered with it in ``resources`` or ``removed_resources``; a pure
unsubscribe is not answered.

What the client holds is tracked twice (``delta_watch``): optimistically from
``record_sent`` and confirmed by ACKs; a NACK rolls the optimistic view back to
the last good versions, and NACKed content is not resent until it changes.
``plan_delta`` (in ``delta_plan``) says what a response holds.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pilothouse.protocol.messages import (
    DeltaRequest,
    NackError,
    nack_error,
)
from pilothouse.protocol.subscriptions import (
    Subscription,
    SubscriptionChange,
    delta_change,
    delta_initial_subscription,
)
from pilothouse.protocol.type_urls import WARMING_DEPENDENCIES
from pilothouse.xds.protocol.delta_watch import DeltaWatch
from pilothouse.xds.protocol.stream_state import StreamState

_NONE: frozenset[str] = frozenset()


class DeltaKind(enum.Enum):
    """What a delta request meant."""

    INIT = "init"
    RECONNECT = "reconnect"
    NACK = "nack"
    ACK = "ack"
    SUBSCRIPTION = "subscription"
    STALE = "stale"


@dataclass(frozen=True)
class DeltaDecision:
    """The verdict on one delta request."""

    type_url: str
    kind: DeltaKind
    respond: bool
    subscription: Subscription
    subscribed: frozenset[str] = frozenset()
    """Names this request subscribed; missing ones are reported in removed_resources."""
    unsubscribed: frozenset[str] = frozenset()
    """Names explicitly subscribed before and unsubscribed by this request."""
    resend: frozenset[str] = frozenset()
    """Names to send even if the client holds them at the current version."""
    resend_all: bool = False
    """Send every subscribed resource (wildcard newly added, or the warming flag)."""
    error: NackError | None = None
    always_respond: bool = False


class DeltaSession(StreamState[DeltaWatch]):
    """Per-stream delta state: the node, one ``DeltaWatch`` per type, and counters."""

    def __init__(self) -> None:
        super().__init__()
        self._expected: dict[str, frozenset[str]] = {}
        """Per type: names counted subscribed ahead of the client (``expect``) that it
        has not subscribed to itself yet."""

    def receive(self, request: DeltaRequest, now: float) -> DeltaDecision:
        """Classify one request, update the state, and say whether to respond."""
        self._keep_node(request)
        type_url = request.type_url
        subscribe = list(request.resource_names_subscribe)
        unsubscribe = list(request.resource_names_unsubscribe)
        watch = self._watches.get(type_url)
        if watch is None:
            return self._init(type_url, subscribe, unsubscribe, request.initial_resource_versions)

        nonce = request.response_nonce
        error = nack_error(request)
        kind: DeltaKind
        if nonce and watch.is_in_flight(nonce):
            if error is not None:
                kind = DeltaKind.NACK
                watch = watch.nacked(nonce, error, now)
                self._rejects[type_url] = self._rejects.get(type_url, 0) + 1
            else:
                kind = DeltaKind.ACK
                watch = watch.acked(nonce, now)
        elif nonce:
            kind = DeltaKind.STALE
            self._expired_nonces[type_url] = self._expired_nonces.get(type_url, 0) + 1
        else:
            kind = DeltaKind.SUBSCRIPTION

        if subscribe or unsubscribe:
            change = delta_change(watch.subscription, subscribe, unsubscribe)
            watch = watch.with_subscription(change.after)
        else:  # an ACK alone (most requests): the subscription stays, and is not copied
            subscription = watch.subscription
            change = SubscriptionChange(subscription, subscription, _NONE, _NONE, False)
        subscribed = change.subscribed
        if type_url in self._expected:
            subscribed = self._subscribed_ahead(type_url, change, watch)
        resend = subscribed | change.still_covered
        respond = bool(resend) or change.wildcard_added
        always = False
        if watch.always_respond and kind in (DeltaKind.ACK, DeltaKind.SUBSCRIPTION):
            respond = always = True
            watch = watch.answered()
        self._watches[type_url] = watch
        return DeltaDecision(
            type_url,
            kind,
            respond,
            change.after,
            subscribed=subscribed,
            unsubscribed=change.unsubscribed,
            resend=resend,
            resend_all=change.wildcard_added or always,
            error=error if kind is DeltaKind.NACK else None,
            always_respond=always,
        )

    def _subscribed_ahead(
        self, type_url: str, change: SubscriptionChange, watch: DeltaWatch
    ) -> frozenset[str]:
        """The names ``change`` subscribes to, but those counted subscribed ahead of the
        client (``expect``) whose current assignment it was sent since: its request
        crossed that response on the wire, and sending them again would send the same
        bytes twice. Names it subscribes to or unsubscribes from are expected no more."""
        expected = self._expected.pop(type_url)
        subscribed = change.subscribed
        ahead = expected & subscribed
        left = expected - subscribed - change.unsubscribed
        if left:
            self._expected[type_url] = left
        if not ahead:
            return subscribed
        held = watch.held
        return subscribed - frozenset(n for n in ahead if n in held)

    def _init(
        self,
        type_url: str,
        subscribe: list[str],
        unsubscribe: list[str],
        initial_versions: Mapping[str, str],
    ) -> DeltaDecision:
        subscription = delta_initial_subscription(type_url, subscribe, unsubscribe)
        self._watches[type_url] = DeltaWatch.start(type_url, subscription, initial_versions)
        kind = DeltaKind.RECONNECT if initial_versions else DeltaKind.INIT
        return DeltaDecision(type_url, kind, True, subscription, subscribed=subscription.names)

    def expect(self, type_url: str, names: frozenset[str]) -> None:
        """The client is about to subscribe to ``names`` of ``type_url`` (Envoy subscribes
        to the assignment of each EDS cluster a CDS response adds, and waits for it):
        count them subscribed now, so that a push sends them with the rest and the
        client's subscription, when it comes, changes nothing and needs no answer. A
        name the client never subscribes to stays until CDS drops the cluster (Envoy
        then unsubscribes, or the name is reported removed)."""
        watch = self._watches.get(type_url)
        if watch is None:
            return
        subscription = watch.subscription
        if subscription.wildcard or names <= subscription.names:
            return
        self._watches[type_url] = watch.with_subscription(
            Subscription(subscription.names | names, subscription.wildcard)
        )
        self._expected[type_url] = self._expected.get(type_url, frozenset()) | (
            names - subscription.names
        )

    def record_sent(
        self,
        type_url: str,
        nonce: str,
        sent: Mapping[str, str],
        removed: Iterable[str],
        now: float,
        system_version: str = "",
    ) -> DeltaWatch:
        """Record a response: ``sent`` (name → version) in resources, ``removed`` names.

        The client is assumed to hold the response at once; a NACK rolls it back.
        Raises ``LookupError`` if the type is not watched, ``ValueError`` on an
        empty or reused nonce or a name both sent and removed, and
        ``VersionRegression`` if ``system_version`` goes backwards.  Sending CDS
        marks the types that warm on it (EDS) ``always_respond``.
        """
        watch = self._watches.get(type_url)
        if watch is None:
            raise LookupError(f"{type_url}: not watched on this stream")
        updated = watch.sent(nonce, sent, frozenset(removed), now, system_version)
        self._watches[type_url] = updated
        for dependent in WARMING_DEPENDENCIES.get(type_url, ()):
            self.mark_always_respond(dependent)
        return updated
