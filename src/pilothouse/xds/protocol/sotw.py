"""The state-of-the-world xDS engine for one stream: request in, decision out.

``SotwSession.receive`` classifies a ``DiscoveryRequest`` with Istio's
``ShouldRespond`` table, checked top to bottom, first match wins:

1. ``error_detail`` set → NACK: record the error on the watch, count a reject,
   no response.
2. empty ``resource_names`` on a type that is not wildcard (EDS, RDS, SDS,
   ECDS) → UNSUBSCRIBE: forget the watch, no response.
3. empty ``response_nonce``, or no watch for the type yet → INIT (or RECONNECT
   when the client reports a version or a nonce it got from an earlier stream or
   another server): store the names, respond.
4. nonce other than the last one sent → STALE: count an expired nonce, ignore
   the request entirely.
5. nonce matches → ACK: record it, clear the error, store the names.  Respond if
   ``always_respond`` was set (and clear it); otherwise not if the subscription
   did not change; on a non-wildcard type only if names were added; on a
   wildcard type on any change.

One refinement over istiod in row 5: after a NACK, Envoy's next request for the
type carries the NACKed nonce again, without ``error_detail`` (for example when
its names grow).  That is not an ACK of the rejected content, so it is
classified UPDATE: the names are stored and answered as in row 5, but the error
and the rejected content stay recorded (proxy-status keeps saying ERROR and the
bad content is still not resent unchanged).

The engine does no I/O and reads no clock: the caller passes ``now``.  After
sending a response the caller reports it with ``record_sent``; sending CDS sets
``always_respond`` on EDS (the warming fix: Envoy needs a fresh EDS response to
finish warming a cluster).  A push that sends the changed clusters' assignments right
behind CDS has given that fresh response, and clears the flag with
``warming_answered``: answering the EDS ACK as well would send every assignment a
second time (checked against a real Envoy in tests/e2e/test_xds_envoy.py). The
assignments of clusters the CDS response adds go in that push too: ``expect`` counts
their names requested before Envoy asks, so its request for them is a plain ACK
(tests/e2e/test_cds_messages.py).
``plan_sotw`` (in ``sotw_watch``) says what to send.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from pilothouse.protocol.messages import (
    NackError,
    SotwRequest,
    nack_error,
)
from pilothouse.protocol.subscriptions import Subscription, sotw_subscription
from pilothouse.protocol.type_urls import WARMING_DEPENDENCIES, is_wildcard_type
from pilothouse.xds.protocol.name_sets import NameSets
from pilothouse.xds.protocol.sotw_watch import SotwWatch
from pilothouse.xds.protocol.stream_state import StreamState


class SotwKind(enum.Enum):
    """Which row of the table a request matched (ACK splits by outcome)."""

    NACK = "nack"
    UNSUBSCRIBE = "unsubscribe"
    INIT = "init"
    RECONNECT = "reconnect"
    STALE = "stale"
    ACK = "ack"
    UPDATE = "update"
    """Row 5 with the nonce the client last NACKed: a subscription update, not an ACK."""


class SotwDecision(NamedTuple):
    """The verdict on one request (a NamedTuple: one is made per request, and a frozen
    dataclass costs several times as much to build)."""

    type_url: str
    kind: SotwKind
    respond: bool
    subscription: Subscription
    added: frozenset[str] = frozenset()
    """Names requested now that were not requested before."""
    error: NackError | None = None
    always_respond: bool = False
    """True when the response is owed to the warming flag rather than a name change."""


_decision = tuple.__new__
"""Makes a decision as the tuple it is (one per request: the NamedTuple's Python-level
``__new__`` costs as much again)."""
_NO_NAMES: frozenset[str] = frozenset()


class SotwSession(StreamState[SotwWatch]):
    """Per-stream SotW state: the node, one ``SotwWatch`` per type, and counters."""

    def __init__(self, name_sets: NameSets | None = None) -> None:
        """``name_sets``: where a subscription's names are shared with other streams'
        equal ones (the server's; None: kept as made)."""
        super().__init__()
        self._named: dict[str, tuple[int | list[str], Subscription]] = {}
        """Per type: the names the watch's subscription was last taken from (their
        fingerprint, or else the list)."""
        self._name_sets = name_sets

    def receive(self, request: SotwRequest, now: float, names: int | None = None) -> SotwDecision:
        """Classify one request, update the state, and say whether to respond.

        ``names`` is a fingerprint of the request's resource names taken from its bytes
        (:func:`pilothouse.protocol.request_bytes.names_fingerprint`: equal for equal
        names) or None; with it an ACK repeating the names is known without reading them.
        """
        if self._node is None:
            self._keep_node(request)
        type_url = request.type_url
        nonce = request.response_nonce
        watch = self._watches.get(type_url)

        error = nack_error(request)
        if error is not None:
            return self._nack(type_url, watch, nonce, error)

        if (
            names is not None
            and watch is not None
            and nonce
            and nonce == watch.nonce_sent
            and self._repeats(type_url, watch, names)
        ):
            # the usual request: an ACK of the latest response naming what the watch
            # has (row 5, nothing changed), known without reading a name
            watch.acked(nonce, request.version_info, now)
            subscription = watch.subscription
            if watch.strays:
                watch.requested(subscription)
            return _decision(
                SotwDecision, (type_url, SotwKind.ACK, False, subscription, _NO_NAMES, None, False)
            )

        requested = request.resource_names
        if not requested and not is_wildcard_type(type_url):
            self._watches.pop(type_url, None)
            self._named.pop(type_url, None)
            return SotwDecision(type_url, SotwKind.UNSUBSCRIBE, False, Subscription())

        if nonce and watch is not None and nonce != watch.nonce_sent:
            # row 4 before the names are taken: a stale request changes nothing (Envoy's
            # warming re-request often carries the nonce before the latest)
            self._expired_nonces[type_url] = self._expired_nonces.get(type_url, 0) + 1
            return SotwDecision(type_url, SotwKind.STALE, False, watch.subscription)

        subscription, named = self._subscription(type_url, requested, names, watch)

        if not nonce or watch is None:
            return self._init(type_url, watch, subscription, named, request)

        return self._ack(type_url, watch, subscription, named, nonce, request.version_info, now)

    def _repeats(self, type_url: str, watch: SotwWatch, fingerprint: int) -> bool:
        """Whether names with ``fingerprint`` are the watch's subscription as it stands,
        on a watch with no NACK standing and no answer owed (an ACK of them changes
        nothing but the ACKed nonce): the names the subscription was last taken from, or
        names another stream made this very subscription of (Envoy's warming re-request
        names the same clusters in another order). Then they are remembered as the
        names it was taken from."""
        last = self._named.get(type_url)
        subscription = watch.subscription
        if (
            last is None
            or last[1] is not subscription
            or watch.last_error is not None
            or watch.always_respond
        ):
            return False
        if last[0] == fingerprint:
            return True
        sets = self._name_sets
        if sets is None or sets.subscription(type_url, fingerprint, watch.named_before) is not (
            subscription
        ):
            return False
        self._named[type_url] = (fingerprint, subscription)
        return True

    def _subscription(
        self,
        type_url: str,
        requested: Sequence[str],
        fingerprint: int | None,
        watch: SotwWatch | None,
    ) -> tuple[Subscription, int | list[str] | None]:
        """The subscription the ``requested`` names express on this stream, and the
        names to remember it by once it is applied (None: already remembered).

        Most requests are ACKs repeating the names of the request before: when the
        names are the ones the watch's subscription was last taken from, that
        subscription is the answer (``named_before`` cannot have changed since, so
        reading the names again would give an equal value), with no set built. The
        names' ``fingerprint`` says so without reading them (protobuf makes a string of
        each name read); without one, the remembered list is compared with them.
        """
        last = self._named.get(type_url)
        if watch is not None and last is not None and last[1] is watch.subscription:
            same = (
                fingerprint == last[0] if fingerprint is not None else requested == last[0]
            )
            if same:
                return watch.subscription, None
        named_before = watch is not None and watch.named_before
        sets = self._name_sets
        if fingerprint is not None and sets is not None:
            made = sets.subscription(type_url, fingerprint, named_before)
            if made is not None:  # another stream named the same: its subscription
                if watch is not None and made == watch.subscription:
                    made = watch.subscription
                return made, fingerprint
            subscription = sotw_subscription(type_url, requested, named_before)
        else:
            # Interned: the subscription's strings are shared by later requests' copies.
            named = list(tuple(map(sys.intern, requested)))  # exactly sized: one per watch
            subscription = sotw_subscription(type_url, named, named_before)
        if watch is not None and subscription == watch.subscription:
            subscription = watch.subscription  # keep one copy
        elif sets is not None and subscription.names:
            shared = sets.shared(subscription.names)
            if shared is not subscription.names:  # one set for the streams naming the same
                subscription = Subscription(shared, subscription.wildcard)
        if fingerprint is None:
            return subscription, named
        if sets is not None:
            sets.made(type_url, fingerprint, named_before, subscription)
        return subscription, fingerprint

    def _remember(
        self, type_url: str, named: int | list[str] | None, subscription: Subscription
    ) -> None:
        if named is not None:
            self._named[type_url] = (named, subscription)

    def _nack(
        self, type_url: str, watch: SotwWatch | None, nonce: str, error: NackError
    ) -> SotwDecision:
        self._rejects[type_url] = self._rejects.get(type_url, 0) + 1
        if watch is None:
            return SotwDecision(type_url, SotwKind.NACK, False, Subscription(), error=error)
        self._watches[type_url] = watch.nacked(nonce, error)
        return SotwDecision(type_url, SotwKind.NACK, False, watch.subscription, error=error)

    def _init(
        self,
        type_url: str,
        watch: SotwWatch | None,
        subscription: Subscription,
        named: int | list[str] | None,
        request: SotwRequest,
    ) -> SotwDecision:
        fresh = watch is None
        if watch is None:
            watch = SotwWatch(type_url)
        before = watch.subscription.names
        self._watches[type_url] = watch.requested(subscription).answered()
        self._remember(type_url, named, subscription)
        reconnect = fresh and bool(request.version_info or request.response_nonce)
        kind = SotwKind.RECONNECT if reconnect else SotwKind.INIT
        return SotwDecision(type_url, kind, True, subscription, added=subscription.names - before)

    def _ack(
        self,
        type_url: str,
        watch: SotwWatch,
        subscription: Subscription,
        named: int | list[str] | None,
        nonce: str,
        version: str,
        now: float,
    ) -> SotwDecision:
        previous = watch.subscription
        unchanged = subscription is previous
        added = frozenset() if unchanged else subscription.names - previous.names
        kind = SotwKind.UPDATE if watch.rejected_nonce(nonce) else SotwKind.ACK
        if kind is SotwKind.ACK:
            watch = watch.acked(nonce, version, now)
        watch = watch.requested(subscription)
        self._remember(type_url, named, subscription)
        if watch.always_respond:
            self._watches[type_url] = watch.answered()
            return SotwDecision(
                type_url, kind, True, subscription, added=added, always_respond=True
            )
        self._watches[type_url] = watch
        if unchanged or subscription == previous:
            respond = False
        elif is_wildcard_type(type_url):
            respond = True
        else:
            respond = bool(added)
        return SotwDecision(type_url, kind, respond, subscription, added=added)

    def expect(self, type_url: str, names: frozenset[str]) -> None:
        """The client is about to request ``names`` of ``type_url`` too (Envoy requests
        the assignment of each EDS cluster a CDS response adds, and waits for it): count
        them requested now, so that a push sends them with the rest and the client's
        request, naming what the watch already has, is an ACK that needs no answer. The
        client's next request replaces the names, so a name it never asks for is
        dropped then."""
        watch = self._watches.get(type_url)
        if watch is None:
            return
        subscription = watch.subscription
        if subscription.wildcard or names <= subscription.names:
            return
        self._watches[type_url] = watch.requested(
            Subscription(subscription.names | names, subscription.wildcard)
        )

    def record_sent(
        self,
        type_url: str,
        version: str,
        nonce: str,
        resources: Mapping[str, str],
        now: float,
    ) -> SotwWatch:
        """Record a response sent for ``type_url``: version, nonce, name → resource version.

        Raises ``LookupError`` if the client does not watch the type,
        ``VersionRegression`` if ``version`` is older than one already sent, and
        ``ValueError`` on an empty or repeated nonce.  Sending CDS marks the
        types that warm on it (EDS) ``always_respond``.
        """
        watch = self._watches.get(type_url)
        if watch is None:
            raise LookupError(f"{type_url}: not watched on this stream")
        updated = watch.sent(version, nonce, resources, now)
        self._watches[type_url] = updated
        for dependent in WARMING_DEPENDENCIES.get(type_url, ()):
            self.mark_always_respond(dependent)
        return updated
