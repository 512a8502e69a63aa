"""The discovery server: holds the wired stages and serves what streams ask of it.

Its parts are built in :mod:`pilothouse.xds.server.wiring`: the registry (ServiceEntries,
and Kubernetes when configured), the resource cache, the generators, and the push
service (:class:`~pilothouse.push.service.PushService`), which takes every change and
pushes the connections it concerns; the server hands it each connection as it comes and
goes, and delegates to it what admin and MCP ask of the push. The stream side reads it:
the current PushContext and version, the generator of each type URL, who is connected;
and streams report to it what they sent, wrote, NACKed and failed, counted for
``/metrics``. MCP-over-xDS clients (``GENERATOR=api``) are answered by the ``api``
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
from pilothouse.push.context import PushContext
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest
from pilothouse.push.workers import PushWorkerStats
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.settings import XdsSettings as XdsSettings
from pilothouse.sources.events import ConfigStore
from pilothouse.sources.gc_pause import collector_paused
from pilothouse.xds.generators.base import Generator
from pilothouse.xds.protocol.wire import FanOutResponses
from pilothouse.xds.server.admission import Admission
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.control_plane import ControlPlaneIdentity, replica_name
from pilothouse.xds.server.refusals import RefusalLog
from pilothouse.xds.server.stats import XdsStats, count_by_type
from pilothouse.xds.server.wiring import wire

log = logging.getLogger("pilothouse.xds")


class DiscoveryServer:
    """Holds the registry, the cache, the generators and the push service (``pushes``),
    and serves the streams from them."""

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
        self.stats = XdsStats()
        self.metrics = metrics if metrics is not None else PushMetrics()
        wired = wire(
            store,
            self.mesh,
            self.settings,
            self.stats,
            self.metrics,
            kube=kube,
            envoy_generators=envoy_generators,
            api_clock=api_clock,
        )
        self.cache, self.registry, self.kube = wired.cache, wired.registry, wired.kube
        self.jwks = wired.jwks
        """The key sets of RequestAuthentication jwksUris, fetched and inlined."""
        self.wasm_modules = wired.wasm_modules
        """The modules of WasmPlugin urls, fetched, checked and served inline over ECDS."""
        self.pushes = wired.pushes
        """The push service: debounces every change and pushes the connections it concerns."""
        self._generators, self._api = wired.generators, wired.api
        self._config_server = not envoy_generators
        self.admission = Admission(
            self.settings.admission,
            refusals=RefusalLog(
                kept=self.settings.refusals_kept, log_interval=self.settings.refusal_log_interval
            ),
        )
        """Who may open a stream (every gRPC stream on the xDS port passes it); its
        knobs can be changed at run time."""
        self._ids = itertools.count(1)
        self._closed = asyncio.Event()
        self._ready = asyncio.Event()
        port = _xds_port(self.settings)
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
        context = self.pushes.context
        if context is None:
            raise RuntimeError("no PushContext yet: the server is not ready")
        return context

    @property
    def connections(self) -> Mapping[str, Connection]:
        """The connected streams, by connection id."""
        return self.pushes.connections

    @property
    def endpoints(self) -> EndpointIndex:
        return self.registry.endpoint_index

    @property
    def version(self) -> str:
        return self.pushes.version

    def complete_proxy(self, proxy: ProxyIdentity) -> ProxyIdentity:
        """``proxy`` with what the registry knows of it: a sidecar's labels, service
        account and locality from its Pod when Kubernetes is configured."""
        return self.pushes.complete(proxy)

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
        self.pushes.connect(connection)
        log.debug("proxy connected", extra={"id": connection.id, "peer": connection.peer})

    def disconnect(self, connection: Connection) -> None:
        self.pushes.disconnect(connection)
        session = connection.engine.session
        count_by_type(self.stats.rejects, session.rejects)
        count_by_type(self.stats.expired_nonces, session.expired_nonces)
        log.debug("proxy disconnected", extra={"id": connection.id})

    # -- lifecycle --------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the sources, build the first context, then serve pushes until closed."""
        while not self.pushes.has_synced():
            if self._closed.is_set():
                return
            await asyncio.sleep(0.01)
        with collector_paused():  # a bulk load: nothing built here is garbage
            # services and endpoints are for Envoy config only
            self.pushes.start(load_registry=not self._config_server)
            if self._config_server:
                encoded = self._api.warm()  # sinks are what this role is for: be ready
                log.debug("encoded %d objects for MCP-over-xDS", encoded)
        self._ready.set()
        log.info(
            "xds ready",
            extra={"services": len(self.registry.services()), "version": self.version},
        )
        async with asyncio.TaskGroup() as tasks:
            self.pushes.run(tasks)
            if not self._config_server:
                tasks.create_task(self.jwks.run())
                tasks.create_task(self.wasm_modules.run())
            await self._closed.wait()
            self.pushes.close()
            self.jwks.close()
            self.wasm_modules.close()

    def close(self) -> None:
        self._closed.set()
        self.jwks.close()
        self.wasm_modules.close()
        self.pushes.close()
        for connection in list(self.connections.values()):
            connection.close()
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
        self.pushes.set_mesh(mesh)
        return True

    # -- knobs changed while running (the admin API) ------------------------------------

    def set_debounce(self, debounce: DebounceSettings) -> None:
        """Debounce by ``debounce`` from the next decision on; ``settings`` follows."""
        self.pushes.set_debounce(debounce)
        self.settings = replace(self.settings, debounce=debounce)

    @property
    def push_throttle(self) -> int:
        """Concurrent pushes allowed now (the automatic default resolved)."""
        return self.pushes.throttle

    def set_push_throttle(self, configured: int) -> int:
        """Allow ``configured`` concurrent pushes (0: the automatic default) from the next
        push taken off the queue on; returns the throttle now in force."""
        throttle = self.pushes.set_throttle(configured)
        self.settings = replace(self.settings, push_throttle=configured)
        return throttle

    @property
    def worker_stats(self) -> PushWorkerStats:
        """The push workers' counters (pushes, failures, queue time, most at once)."""
        return self.pushes.worker_stats


def _xds_port(settings: XdsSettings) -> int:
    """The port of the configured xDS address (0 when it is not one)."""
    try:
        return parse_host_port(settings.address, "xds.address").port
    except AddressError:
        return 0  # serve refuses such an address before it builds this server
