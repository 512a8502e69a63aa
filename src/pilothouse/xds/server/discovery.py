"""The discovery server: from config events to pushes on every affected connection.

Flow (DESIGN §1): store events and registry updates become PushRequests; the
debouncer releases one merged request at a time; a full request builds a new
PushContext (reusing untouched indexes) and evicts the cache entries of the changed
keys; an endpoint-only request takes the EDS fast path (no new context, no
CDS/LDS/RDS). Then only the connections the change concerns are queued: for a full
push, those whose scope sees a changed key (before or after the change); for an
endpoint push, those watching a changed service's clusters. MCP-over-xDS clients
(``GENERATOR=api``) are queued for every change of a kind they watch, whatever their
scope, and answered by the ``api`` generator, the fallback for every Istio GVK type.
Proxyless gRPC clients (``GENERATOR=grpc``, or a gRPC user agent) get the gRPC flavour
of CDS, LDS and RDS (:mod:`pilothouse.xds.generators.grpc_flavour`).
Push workers, bounded by ``push_throttle``, run each connection's push.

Faults stop at the connection: an exception while deciding whether to queue one
connection, or while generating its push, is logged and ends that connection's stream
with INTERNAL (the proxy reconnects and gets a fresh state); every other connection
is still queued and pushed, and the debouncer and the push workers keep running.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import itertools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pilothouse.config.mesh import MeshSettings
from pilothouse.push.cache import ResourceCache
from pilothouse.push.changes import registry_request
from pilothouse.push.context import PushContext, build_context
from pilothouse.push.debounce import Debouncer
from pilothouse.push.proxy import GeneratorFamily
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.push.workers import PushWorkers
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import service_hosts
from pilothouse.registry.update import RegistryUpdate
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
from pilothouse.xds.protocol.type_urls import short_name
from pilothouse.xds.protocol.versions import PushVersions
from pilothouse.xds.server.connection import INTERNAL_ERROR, Connection

log = logging.getLogger("pilothouse.xds")

_REGISTRY_KINDS = frozenset({"ServiceEntry", "WorkloadEntry"})


@dataclass
class XdsStats:
    """Counters for ``/metrics`` (istiod metric names)."""

    pushes: dict[str, int] = field(default_factory=dict)  # pilot_xds_pushes{type}
    push_triggers: dict[str, int] = field(default_factory=dict)  # pilot_push_triggers{type}
    rejects: dict[str, int] = field(default_factory=dict)  # pilot_total_xds_rejects{type}
    expired_nonces: dict[str, int] = field(default_factory=dict)  # pilot_xds_expired_nonce
    full_pushes: int = 0
    eds_pushes: int = 0
    connections_queued: int = 0
    context_builds: int = 0
    push_failures: int = 0
    """Connections closed with INTERNAL because generating or scoping their push raised."""


class DiscoveryServer:
    """Owns the registry, the push pipeline, the cache and the connections."""

    def __init__(
        self,
        store: ConfigStore,
        mesh: MeshSettings | None = None,
        settings: XdsSettings | None = None,
        *,
        envoy_generators: bool = True,
        api_clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        """``envoy_generators`` False serves Istio config only (the config-server role):
        CDS, EDS, LDS and RDS requests get empty answers. ``api_clock`` is when the
        ``api`` generator first sees an object (its MCP ``create_time``); wall time unless
        a test pins it."""
        self.store = store
        self.mesh = mesh if mesh is not None else MeshSettings()
        self.settings = settings if settings is not None else XdsSettings()
        self.cache = ResourceCache(self.settings.cache_size)
        self.stats = XdsStats()
        self.connections: dict[str, Connection] = {}
        self.registry = ServiceEntryRegistry(store, self._on_registry_update)
        self._unsubscribe = store.subscribe(self._on_config_event)
        self._versions = PushVersions()
        self._version = self._versions.next()
        self._context: PushContext | None = None
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
        self._api_connections: set[str] = set()
        self._queue: PushQueue[Connection] = PushQueue()
        self._workers: PushWorkers[Connection] = PushWorkers(
            self._queue, self._push_connection, self.settings.push_throttle
        )
        self._debouncer = Debouncer(self.settings.debounce, self._on_push)
        self._ids = itertools.count(1)
        self._closed = asyncio.Event()
        self._ready = asyncio.Event()
        self._unpushed: PushRequest | None = None
        """A push whose building raised: merged into the next one, so its changes are not lost."""

    # -- what connections and servicers read ------------------------------------------

    @property
    def context(self) -> PushContext:
        if self._context is None:
            raise RuntimeError("no PushContext yet: the server is not ready")
        return self._context

    @property
    def endpoints(self) -> EndpointIndex:
        return self.registry.endpoint_index

    @property
    def version(self) -> str:
        return self._version

    def generator(self, type_url: str) -> Generator | None:
        """The generator registered for ``type_url``; Istio GVKs fall back to ``api``."""
        found = self._generators.get(type_url)
        if found is None:
            found = self._api.for_type(type_url)
        return found

    def register_generator(self, generator: Generator) -> None:
        self._generators[generator.type_url] = generator

    def observe_send(self, connection: Connection, type_url: str, size: int) -> None:
        name = short_name(type_url).lower()
        self.stats.pushes[name] = self.stats.pushes.get(name, 0) + 1

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
        self.connections[connection.id] = connection
        if connection.proxy.generator is GeneratorFamily.API:
            self._api_connections.add(connection.id)
        log.debug("proxy connected", extra={"id": connection.id, "peer": connection.peer})

    def disconnect(self, connection: Connection) -> None:
        self.connections.pop(connection.id, None)
        self._api_connections.discard(connection.id)
        self._queue.remove(connection)
        session = connection.sotw if connection.sotw is not None else connection.delta_session
        if session is not None:
            for type_url, count in session.rejects.items():
                key = short_name(type_url).lower()
                self.stats.rejects[key] = self.stats.rejects.get(key, 0) + count
        log.debug("proxy disconnected", extra={"id": connection.id})

    # -- lifecycle --------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the sources, build the first context, then serve pushes until closed."""
        while not self.store.has_synced():
            if self._closed.is_set():
                return
            await asyncio.sleep(0.01)
        with collector_paused():  # a bulk load: nothing built here is garbage
            if not self._config_server:  # services and endpoints are for Envoy config only
                self.registry.initial_load()
            self._context = build_context(
                self.store, self.registry.services, self.mesh, self._version
            )
            if self._config_server:
                encoded = self._api.warm()  # sinks are what this role is for: be ready
                log.debug("encoded %d objects for MCP-over-xDS", encoded)
        self.stats.context_builds += 1
        self._ready.set()
        log.info(
            "xds ready",
            extra={"services": len(self.registry.services()), "version": self._version},
        )
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._debouncer.run())
            tasks.create_task(self._workers.run())
            await self._closed.wait()
            self._debouncer.close()
            self._queue.shutdown()

    def close(self) -> None:
        self._closed.set()
        self._debouncer.close()
        self._queue.shutdown()
        for connection in list(self.connections.values()):
            connection.close()
        self._unsubscribe()
        self.registry.close()

    def request_push(self, request: PushRequest) -> None:
        """Queue a push through the debouncer (e.g. ``/debug/adsz?push=true``)."""
        self._debouncer.enqueue(request)

    # -- events -----------------------------------------------------------------------

    def _on_config_event(self, event: ConfigEvent) -> None:
        if self._context is None:
            return  # the first PushContext is built from the whole store: nothing to push yet
        if event.key.kind in _REGISTRY_KINDS:
            # The registry turns these into service and endpoint updates, which do not
            # name the object itself; MCP-over-xDS clients watch the objects, so name it.
            if self._api_connections:
                self._debouncer.enqueue(
                    PushRequest.for_configs(
                        [event.key], TriggerReason.CONFIG, start=time.monotonic(), full=False
                    )
                )
            return
        self._debouncer.enqueue(
            PushRequest.for_configs([event.key], TriggerReason.CONFIG, start=time.monotonic())
        )

    def _on_registry_update(self, update: RegistryUpdate) -> None:
        if self._context is None:
            return
        self._debouncer.enqueue(registry_request(update, start=time.monotonic()))

    # -- pushes -----------------------------------------------------------------------

    async def _on_push(self, request: PushRequest) -> None:
        if self._context is None:
            return
        for reason, count in request.reasons.items():
            self.stats.push_triggers[reason] = self.stats.push_triggers.get(reason, 0) + count
        if self._unpushed is not None:
            request, self._unpushed = self._unpushed.merge(request), None
        try:
            self._push(request)
        except Exception:
            # A bug building the context (or choosing connections) for this change: the
            # debouncer logs it and goes on; the change rides along with the next push.
            self._unpushed = request
            raise

    def _push(self, request: PushRequest) -> None:
        self._version = self._versions.next()
        if request.full:
            self._full_push(request)
        else:
            self._endpoint_push(request)

    def _full_push(self, request: PushRequest) -> None:
        previous = self.context
        self.cache.invalidate(request.configs_updated)
        context = build_context(
            self.store, self.registry.services, self.mesh, self._version, previous, request
        )
        self._context = context
        self.stats.context_builds += 1
        self.stats.full_pushes += 1
        for connection in self._affected(request, previous, context):
            self._enqueue(connection, request)

    def _endpoint_push(self, request: PushRequest) -> None:
        self.cache.invalidate(request.configs_updated)
        hosts = service_hosts(request.configs_updated)
        self.stats.eds_pushes += 1
        for connection in list(self.connections.values()):
            try:
                if self._watches_changed_kind(connection, request):
                    # the api generator answers from the store: a per-connection full push
                    self._enqueue(connection, dataclasses.replace(request, full=True))
                elif connection.watches_any_host(hosts):
                    self._enqueue(connection, request)
            except Exception:
                self._fail(connection, "choosing an endpoint push")

    def _enqueue(self, connection: Connection, request: PushRequest) -> None:
        self._queue.enqueue(connection, request)
        self.stats.connections_queued += 1

    def _fail(self, connection: Connection, doing: str) -> None:
        """End one connection's stream after an exception while ``doing`` something for it
        (called from an ``except`` block: the traceback is logged)."""
        log.exception("%s for %s failed; closing its stream", doing, connection.id)
        self.stats.push_failures += 1
        connection.fail(INTERNAL_ERROR)

    def _affected(
        self, request: PushRequest, old: PushContext, new: PushContext
    ) -> Iterable[Connection]:
        """The connections whose proxies can see a changed key (scoped push)."""
        connections = list(self.connections.values())
        if request.is_everything or request.forced:
            return connections
        keys = request.configs_updated
        root = self.mesh.root_namespace
        verdicts: dict[tuple[object, object], bool] = {}
        chosen: list[Connection] = []
        for connection in connections:
            try:
                if self._watches_changed_kind(connection, request):
                    chosen.append(connection)
                    continue
                old_scope = old.scope(connection.proxy)
                new_scope = new.scope(connection.proxy)
                pair = (old_scope.key, new_scope.key)
                verdict = verdicts.get(pair)
                if verdict is None:
                    verdict = old_scope.key != new_scope.key or any(
                        old_scope.sees(k, root) or new_scope.sees(k, root) for k in keys
                    )
                    verdicts[pair] = verdict
            except Exception:
                self._fail(connection, "scoping a push")
                continue
            if verdict:
                chosen.append(connection)
        return chosen

    def _watches_changed_kind(self, connection: Connection, request: PushRequest) -> bool:
        """An MCP-over-xDS client (``GENERATOR=api``) watching a kind the request changed."""
        if connection.id not in self._api_connections:
            return False
        return not watched_kinds(connection.watched_types()).isdisjoint(request.kinds())

    async def _push_connection(self, connection: Connection, request: PushRequest) -> None:
        if connection.id not in self.connections or connection.failure is not None:
            return
        try:
            connection.push(request, time.time())
        except Exception:
            self._fail(connection, "generating a push")
            return
        await connection.written(self.settings.send_timeout)
