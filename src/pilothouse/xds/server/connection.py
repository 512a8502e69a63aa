"""One connected proxy: its identity, its protocol session, and the responses it is owed.

A connection is driven from two sides, both on the event loop and never concurrently
within a step: the stream's reader hands it requests (:meth:`Connection.on_request`),
and the push workers hand it pushes (:meth:`Connection.push`). Either may produce
responses, which are appended in order to the connection's outbound queue; the
stream's writer loop sends them. Generation is synchronous and reads one
PushContext, so a response never mixes two snapshots.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest
from pilothouse.push.version import NonceSource
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import SERVICE_KIND, Resolution, service_hosts
from pilothouse.settings import XdsSettings
from pilothouse.xds.builders.names import parse_cluster_name
from pilothouse.xds.generators.base import GenerationInput, Generator
from pilothouse.xds.generators.grpc_flavour import is_proxyless
from pilothouse.xds.protocol.delta import DeltaDecision, DeltaKind, DeltaSession
from pilothouse.xds.protocol.delta_plan import plan_delta
from pilothouse.xds.protocol.messages import DeltaRequest, SotwRequest
from pilothouse.xds.protocol.sotw import SotwDecision, SotwSession
from pilothouse.xds.protocol.sotw_watch import plan_sotw
from pilothouse.xds.protocol.subscriptions import Subscription
from pilothouse.xds.protocol.type_urls import CDS, EDS, push_order_key
from pilothouse.xds.server.ordering import ROUTE_TYPES, MakeBeforeBreak
from pilothouse.xds.server.wire import delta_response, sotw_response

log = logging.getLogger("pilothouse.xds")

_NO_NAMES: frozenset[str] = frozenset()
INTERNAL_ERROR = "internal error in pilothouse; this stream was closed (details in the server log)"
"""What a stream ending with INTERNAL tells the client: nothing of Python's internals."""
ENDPOINT_KINDS = frozenset({SERVICE_KIND, "ServiceEntry", "WorkloadEntry", "DestinationRule"})
"""Kinds whose change can alter a ClusterLoadAssignment (DestinationRules define subsets)."""


class Generation(Protocol):
    """What a connection needs from the server to generate responses."""

    @property
    def context(self) -> PushContext: ...

    @property
    def endpoints(self) -> EndpointIndex: ...

    @property
    def cache(self) -> ResourceCache: ...

    @property
    def version(self) -> str: ...

    def generator(self, type_url: str) -> Generator | None: ...

    def observe_send(self, connection: Connection, type_url: str, size: int) -> None: ...


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


@dataclass
class ConnectionStats:
    pushes: int = 0
    responses: dict[str, int] = field(default_factory=dict)
    resources_sent: dict[str, int] = field(default_factory=dict)
    bytes_sent: int = 0


class Connection:
    """A proxy's stream. ``delta`` selects the protocol engine."""

    def __init__(
        self,
        connection_id: str,
        peer: str,
        proxy: ProxyIdentity,
        generation: Generation,
        *,
        delta: bool,
        warming_timeout: float = XdsSettings.warming_timeout,
    ) -> None:
        """``warming_timeout``: seconds routes wait for new clusters to warm before they
        are sent anyway; removed clusters linger at most twice as long."""
        self.id = connection_id
        self.peer = peer
        self.proxy = proxy
        self.delta = delta
        self.connected_at = time.time()
        self.sotw = SotwSession() if not delta else None
        self.delta_session = DeltaSession() if delta else None
        self.outbound: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.writer_attached = False
        """Set by the stream's writer loop, which marks each response done once written."""
        self.stats = ConnectionStats()
        self._order = MakeBeforeBreak()
        self._warming_timeout = warming_timeout
        self._eds_index: tuple[Subscription, Mapping[str, frozenset[str]]] | None = None
        self.problem: str | None = None
        """Why the stream must end with INVALID_ARGUMENT, when the client broke the protocol."""
        self.failure: str | None = None
        """Why the stream must end with INTERNAL, when pilothouse failed serving it."""
        self._generation = generation
        self._nonces = NonceSource()
        # gRPC waits for a route's clusters and endpoints itself before using the route
        # (and sends no new EDS request when a cluster comes back), so it is not warmed.
        self._warms_clusters = not is_proxyless(proxy)

    def __repr__(self) -> str:
        return f"Connection({self.id}, {self.proxy.node_id})"

    # -- what the server asks ---------------------------------------------------------

    def watched_types(self) -> list[str]:
        session = self.sotw if self.sotw is not None else self.delta_session
        assert session is not None
        return sorted(session.watches, key=push_order_key)

    def watched_names(self, type_url: str) -> frozenset[str] | None:
        """The explicitly watched names of a type; None when wildcard or not watched."""
        session = self.sotw if self.sotw is not None else self.delta_session
        assert session is not None
        subscription = session.wants(type_url)
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
        found: set[str] = set()
        for hostname in hostnames:
            names = by_host.get(hostname)
            if names is not None:
                found.update(names)
        return frozenset(found) if found else _NO_NAMES

    def _eds_by_host(self) -> Mapping[str, frozenset[str]]:
        """Watched EDS names by hostname, rebuilt only when the subscribed names change."""
        session = self.sotw if self.sotw is not None else self.delta_session
        assert session is not None
        subscription = session.wants(EDS)
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

    # -- requests ---------------------------------------------------------------------

    def on_request(self, request: SotwRequest | DeltaRequest, now: float) -> None:
        if self.sotw is not None:
            decision = self.sotw.receive(request, now)  # type: ignore[arg-type]
            if decision.respond:
                self._respond_sotw(decision.type_url, decision, None, now)
        else:
            assert self.delta_session is not None
            delta_decision = self.delta_session.receive(request, now)  # type: ignore[arg-type]
            if delta_decision.respond:
                self._respond_delta(delta_decision.type_url, delta_decision, None, now)
        order = self._order
        if order.warming and request.type_url == EDS and self._warmed(order.warming):
            self._release_deferred(now)
        if order.lingering and self._routes_settled():
            self._release_lingering(now)

    # -- pushes -----------------------------------------------------------------------

    def push(self, request: PushRequest, now: float) -> None:
        """Send what ``request`` changed for this proxy, types in make-before-break order."""
        self.stats.pushes += 1
        if not request.full:
            changed = self.watches_hosts(service_hosts(request.configs_updated))
            if changed:
                self._push_type(EDS, changed, now)
            return
        order = self._order
        watched = self.watched_types()
        routes_watched = any(t in ROUTE_TYPES for t in watched)
        before = order.sent(CDS).keys()  # what is recorded is replaced, never changed
        clusters: Mapping[str, Resource] | None = None
        if routes_watched and CDS in watched:
            # generated once: what lingers is worked out from it, and it is what is sent
            clusters = self._generate_raw(CDS, self.watched_names(CDS))
            order.begin_linger(clusters)
            if order.lingering:
                self._after(2 * self._warming_timeout, self._release_lingering)
        for type_url in watched:
            if type_url in ROUTE_TYPES and order.warming:
                order.deferred.add(type_url)
                continue
            if type_url == EDS:
                self._push_endpoints(request, now)
                continue
            if type_url == CDS and clusters is not None:
                self._push_type(CDS, None, now, order.with_lingering(CDS, clusters))
            else:
                self._push_type(type_url, None, now)
            if type_url == CDS and routes_watched and self._warms_clusters:
                self._start_warming(frozenset(order.sent(CDS).keys() - before))
        if order.lingering and self._routes_settled():
            # no route changed in this push, so none can still use the removed clusters
            self._release_lingering(now)

    def _push_endpoints(self, request: PushRequest, now: float) -> None:
        """EDS in a full push: only if the change can move endpoints, and (SotW) only the
        assignments whose content differs from what the proxy was last sent."""
        if not request.is_everything and not request.touches_any(ENDPOINT_KINDS):
            return
        if self.sotw is None:
            self._push_type(EDS, None, now)
            return
        watch = self.sotw.watch(EDS)
        if watch is None or watch.subscription.wildcard:
            self._push_type(EDS, None, now)
            return
        current = self._generate(EDS, watch.subscription.names)
        held = watch.held_versions.get
        changed = frozenset(
            name for name, resource in current.items() if held(name) != resource.version
        )
        if changed:
            self._push_type(EDS, changed, now)

    # -- make before break (see ordering.py) --------------------------------------------

    @property
    def settling(self) -> bool:
        """True while routes wait for new clusters, or removed clusters wait for routes."""
        order = self._order
        return bool(order.warming or order.deferred or order.lingering)

    def _start_warming(self, added: frozenset[str]) -> None:
        if not added:
            return
        scope = self._generation.context.scope(self.proxy)
        warming = set()
        for name in added:
            parsed = parse_cluster_name(name)
            service = scope.service(parsed.host) if parsed is not None else None
            if service is not None and service.resolution is Resolution.STATIC:
                warming.add(name)
        if warming:
            epoch = self._order.begin_warming(frozenset(warming))

            def give_up(now: float) -> None:
                if self._order.warming and self._order.epoch == epoch:
                    self._release_deferred(now)

            self._after(self._warming_timeout, give_up)

    def _after(self, delay: float, action: Callable[[float], None]) -> None:
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().call_later(delay, self._contained, action)

    def _contained(self, action: Callable[[float], None]) -> None:
        """Run a timed step (warming give-up, lingering release); if it raises, only this
        connection ends (with INTERNAL), never the event loop's other work."""
        if self.failure is not None or self.problem is not None:
            return
        try:
            action(time.time())
        except Exception:
            log.exception("timed push step failed", extra={"connection": self.id})
            self.fail(INTERNAL_ERROR)

    def _warmed(self, names: frozenset[str]) -> bool:
        if self.sotw is not None:
            watch = self.sotw.watch(EDS)
            if watch is None:
                return False
            return all(watch.acked_resource(n) for n in names)
        assert self.delta_session is not None
        delta_watch = self.delta_session.watch(EDS)
        return delta_watch is not None and all(n in delta_watch.confirmed for n in names)

    def _routes_settled(self) -> bool:
        """Every route type watched has had its latest response ACKed (or NACKed)."""
        if self._order.warming or self._order.deferred:
            return False
        for type_url in ROUTE_TYPES:
            if self.sotw is not None:
                watch = self.sotw.watch(type_url)
                if (
                    watch is not None
                    and watch.nonce_sent
                    and (watch.nonce_acked != watch.nonce_sent and watch.last_error is None)
                ):
                    return False
            else:
                assert self.delta_session is not None
                delta_watch = self.delta_session.watch(type_url)
                if delta_watch is not None and delta_watch.in_flight:
                    return False
        return True

    def _release_deferred(self, now: float) -> None:
        for type_url in sorted(self._order.take_deferred(), key=push_order_key):
            self._push_type(type_url, None, now)

    def _release_lingering(self, now: float) -> None:
        if not self._order.lingering:
            return
        self._order.lingering = frozenset()
        self._push_type(CDS, None, now)
        self._push_type(EDS, None, now)

    def _push_type(
        self,
        type_url: str,
        changed: frozenset[str] | None,
        now: float,
        generated: Mapping[str, Resource] | None = None,
    ) -> None:
        """A server-initiated response for one type (only what changed, if anything).

        ``generated`` is the type's resources for the watched names when the caller
        has them already (lingering ones included)."""
        if self.sotw is not None:
            self._respond_sotw(type_url, None, changed, now, generated)
        else:
            self._respond_delta(type_url, None, changed, now, generated)

    # -- generation -------------------------------------------------------------------

    def _generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        return self._order.with_lingering(type_url, self._generate_raw(type_url, names))

    def _generate_raw(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        generator = self._generation.generator(type_url)
        if generator is None:
            return {}
        context = self._generation.context
        given = GenerationInput(
            proxy=self.proxy,
            scope=context.scope(self.proxy),
            context=context,
            endpoints=self._generation.endpoints,
            cache=self._generation.cache,
            names=names,
        )
        return generator.generate(given)

    def _respond_sotw(
        self,
        type_url: str,
        decision: SotwDecision | None,
        changed: frozenset[str] | None,
        now: float,
        generated: Mapping[str, Resource] | None = None,
    ) -> None:
        assert self.sotw is not None
        watch = self.sotw.watch(type_url)
        if watch is None:
            return
        subscription = watch.subscription
        names = None if subscription.wildcard else subscription.names
        if changed is not None:
            names = changed if names is None else names & changed
        resources = self._generate(type_url, names) if generated is None else generated
        available = {name: r.version for name, r in resources.items()}
        plan = plan_sotw(watch, available, answering=decision is not None)
        if plan is None:
            return
        if changed is not None and not plan.resources:
            return
        version = self._generation.version
        nonce = self._nonces.next(version)
        body = sotw_response(
            version, type_url, nonce, [resources[n].body for n in sorted(plan.resources)]
        )
        self.sotw.record_sent(type_url, version, nonce, plan.resources, now)
        if self._order.records(type_url):
            chosen = plan.resources
            sent = resources if len(chosen) == len(resources) else {n: resources[n] for n in chosen}
            self._order.record(type_url, sent, replace=changed is None)
        self._send(type_url, body, len(plan.resources))

    def _respond_delta(
        self,
        type_url: str,
        decision: DeltaDecision | None,
        changed: frozenset[str] | None,
        now: float,
        generated: Mapping[str, Resource] | None = None,
    ) -> None:
        assert self.delta_session is not None
        watch = self.delta_session.watch(type_url)
        if watch is None:
            return
        subscription = watch.subscription
        names = None if subscription.wildcard else subscription.names
        if changed is not None and decision is None and names is not None:
            names = names & changed
        resources = self._generate(type_url, names) if generated is None else generated
        available = {name: r.version for name, r in resources.items()}
        plan = plan_delta(watch, available, decision, changed)
        initial = decision is not None and decision.kind in (DeltaKind.INIT, DeltaKind.RECONNECT)
        if plan.empty and not initial:
            return
        version = self._generation.version
        nonce = self._nonces.next(version)
        chosen = [resources[n] for n in sorted(plan.resources)]
        body = delta_response(version, type_url, nonce, chosen, sorted(plan.removed))
        self.delta_session.record_sent(
            type_url, nonce, plan.resources, plan.removed, now, system_version=version
        )
        self._order.record(type_url, {r.name: r for r in chosen}, plan.removed, replace=False)
        self._send(type_url, body, len(chosen))

    def _send(self, type_url: str, body: bytes, resources: int) -> None:
        self.stats.responses[type_url] = self.stats.responses.get(type_url, 0) + 1
        sent = self.stats.resources_sent
        sent[type_url] = sent.get(type_url, 0) + resources
        self.stats.bytes_sent += len(body)
        self._generation.observe_send(self, type_url, len(body))
        self.outbound.put_nowait(body)

    async def written(self, timeout: float) -> None:
        """Wait until every response queued so far is written to the stream (at most
        ``timeout`` seconds; at once when no writer is attached).

        The push workers wait for this, so a connection counts as being pushed until
        its responses are on the wire: pushes that come meanwhile merge in the push
        queue instead of piling up stale responses behind a slow stream.
        """
        if not self.writer_attached or self.outbound.empty():
            await asyncio.sleep(0)  # still let the loop breathe between connections
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.outbound.join(), timeout)

    def fail(self, reason: str) -> None:
        """End this stream with INTERNAL and ``reason`` (the first reason given stays):
        after an exception mid-response its protocol state can no longer be trusted, and
        the proxy reconnects to a fresh one."""
        if self.failure is None:
            self.failure = reason
        self.close()

    def close(self) -> None:
        self.outbound.put_nowait(None)
