"""The discovery server: wires the stages together and serves what streams ask of it.

It builds the registry (ServiceEntries, and Kubernetes when configured), the push
pipeline (:class:`~pilothouse.push.pipeline.PushPipeline`), the resource cache and the
generators, and hands every change to its push loop
(:mod:`pilothouse.xds.server.push_loop`: debounce, plan, queue, push). The stream side
reads it: the current PushContext and version, the generator of each type URL, who is
connected; and streams report to it what they sent, wrote, NACKed and failed, counted
for ``/metrics``. MCP-over-xDS clients (``GENERATOR=api``) are answered by the ``api``
generator, the fallback for every Istio GVK type. Proxyless gRPC clients
(``GENERATOR=grpc``, or a gRPC user agent) get the gRPC flavour of CDS, LDS and RDS
(:mod:`pilothouse.xds.generators.grpc_flavour`).
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

from pilothouse.addresses import AddressError, parse_host_port
from pilothouse.config.mesh import MeshSettings
from pilothouse.metrics.push import PushMetrics, metric_type
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.pod_sidecars import PodSidecars
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.push.workers import PushWorkerStats
from pilothouse.registry.aggregate import AggregateRegistry, ServiceRegistry
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.kubernetes.registry import KubeFeeds, KubeRegistry
from pilothouse.security.jwks import JwksResolver
from pilothouse.security.jwks_addresses import JwksAddressPolicy
from pilothouse.settings import XdsSettings as XdsSettings
from pilothouse.sources.events import ConfigStore
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
from pilothouse.xds.protocol.versions import PushVersions
from pilothouse.xds.protocol.wire import FanOutResponses
from pilothouse.xds.server.admission import Admission
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.control_plane import ControlPlaneIdentity, replica_name
from pilothouse.xds.server.push_loop import PushLoop
from pilothouse.xds.server.refusals import RefusalLog
from pilothouse.xds.server.stats import XdsStats, count_by_type

log = logging.getLogger("pilothouse.xds")


class DiscoveryServer:
    """Wires the registry, the push pipeline, the cache and the generators; its push
    loop (``pushes``) carries out the pipeline's pushes on its connections."""

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
        self.admission = Admission(
            self.settings.admission,
            refusals=RefusalLog(
                kept=self.settings.refusals_kept, log_interval=self.settings.refusal_log_interval
            ),
        )
        """Who may open a stream (every gRPC stream on the xDS port passes it); its
        knobs can be changed at run time."""
        self.stats = XdsStats()
        self.metrics = metrics if metrics is not None else PushMetrics()
        # changes go to the push loop, made below once the pipeline it plans with exists
        service_entries = ServiceEntryRegistry(
            store, lambda update: self.pushes.registry_changed(update)
        )
        self.kube: KubeRegistry | None = None
        self.registry: ServiceRegistry = service_entries
        if kube is not None:
            self.kube = KubeRegistry(
                kube,
                service_entries.endpoint_index,
                lambda update: self.pushes.registry_changed(update),
                domain_suffix=self.mesh.domain_suffix,
                trust_domain=self.mesh.trust_domain,
                on_pods=lambda pods: self.pushes.pods_changed(pods),
            )
            self.registry = AggregateRegistry(service_entries, self.kube)
        self._versions = PushVersions()
        self.jwks = JwksResolver(
            lambda uri: self.pushes.jwks_changed(uri),
            fetch=self.settings.jwks_fetch,
            policy=JwksAddressPolicy(self.settings.jwks_allowed_hosts),
            named_by=lambda uri: [str(key) for key in self.pushes.jwks_users(uri)],
        )
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
        self.pushes = PushLoop(
            self._pipeline,
            store,
            self.registry,
            self.settings,
            self.stats,
            self.metrics,
            self._pod_sidecars,
        )
        """Debounces every change and carries out the pipeline's pushes."""
        self._unsubscribe = store.subscribe(self.pushes.config_changed)
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
        self._ids = itertools.count(1)
        self._closed = asyncio.Event()
        self._ready = asyncio.Event()
        try:
            port = parse_host_port(self.settings.address, "xds.address").port
        except AddressError:
            port = 0  # serve refuses such an address before it builds this server
        self.identity = ControlPlaneIdentity(replica_name(self.settings.replica_id, port))
        """Who this replica is, on every response (``control_plane.identifier``)."""
        self.responses = FanOutResponses()
        """SotW responses encoded once per push and content, shared by the streams they
        go to (``wire.FanOutResponses``)."""

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
        self.stats.send_failed(type_url)

    def record_internal_error(self) -> None:
        """A stream ended with INTERNAL: a fault of pilothouse's own."""
        self.stats.internal_errors += 1

    def rejects(self) -> dict[str, int]:
        """NACKs received so far, by istiod's type label: closed streams' and open ones'."""
        totals = dict(self.stats.rejects)
        for connection in self.connections.values():
            count_by_type(totals, connection.engine.session.rejects)
        return totals

    def expired_nonces(self) -> dict[str, int]:
        """Requests with an expired nonce so far, by type label, closed and open streams'."""
        totals = dict(self.stats.expired_nonces)
        for connection in self.connections.values():
            count_by_type(totals, connection.engine.session.expired_nonces)
        return totals

    def ready(self) -> bool:
        """True once every source has synced and the first PushContext exists."""
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    def pending_pushes(self) -> int:
        """Connections queued or being pushed (for tests, debug and metrics)."""
        return self.pushes.pending()

    def next_connection_id(self, proxy_id: str) -> str:
        return f"{proxy_id}-{next(self._ids)}"

    # -- connections ------------------------------------------------------------------

    def connect(self, connection: Connection) -> None:
        self._pipeline.connect(connection)
        log.debug("proxy connected", extra={"id": connection.id, "peer": connection.peer})

    def disconnect(self, connection: Connection) -> None:
        self._pipeline.disconnect(connection)
        self.pushes.forget(connection)
        session = connection.engine.session
        count_by_type(self.stats.rejects, session.rejects)
        count_by_type(self.stats.expired_nonces, session.expired_nonces)
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
            self.pushes.start(tasks)
            if not self._config_server:
                tasks.create_task(self.jwks.run())
            await self._closed.wait()
            self.pushes.close()
            self.jwks.close()

    def close(self) -> None:
        self._closed.set()
        self.jwks.close()
        self.pushes.close()
        for connection in list(self.connections.values()):
            connection.close()
        self._unsubscribe()
        self.registry.close()

    def request_push(self, request: PushRequest) -> None:
        """Queue a push through the debouncer (e.g. ``POST /admin/push``)."""
        self.pushes.request_push(request)

    def set_mesh(self, mesh: MeshSettings) -> bool:
        """Serve ``mesh`` from now on (a followed mesh config changed): every cached
        resource is dropped and a full push follows. False when nothing changed."""
        if mesh == self.mesh:
            return False
        self.mesh = mesh
        self._pipeline.set_mesh(mesh)
        self.cache.clear()
        self.pushes.request_push(PushRequest.everything(TriggerReason.GLOBAL))
        return True

    # -- knobs changed while running (the admin API) ------------------------------------

    def set_debounce(self, debounce: DebounceSettings) -> None:
        """Debounce by ``debounce`` from the next decision on; ``settings`` follows."""
        self.pushes.debouncer.reconfigure(debounce)
        self.settings = replace(self.settings, debounce=debounce)

    @property
    def push_throttle(self) -> int:
        """Concurrent pushes allowed now (the automatic default resolved)."""
        return self.pushes.workers.throttle

    def set_push_throttle(self, configured: int) -> int:
        """Allow ``configured`` concurrent pushes (0: the automatic default) from the next
        push taken off the queue on; returns the throttle now in force."""
        throttle = self.pushes.workers.set_throttle(configured)
        self.settings = replace(self.settings, push_throttle=configured)
        return throttle

    @property
    def worker_stats(self) -> PushWorkerStats:
        """The push workers' counters (pushes, failures, queue time, most at once)."""
        return self.pushes.workers.stats
