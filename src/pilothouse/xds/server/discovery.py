"""The discovery server: wires the pipeline together and carries out its pushes.

Flow (DESIGN §1), left to right: store events and registry updates go to the push
pipeline (:class:`~pilothouse.push.pipeline.PushPipeline`), which turns them into
PushRequests; the debouncer releases one merged request at a time; the pipeline plans
it (cache invalidation, PushContext build or the EDS fast path, scoped choice of
connections) into ``(connection, PushRequest)`` pairs; the server queues each pair and
its push workers, bounded by ``push_throttle``, run each connection's push, whose
responses the stream's writer sends. MCP-over-xDS clients (``GENERATOR=api``) are
answered by the ``api`` generator, the fallback for every Istio GVK type. Proxyless gRPC
clients (``GENERATOR=grpc``, or a gRPC user agent) get the gRPC flavour of CDS, LDS and
RDS (:mod:`pilothouse.xds.generators.grpc_flavour`).

Faults stop at the connection: a connection the pipeline reports failed (choosing it
raised), or whose push raised while generating, has its stream ended with INTERNAL (the
proxy reconnects and gets a fresh state); every other connection is still queued and
pushed, and the debouncer and the push workers keep running. A plan that raises as a
whole is logged by the debouncer and its changes ride along with the next push.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from pilothouse.config.mesh import MeshSettings
from pilothouse.kube.pod_sidecars import PodSidecars
from pilothouse.kube.registry import KubeFeeds, KubeRegistry
from pilothouse.metrics.push import PushMetrics, metric_type
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.authorization import REQUEST_AUTHENTICATION
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.debounce import Debouncer, DebounceSettings
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.push.secrets import has_secrets, secret_keys
from pilothouse.push.workers import PushWorkers, PushWorkerStats
from pilothouse.registry.aggregate import AggregateRegistry, ServiceRegistry
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.update import RegistryUpdate
from pilothouse.security.jwks import JwksResolver
from pilothouse.settings import XdsSettings as XdsSettings
from pilothouse.sources.events import ConfigEvent, ConfigStore
from pilothouse.sources.gc_pause import collector_paused
from pilothouse.xds.generators.api import ApiGenerator, watched_kinds
from pilothouse.xds.generators.base import Generator
from pilothouse.xds.generators.cds import ClusterGenerator
from pilothouse.xds.generators.eds import EndpointGenerator
from pilothouse.xds.generators.grpc_cds import GrpcClusterGenerator
from pilothouse.xds.generators.grpc_flavour import ByFlavour
from pilothouse.xds.generators.grpc_lds import GrpcListenerGenerator
from pilothouse.xds.generators.grpc_rds import GrpcRouteGenerator
from pilothouse.xds.generators.lds import ListenerGenerator
from pilothouse.xds.generators.rds import RouteGenerator
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.sotw import SotwSession
from pilothouse.xds.protocol.versions import PushVersions
from pilothouse.xds.server.admission import Admission
from pilothouse.xds.server.connection import INTERNAL_ERROR, Connection
from pilothouse.xds.server.control_plane import ControlPlaneIdentity, replica_name

log = logging.getLogger("pilothouse.xds")


SEND_ERROR_TYPES = frozenset({CDS, EDS, LDS, RDS})
"""The types whose failed writes istiod counts as ``pilot_xds_pushes{type="<type>_senderr"}``."""


@dataclass
class XdsStats:
    """Plain counters, read by ``/metrics`` when scraped (istiod metric names in comments).

    Per-type keys are istiod's ``type`` label values (:func:`metric_type`).
    """

    pushes: dict[str, int] = field(default_factory=dict)
    """pilot_xds_pushes{type}: responses written, and ``<type>_senderr`` writes that failed."""
    push_triggers: dict[str, int] = field(default_factory=dict)  # pilot_push_triggers{type}
    inbound_updates: dict[str, int] = field(default_factory=dict)  # pilot_inbound_updates{type}
    rejects: dict[str, int] = field(default_factory=dict)
    """NACKs of closed streams (pilot_total_xds_rejects{type} adds the open ones')."""
    expired_nonces: dict[str, int] = field(default_factory=dict)
    """Stale-nonce requests of closed streams (pilot_xds_expired_nonce{type} adds the open
    ones')."""
    internal_errors: int = 0
    """Streams ended with INTERNAL (pilot_total_xds_internal_errors)."""
    send_errors: int = 0
    """Responses whose write to the stream failed, of any type."""
    full_pushes: int = 0
    eds_pushes: int = 0
    """Pushes without a new PushContext that carried endpoint changes."""
    secret_pushes: int = 0
    """Pushes without a new PushContext that carried SDS secret changes."""
    connections_queued: int = 0
    context_builds: int = 0
    push_failures: int = 0
    """Connections closed with INTERNAL because generating or scoping their push raised."""
    sds_certificate_errors: int = 0
    """pilot_sds_certificate_errors_total: SDS secrets refused (once per stream and name)
    and workload certificates that failed to issue."""


class DiscoveryServer:
    """Wires the registry, the push pipeline, the cache and the generators, and carries
    out the pipeline's pushes on its connections."""

    def __init__(
        self,
        store: ConfigStore,
        mesh: MeshSettings | None = None,
        settings: XdsSettings | None = None,
        *,
        envoy_generators: bool = True,
        api_clock: Callable[[], datetime.datetime] | None = None,
        metrics: PushMetrics | None = None,
        kube: KubeFeeds | None = None,
    ) -> None:
        """``envoy_generators`` False serves Istio config only (the config-server role):
        CDS, EDS, LDS and RDS requests get empty answers. ``api_clock`` is when the
        ``api`` generator first sees an object (its MCP ``create_time``); wall time unless
        a test pins it. ``metrics`` are the push distributions this server records into
        (a recording set of its own unless given). ``kube`` are the informers of a
        Kubernetes cluster: its Services and endpoints join the ServiceEntry registry's
        (:class:`~pilothouse.registry.aggregate.AggregateRegistry`), and sidecars are
        matched to their Pods; without it the ServiceEntry registry is used alone."""
        self.store = store
        self.mesh = mesh if mesh is not None else MeshSettings()
        self.settings = settings if settings is not None else XdsSettings()
        self.cache = ResourceCache(self.settings.cache_size)
        self.admission = Admission(self.settings.admission)
        """Who may open a stream (every gRPC stream on the xDS port passes it); its
        knobs can be changed at run time."""
        self.stats = XdsStats()
        self.metrics = metrics if metrics is not None else PushMetrics()
        service_entries = ServiceEntryRegistry(store, self._on_registry_update)
        self.kube: KubeRegistry | None = None
        self.registry: ServiceRegistry = service_entries
        if kube is not None:
            self.kube = KubeRegistry(
                kube,
                service_entries.endpoint_index,
                self._on_registry_update,
                domain_suffix=self.mesh.domain_suffix,
                trust_domain=self.mesh.trust_domain,
                on_pods=self._on_pods_changed,
            )
            self.registry = AggregateRegistry(service_entries, self.kube)
        self._versions = PushVersions()
        self.jwks = JwksResolver(self._on_jwks_change, fetch=self.settings.jwks_fetch)
        """The key sets of RequestAuthentication jwksUris, fetched and inlined."""
        self._pipeline: PushPipeline[Connection] = PushPipeline(
            store,
            self.registry.services,
            self.mesh,
            self.cache,
            next_version=self._versions.next,
            api_kinds=watched_kinds,
            jwks=self.jwks,
        )
        self._pod_sidecars: PodSidecars[Connection] | None = (
            PodSidecars(self.kube, self._pipeline.own_sidecars) if self.kube is not None else None
        )
        """Sidecars matched to their Pods, with Kubernetes only."""
        self._unsubscribe = store.subscribe(self._on_config_event)
        self._generators: dict[str, Generator] = {}
        envoy: tuple[Generator, ...] = (
            ByFlavour(ClusterGenerator(), GrpcClusterGenerator()),
            EndpointGenerator(),
            ByFlavour(ListenerGenerator(), GrpcListenerGenerator()),
            ByFlavour(RouteGenerator(), GrpcRouteGenerator()),
        )
        for generator in envoy if envoy_generators else ():
            self._generators[generator.type_url] = generator
        self._api = ApiGenerator(store, clock=api_clock)
        self._config_server = not envoy_generators
        self._queue: PushQueue[Connection] = PushQueue()
        self._workers: PushWorkers[Connection] = PushWorkers(
            self._queue,
            self._push_connection,
            self.settings.push_throttle,
            observe_queue_time=self.metrics.queue_time.observe,
            deadline=self.settings.send_timeout,
        )
        self._debouncer = Debouncer(
            self.settings.debounce,
            self._on_push,
            observe_debounce_time=self.metrics.debounce_time.observe,
        )
        self._ids = itertools.count(1)
        self._closed = asyncio.Event()
        self._ready = asyncio.Event()
        _, _, port = self.settings.address.rpartition(":")
        self.identity = ControlPlaneIdentity(
            replica_name(self.settings.replica_id, int(port) if port.isdigit() else 0)
        )
        """Who this replica is, on every response (``control_plane.identifier``)."""

    def identify(self, xds_port: int) -> None:
        """Name the replica after the port it really listens on (``serve`` calls this once
        the port is bound, before streams are served); a configured id stays."""
        self.identity = ControlPlaneIdentity(replica_name(self.settings.replica_id, xds_port))

    # -- what connections and servicers read ------------------------------------------

    @property
    def context(self) -> PushContext:
        context = self._pipeline.context
        if context is None:
            raise RuntimeError("no PushContext yet: the server is not ready")
        return context

    @property
    def connections(self) -> Mapping[str, Connection]:
        """The connected streams, by connection id."""
        return self._pipeline.connections

    @property
    def endpoints(self) -> EndpointIndex:
        return self.registry.endpoint_index

    @property
    def version(self) -> str:
        return self._pipeline.version

    def complete_proxy(self, proxy: ProxyIdentity) -> ProxyIdentity:
        """``proxy`` with what the registry knows of it: a sidecar's labels, service
        account and locality from its Pod when Kubernetes is configured."""
        if self._pod_sidecars is None:
            return proxy
        return self._pod_sidecars.complete(proxy)

    def generator(self, type_url: str) -> Generator | None:
        """The generator registered for ``type_url``; Istio GVKs fall back to ``api``."""
        found = self._generators.get(type_url)
        if found is None:
            found = self._api.for_type(type_url)
        return found

    def register_generator(self, generator: Generator) -> None:
        self._generators[generator.type_url] = generator

    # -- what streams report (recorded for /metrics) -----------------------------------

    def observe_send(self, connection: Connection, type_url: str, size: int) -> None:
        """A response of ``size`` bytes was queued for ``connection``'s stream."""
        self.metrics.config_size.child(type_url).observe(size)

    def record_written(self, type_url: str, push_seconds: float, send_seconds: float) -> None:
        """A response was written to its stream: ``push_seconds`` from the start of its
        generation, ``send_seconds`` in the write itself."""
        kind = metric_type(type_url)
        pushes = self.stats.pushes
        pushes[kind] = pushes.get(kind, 0) + 1
        self.metrics.push_time.child(kind).observe(push_seconds)
        self.metrics.send_time.observe(send_seconds)

    def record_send_error(self, type_url: str) -> None:
        """Writing a response to its stream failed."""
        self.stats.send_errors += 1
        if type_url in SEND_ERROR_TYPES:
            key = f"{metric_type(type_url)}_senderr"
            self.stats.pushes[key] = self.stats.pushes.get(key, 0) + 1

    def record_internal_error(self) -> None:
        """A stream ended with INTERNAL: a fault of pilothouse's own."""
        self.stats.internal_errors += 1

    def rejects(self) -> dict[str, int]:
        """NACKs received so far, by istiod's type label: closed streams' and open ones'."""
        return self._stream_counts(self.stats.rejects, lambda session: session.rejects)

    def expired_nonces(self) -> dict[str, int]:
        """Requests with an expired nonce so far, by type label, closed and open streams'."""
        return self._stream_counts(
            self.stats.expired_nonces, lambda session: session.expired_nonces
        )

    def _stream_counts(
        self,
        closed: Mapping[str, int],
        counter: Callable[[SotwSession | DeltaSession], Mapping[str, int]],
    ) -> dict[str, int]:
        totals = dict(closed)
        for connection in self.connections.values():
            for type_url, count in counter(connection.engine.session).items():
                kind = metric_type(type_url)
                totals[kind] = totals.get(kind, 0) + count
        return totals

    def ready(self) -> bool:
        """True once every source has synced and the first PushContext exists."""
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    def pending_pushes(self) -> int:
        """Connections queued or being pushed (for tests, debug and metrics)."""
        return self._queue.pending() + self._queue.in_flight()

    def next_connection_id(self, proxy_id: str) -> str:
        return f"{proxy_id}-{next(self._ids)}"

    # -- connections ------------------------------------------------------------------

    def connect(self, connection: Connection) -> None:
        self._pipeline.connect(connection)
        log.debug("proxy connected", extra={"id": connection.id, "peer": connection.peer})

    def disconnect(self, connection: Connection) -> None:
        self._pipeline.disconnect(connection)
        self._queue.remove(connection)
        session = connection.engine.session
        for totals, counts in (
            (self.stats.rejects, session.rejects),
            (self.stats.expired_nonces, session.expired_nonces),
        ):
            for type_url, count in counts.items():
                kind = metric_type(type_url)
                totals[kind] = totals.get(kind, 0) + count
        log.debug("proxy disconnected", extra={"id": connection.id})

    # -- lifecycle --------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the sources, build the first context, then serve pushes until closed."""
        while not (self.store.has_synced() and self.registry.has_synced()):
            if self._closed.is_set():
                return
            await asyncio.sleep(0.01)
        with collector_paused():  # a bulk load: nothing built here is garbage
            if not self._config_server:  # services and endpoints are for Envoy config only
                self.registry.initial_load()
            context = self._pipeline.start()
            if self._config_server:
                encoded = self._api.warm()  # sinks are what this role is for: be ready
                log.debug("encoded %d objects for MCP-over-xDS", encoded)
        self.stats.context_builds += 1
        self.metrics.context_init.observe(context.stats.build_seconds)
        self._ready.set()
        log.info(
            "xds ready",
            extra={"services": len(self.registry.services()), "version": self.version},
        )
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._debouncer.run())
            tasks.create_task(self._workers.run())
            if not self._config_server:
                tasks.create_task(self.jwks.run())
            await self._closed.wait()
            self._debouncer.close()
            self._queue.shutdown()
            self.jwks.close()

    def close(self) -> None:
        self._closed.set()
        self.jwks.close()
        self._debouncer.close()
        self._queue.shutdown()
        for connection in list(self.connections.values()):
            connection.close()
        self._unsubscribe()
        self.registry.close()

    def request_push(self, request: PushRequest) -> None:
        """Queue a push through the debouncer (e.g. ``/debug/adsz?push=true``)."""
        self._debouncer.enqueue(request)

    def set_mesh(self, mesh: MeshSettings) -> bool:
        """Serve ``mesh`` from now on (a followed mesh config changed): every cached
        resource is dropped and a full push follows. False when nothing changed."""
        if mesh == self.mesh:
            return False
        self.mesh = mesh
        self._pipeline.set_mesh(mesh)
        self.cache.clear()
        self._debouncer.enqueue(PushRequest.everything(TriggerReason.GLOBAL))
        return True

    # -- knobs changed while running (the admin API) ------------------------------------

    def set_debounce(self, debounce: DebounceSettings) -> None:
        """Debounce by ``debounce`` from the next decision on; ``settings`` follows."""
        self._debouncer.reconfigure(debounce)
        self.settings = replace(self.settings, debounce=debounce)

    @property
    def push_throttle(self) -> int:
        """Concurrent pushes allowed now (the automatic default resolved)."""
        return self._workers.throttle

    def set_push_throttle(self, configured: int) -> int:
        """Allow ``configured`` concurrent pushes (0: the automatic default) from the next
        push taken off the queue on; returns the throttle now in force."""
        throttle = self._workers.set_throttle(configured)
        self.settings = replace(self.settings, push_throttle=configured)
        return throttle

    @property
    def worker_stats(self) -> PushWorkerStats:
        """The push workers' counters (pushes, failures, queue time, most at once)."""
        return self._workers.stats

    # -- events: the pipeline decides, the debouncer merges ------------------------------

    def _on_config_event(self, event: ConfigEvent) -> None:
        self._count_inbound("config", 1)
        request = self._pipeline.config_changed(event.key, time.monotonic())
        if request is not None:
            self._debouncer.enqueue(request)

    def _on_jwks_change(self, uri: str) -> None:
        """A key set changed: push the proxies of the RequestAuthentications naming it."""
        keys = [
            config.key
            for config in self.store.configs(REQUEST_AUTHENTICATION)
            if any(rule.jwks_uri == uri for rule in config.spec.jwt_rules)  # type: ignore[attr-defined]
        ]
        if keys:
            self._debouncer.enqueue(PushRequest.for_configs(keys, start=time.monotonic()))

    def _on_registry_update(self, update: RegistryUpdate) -> None:
        services = len(update.services)
        if not update.full:
            self._count_inbound("eds", max(1, services))
        else:
            deleted = sum(1 for key in update.services if self.registry.service(key) is None)
            self._count_inbound("svcdelete", deleted)
            self._count_inbound("svc", services - deleted if services else 1)
        now = time.monotonic()
        request = self._pipeline.registry_changed(update, now)
        if request is not None:
            self._debouncer.enqueue(request)
        self._push_own_sidecars(self._pipeline.workloads_changed(update, now))

    def _on_pods_changed(self, pods: frozenset[tuple[str, str]]) -> None:
        """istiod's ProxyUpdate for Pods: their sidecars are completed again from their
        Pod and get a push of their own (their labels, and the inbound ports their
        endpoints give, may have moved while only EDS went to the others)."""
        if self._pod_sidecars is not None and self._pipeline.context is not None:
            self._push_own_sidecars(self._pod_sidecars.changed(pods, time.monotonic()))

    def _push_own_sidecars(self, pushes: Iterable[tuple[Connection, PushRequest]]) -> None:
        """Queue a changed workload's own sidecars now, past the debouncer (as istiod's
        ProxyUpdate does): a Pod's, or those that were or are a WorkloadEntry."""
        for connection, request in pushes:
            self.stats.push_triggers["proxy"] = self.stats.push_triggers.get("proxy", 0) + 1
            self._queue.enqueue(connection, request)
            self.stats.connections_queued += 1

    def _count_inbound(self, kind: str, count: int) -> None:
        """pilot_inbound_updates: ``config`` per store event; per service changed, ``eds``
        (endpoints only), ``svc`` (definition) or ``svcdelete`` (gone)."""
        if count:
            updates = self.stats.inbound_updates
            updates[kind] = updates.get(kind, 0) + count

    # -- pushes: the pipeline plans, the server carries out ---------------------------

    async def _on_push(self, request: PushRequest) -> None:
        if self._pipeline.context is None:
            return
        for reason, count in request.reasons.items():
            self.stats.push_triggers[reason] = self.stats.push_triggers.get(reason, 0) + count
        # If planning raises (a bug building the context), the debouncer logs it and goes
        # on; the pipeline keeps the request and merges it into the next push.
        plan = self._pipeline.plan(request)
        if plan is None:
            return
        if plan.full:
            self.stats.context_builds += 1
            self.stats.full_pushes += 1
            self.metrics.context_init.observe(self.context.stats.build_seconds)
        else:
            keys = plan.request.configs_updated
            if has_secrets(keys):
                self.stats.secret_pushes += 1
            if not keys or not keys <= secret_keys(keys):
                self.stats.eds_pushes += 1
        for connection in plan.failed:  # logged by the pipeline
            self.stats.push_failures += 1
            connection.fail(INTERNAL_ERROR)
        for connection, pushed in plan.pushes:
            self._queue.enqueue(connection, pushed)
            self.stats.connections_queued += 1

    def _push_connection(
        self, connection: Connection, request: PushRequest
    ) -> asyncio.Future[None] | None:
        """Generate and queue ``connection``'s responses; what the push workers wait for
        until they are written (None: nothing to wait for). The workers give up waiting
        after ``send_timeout`` seconds, so a stalled stream keeps its push no longer."""
        if connection.id not in self.connections or connection.failure is not None:
            return None
        try:
            connection.push(request, time.time())
        except Exception:
            log.exception("generating a push for %s failed; closing its stream", connection.id)
            self.stats.push_failures += 1
            connection.fail(INTERNAL_ERROR)
            return None
        waiter = connection.when_written()
        if request.full and math.isfinite(request.start):
            # istiod's convergence time: first event of the change → this proxy's push sent
            start = request.start
            if waiter is None:
                self.metrics.convergence.observe(time.monotonic() - start)
            else:
                observe = self.metrics.convergence.observe
                waiter.add_done_callback(lambda _: observe(time.monotonic() - start))
        return waiter
