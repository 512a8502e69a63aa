"""One stream engine per xDS stream: a request in, the responses to write out.

The engine wraps the stream's session (SotW or delta, through
:mod:`pilothouse.xds.protocol.stream_flavour`), its nonces and its make-before-break
ordering (:mod:`pilothouse.xds.protocol.ordering`). Its interface is narrow:

- :meth:`StreamEngine.receive`: a client request → the responses it is owed;
- :meth:`StreamEngine.push_full` / :meth:`StreamEngine.push_endpoints` /
  :meth:`StreamEngine.push_secrets`: what the server wants pushed → the responses to
  write, types in CDS → EDS → LDS → RDS → SDS order, a CDS response followed by the
  assignments of exactly the clusters Envoy warms on it (added and changed EDS
  clusters; none after a removal) so that its warming re-request needs no answer,
  routes deferred until new clusters' endpoints are ACKed, removed clusters kept until
  the routes that used them are ACKed;
- timed steps (warming give-up, lingering release) are handed to the ``schedule``
  given at construction, and return their responses when run;
- :meth:`StreamEngine.acked`: what the proxy has ACKed, per type (references to the
  resources sent, for the inspector).

It does no I/O and imports nothing from grpc: tests drive it with plain tables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType

from pilothouse.protocol.messages import DeltaRequest, SotwRequest
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, SDS, push_order_key
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.delta_flavour import DeltaFlavour
from pilothouse.xds.protocol.ordering import ROUTE_TYPES, MakeBeforeBreak
from pilothouse.xds.protocol.shared_content import SharedContents
from pilothouse.xds.protocol.sotw import SotwSession
from pilothouse.xds.protocol.stream_flavour import (
    Flavour,
    Outgoing,
    ResourceSource,
    SotwFlavour,
)
from pilothouse.xds.protocol.wire import NO_CONTROL_PLANE, ControlPlaneField, FanOutResponses

_NO_NAMES: frozenset[str] = frozenset()

Step = Callable[[float], list[Outgoing]]
"""A timed step: given the time it runs at, the responses it produces."""
Schedule = Callable[[float, Step], None]
"""Run a step after a delay in seconds (the caller owns the clock and the loop)."""


@functools.lru_cache(maxsize=512)
def eds_names_by_host(names: frozenset[str]) -> Mapping[str, frozenset[str]]:
    """EDS cluster names (``outbound|port|subset|host``) grouped by their host.

    Remembered for the last few hundred distinct name sets: the proxies of one scope
    watch the same clusters, so they share one index instead of each keeping its own
    (about 25 KB per proxy at 100 services). Read-only: callers must not change it.
    """
    grouped: dict[str, set[str]] = {}
    for name in names:
        grouped.setdefault(name.rsplit("|", 1)[-1], set()).add(name)
    return MappingProxyType({host: frozenset(found) for host, found in grouped.items()})


def _no_schedule(delay: float, step: Step) -> None:
    """The default: timed steps never run (a table test drives them by hand)."""


class StreamEngine:
    """The protocol state of one stream: session, nonces and make-before-break order."""

    def __init__(
        self,
        source: ResourceSource,
        *,
        delta: bool,
        warming_timeout: float,
        schedule: Schedule = _no_schedule,
        control_plane: ControlPlaneField = NO_CONTROL_PLANE,
        responses: FanOutResponses | None = None,
    ) -> None:
        """``warming_timeout``: seconds routes wait for new clusters to warm before they
        are sent anyway; removed clusters linger at most twice as long. ``control_plane``
        is the encoded field every response carries (which replica sent it);
        ``responses``, the server's SotW responses, shared among its streams."""
        self.order = MakeBeforeBreak()
        self._contents = SharedContents(kept=32) if responses is None else responses.contents
        """Where the clusters a push changed are worked out once per scope."""
        self._flavour: Flavour = (
            DeltaFlavour(source, self.order, control_plane, self._contents)
            if delta
            else SotwFlavour(source, self.order, control_plane, responses)
        )
        self._session: SotwSession | DeltaSession = self._flavour.session
        """The flavour's session, which never changes: read on every push."""
        self._source = source
        self._warming_timeout = warming_timeout
        self._schedule = schedule
        self._eds_index: tuple[Subscription, Mapping[str, frozenset[str]]] | None = None
        self._watched: tuple[frozenset[str], tuple[str, ...]] | None = None
        """The watched types, and them in push order (:meth:`watched_types`)."""

    @property
    def session(self) -> SotwSession | DeltaSession:
        """The SotW or delta session (watches, rejects, expired nonces)."""
        return self._session

    @property
    def sotw(self) -> SotwSession | None:
        """The SotW session, if this is a SotW stream."""
        session = self._session
        return session if isinstance(session, SotwSession) else None

    @property
    def delta_session(self) -> DeltaSession | None:
        """The delta session, if this is a delta stream."""
        session = self._session
        return session if isinstance(session, DeltaSession) else None

    # -- what the server asks ---------------------------------------------------------

    def watched_types(self) -> list[str]:
        """The watched types in push order (sorted again only when the set changed: a
        push reads it on every stream)."""
        watches = self._session.watches
        cached = self._watched
        if cached is None or cached[0] != watches.keys():
            cached = self._watched = (
                frozenset(watches),
                tuple(sorted(watches, key=push_order_key)),
            )
        return list(cached[1])

    def watched_names(self, type_url: str) -> frozenset[str] | None:
        """The explicitly watched names of a type; None when wildcard or not watched."""
        subscription = self._session.wants(type_url)
        if subscription is None or subscription.wildcard:
            return None
        return subscription.names

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        """Whether any watched EDS cluster name has its host among ``hostnames``."""
        by_host = self._eds_by_host()
        return bool(by_host) and not by_host.keys().isdisjoint(hostnames)

    def watches_hosts(self, hostnames: frozenset[str]) -> frozenset[str]:
        """Watched EDS cluster names whose host is one of ``hostnames``."""
        by_host = self._eds_by_host()
        if not by_host:
            return _NO_NAMES
        hit: frozenset[str] | None = None
        found: set[str] | None = None
        for hostname in hostnames:
            names = by_host.get(hostname)
            if names is None:
                continue
            if hit is None:
                hit = names
            else:
                found = set(hit) if found is None else found
                found.update(names)
        if found is not None:
            return frozenset(found)
        # one host's names: the index's own set, shared by the scope's streams (its hash
        # is computed once, and what is generated for it is found by identity)
        return _NO_NAMES if hit is None else hit

    def watches_secrets(self, names: frozenset[str]) -> bool:
        """Whether any of the SDS secrets ``names`` is watched."""
        subscription = self._session.wants(SDS)
        if subscription is None:
            return False
        return subscription.wildcard or not subscription.names.isdisjoint(names)

    def _eds_by_host(self) -> Mapping[str, frozenset[str]]:
        """Watched EDS names by hostname, rebuilt only when the subscribed names change."""
        subscription = self._session.wants(EDS)
        if subscription is None or subscription.wildcard:
            return {}
        cached = self._eds_index
        if cached is not None:
            if cached[0] is subscription:
                return cached[1]
            if cached[0].names == subscription.names:  # an ACK: same names, new object
                self._eds_index = (subscription, cached[1])
                return cached[1]
        index = eds_names_by_host(subscription.names)
        self._eds_index = (subscription, index)
        return index

    def acked(self) -> dict[str, Mapping[str, Resource]]:
        """Per type watched or ever ACKed: name → resource of what the proxy ACKed and
        still subscribes to (:mod:`pilothouse.xds.protocol.acked`)."""
        record = self._flavour.acked
        session = self.session
        return {
            type_url: record.held(type_url, session.wants(type_url))
            for type_url in sorted(record.type_urls() | session.watches.keys(), key=push_order_key)
        }

    @property
    def settling(self) -> bool:
        """True while routes wait for new clusters, or removed clusters wait for routes."""
        order = self.order
        return bool(order.warming or order.deferred or order.lingering)

    # -- requests ---------------------------------------------------------------------

    def receive(
        self, request: SotwRequest | DeltaRequest, now: float, names: int | None = None
    ) -> list[Outgoing]:
        """A client request: the responses it is owed (an answer, released routes, the
        removal of clusters no route uses any more). ``names``: a fingerprint of a SotW
        request's resource names, equal for requests naming the same (None: unknown)."""
        answer = self._flavour.answer(request, now, names)
        out: list[Outgoing] = [] if answer is None else [answer]
        order = self.order
        if order.warming and request.type_url == EDS and self._flavour.confirmed(order.warming):
            out += self._release_deferred(now)
        if order.lingering and self._routes_settled():
            out += self._release_lingering(now)
        return out

    # -- pushes -----------------------------------------------------------------------

    def push_endpoints(self, changed: frozenset[str], now: float) -> list[Outgoing]:
        """The EDS fast path: the assignments ``changed`` (watched names only)."""
        out: list[Outgoing] = []
        _add(out, self._flavour.respond(EDS, changed, now))
        return out

    def push_secrets(self, changed: frozenset[str], now: float) -> list[Outgoing]:
        """Changed SDS secrets only (watched names only): a new certificate, a new trust
        bundle, a replaced credential."""
        out: list[Outgoing] = []
        _add(out, self._flavour.respond(SDS, changed, now))
        return out

    def push_full(
        self,
        now: float,
        *,
        endpoints: bool,
        resend: bool = False,
        unchanged: frozenset[str] = frozenset(),
    ) -> list[Outgoing]:
        """Every watched type in make-before-break order; EDS only when ``endpoints``
        (the change can move endpoints), and then only what differs (SotW). With
        ``resend`` (a forced push) every watched type goes out, changed or not. The
        types in ``unchanged`` are neither generated nor compared: the caller knows
        the change cannot alter them (:mod:`pilothouse.push.affected_types`)."""
        out: list[Outgoing] = []
        order = self.order
        watched = self.watched_types()
        routes_watched = not ROUTE_TYPES.isdisjoint(watched)
        if unchanged and not resend:
            # EDS stays while CDS may change: the clusters it changes or adds warm on it
            cds_pushed = CDS not in unchanged
            watched = [t for t in watched if t not in unchanged or (t == EDS and cds_pushed)]
        held = order.sent(CDS)  # what is recorded is replaced, never changed
        refresh: frozenset[str] = frozenset()
        clusters_sent = False
        clusters: Mapping[str, Resource] | None = None
        if routes_watched and CDS in watched:
            # generated once: what lingers is worked out from it, and it is what is sent
            clusters = self._source.generate(CDS, self.watched_names(CDS))
            # the scope's streams move between the same mappings: compared once for all
            order.begin_linger(self._contents.difference(held, clusters).removed)
            if order.lingering:
                self._schedule(2 * self._warming_timeout, self._release_lingering)
        for type_url in watched:
            if type_url in ROUTE_TYPES and order.warming:
                order.deferred.add(type_url)
                continue
            if type_url == EDS:
                if endpoints or refresh:
                    assignments = self._push_endpoints_full(
                        now, resend, refresh, endpoints=endpoints
                    )
                    if assignments and clusters_sent:
                        # behind the CDS response on the same ordered stream: the fresh
                        # assignments its changed and added clusters warm on
                        # (``refresh``, or everything with ``resend``)
                        self._session.warming_answered(EDS)
                    out += assignments
                continue
            if type_url == CDS and clusters is not None:
                generated = order.with_lingering(CDS, clusters)
                sent = self._flavour.respond(CDS, None, now, generated, resend=resend)
            else:
                sent = self._flavour.respond(type_url, None, now, resend=resend)
            _add(out, sent)
            if type_url == CDS and sent is not None:
                clusters_sent = True
                refresh = self._warmed_by_clusters(held, routes_watched)
        if order.lingering and self._routes_settled():
            # no route changed in this push, so none can still use the removed clusters
            out += self._release_lingering(now)
        return out

    def _push_endpoints_full(
        self,
        now: float,
        resend: bool = False,
        refresh: frozenset[str] = frozenset(),
        *,
        endpoints: bool = True,
    ) -> list[Outgoing]:
        """EDS in a full push: what changed when ``endpoints`` may have moved, and the
        assignments of the clusters in ``refresh`` even if unchanged (Envoy warms a
        changed EDS cluster only on a fresh assignment, xds-protocol.md §2.8)."""
        changed: frozenset[str] | None
        among: Mapping[str, Resource] | None = None
        if resend:
            changed = None
        elif endpoints:
            changed, among = self._flavour.changed_endpoints()
        else:
            changed = frozenset()
        if changed is not None and refresh:
            changed = changed | refresh
        out: list[Outgoing] = []
        if changed is None or changed:
            sent = self._flavour.respond(
                EDS, changed, now, resend=resend, refresh=refresh, among=among
            )
            _add(out, sent)
        return out

    def _warmed_by_clusters(self, held: Mapping[str, Resource], routes: bool) -> frozenset[str]:
        """A CDS response went out, replacing the clusters ``held``: the EDS clusters
        Envoy now warms, whose assignments must follow right behind it (checked with a
        real Envoy in tests/e2e/test_cds_messages.py). Those are the clusters it changed
        (Envoy warms a changed EDS cluster only on a fresh assignment, even an unchanged
        one: xds-protocol.md §2.8) and the EDS clusters it added (Envoy asks for their
        assignments and waits): their names count as requested from now on
        (``expect``), so that request is an ACK that needs no answer. When nothing
        warms (a removal, or only non-EDS clusters changed), the warming flag has
        nothing to answer and is cleared: Envoy's next EDS request only narrows its
        names. With routes watched, routes wait for the added clusters (``warming``)."""
        session = self._flavour.session
        now_held = self.order.sent(CDS)
        # worked out once for the streams of a scope, which move between the same mappings
        difference = self._contents.difference(held, now_held)
        changed, added = difference.changed, difference.added
        warming = self._source.warming(added) if added else _NO_NAMES
        ahead = _NO_NAMES
        if warming:
            if routes:
                self._start_warming(warming)
            # only assignments that exist go ahead: a missing one is the proxy's to ask
            # for (and is then reported removed, delta) as before
            ahead = frozenset(self._source.generate(EDS, warming).keys())
            session.expect(EDS, ahead)
        subscription = session.wants(EDS)
        refresh = changed | ahead
        if subscription is None or not (
            subscription.wildcard or not subscription.names.isdisjoint(refresh)
        ):
            session.warming_answered(EDS)  # nothing warms on this response
            return _NO_NAMES
        return refresh

    # -- make before break (see ordering.py) --------------------------------------------

    def _start_warming(self, warming: frozenset[str]) -> None:
        """Routes wait until the proxy has ACKed the assignments of ``warming``."""
        if warming:
            epoch = self.order.begin_warming(warming)

            def give_up(now: float) -> list[Outgoing]:
                if self.order.warming and self.order.epoch == epoch:
                    return self._release_deferred(now)
                return []

            self._schedule(self._warming_timeout, give_up)

    def _routes_settled(self) -> bool:
        """Every route type watched has had its latest response ACKed (or NACKed)."""
        if self.order.warming or self.order.deferred:
            return False
        return not any(self._flavour.awaiting(t) for t in ROUTE_TYPES)

    def _release_deferred(self, now: float) -> list[Outgoing]:
        out: list[Outgoing] = []
        for type_url in sorted(self.order.take_deferred(), key=push_order_key):
            _add(out, self._flavour.respond(type_url, None, now))
        return out

    def _release_lingering(self, now: float) -> list[Outgoing]:
        out: list[Outgoing] = []
        if not self.order.lingering:
            return out
        self.order.lingering = frozenset()
        held = self.order.sent(CDS)
        clusters = self._flavour.respond(CDS, None, now)
        _add(out, clusters)
        if clusters is not None:
            # the removed clusters' assignments go with them (EDS is per name: nothing
            # to remove); whatever else this CDS response changed or added warms on them
            refresh = self._warmed_by_clusters(held, routes=False)
            if refresh:
                assignments = self._flavour.respond(EDS, refresh, now, refresh=refresh)
                if assignments is not None:
                    self._session.warming_answered(EDS)
                _add(out, assignments)
        return out


def _add(out: list[Outgoing], response: Outgoing | None) -> None:
    if response is not None:
        out.append(response)
