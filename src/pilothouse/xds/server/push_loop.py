"""The server's push loop: every change, debounced and planned, carried out on the connections.

Flow (DESIGN §1), left to right: a store event, a registry update or a changed key set
(a RequestAuthentication's jwksUri) is counted (``pilot_inbound_updates``) and turned
into a PushRequest by the push pipeline (:class:`~pilothouse.push.pipeline.PushPipeline`);
the debouncer releases one merged request at a time; the pipeline plans it (cache
invalidation, PushContext build or the EDS fast path, scoped choice of connections)
into ``(connection, PushRequest)`` pairs; each pair is queued, and the push workers,
bounded by ``push_throttle``, run each connection's push and wait until its responses
are written (at most ``send_timeout`` seconds, so a stalled stream keeps its push no
longer). A changed Pod or WorkloadEntry's own sidecars skip the debouncer: they are
queued at once, each for a push of its own (istiod's ProxyUpdate).

Faults stop at the connection: a connection the pipeline reports failed (choosing it
raised), or whose push raised while generating, has its stream ended with INTERNAL (the
proxy reconnects and gets a fresh state); every other connection is still queued and
pushed, and the debouncer and the push workers keep running. A plan that raises as a
whole is logged by the debouncer and its changes ride along with the next push.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Iterable

from pilothouse.config.model import ConfigKey
from pilothouse.metrics.push import PushMetrics
from pilothouse.push.authorization import REQUEST_AUTHENTICATION
from pilothouse.push.debounce import Debouncer
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.pod_sidecars import PodSidecars
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest
from pilothouse.push.secrets import has_secrets, secret_keys
from pilothouse.push.workers import PushWorkers
from pilothouse.registry.aggregate import ServiceRegistry
from pilothouse.registry.update import RegistryUpdate
from pilothouse.settings import XdsSettings
from pilothouse.sources.events import ConfigEvent, ConfigStore
from pilothouse.xds.server.connection import INTERNAL_ERROR, Connection
from pilothouse.xds.server.stats import XdsStats

log = logging.getLogger("pilothouse.xds")


class PushLoop:
    """The debouncer, the push queue and the push workers of one discovery server.

    Changes come in through :meth:`config_changed`, :meth:`registry_changed`,
    :meth:`jwks_changed` and :meth:`pods_changed` (or :meth:`request_push`); what they
    cost is counted in ``stats`` and ``metrics``. :meth:`start` runs the debouncer and
    the workers in the server's task group, :meth:`close` stops them.
    """

    def __init__(
        self,
        pipeline: PushPipeline[Connection],
        store: ConfigStore,
        registry: ServiceRegistry,
        settings: XdsSettings,
        stats: XdsStats,
        metrics: PushMetrics,
        pod_sidecars: PodSidecars[Connection] | None = None,
    ) -> None:
        """``store`` and ``registry`` are read to count and scope changes; ``pod_sidecars``
        (Kubernetes only) names the sidecars of changed Pods."""
        self._pipeline = pipeline
        self._store = store
        self._registry = registry
        self._stats = stats
        self._metrics = metrics
        self._pod_sidecars = pod_sidecars
        self.queue: PushQueue[Connection] = PushQueue()
        self.workers: PushWorkers[Connection] = PushWorkers(
            self.queue,
            self._push_connection,
            settings.push_throttle,
            observe_queue_time=metrics.queue_time.observe,
            deadline=settings.send_timeout,
        )
        self.debouncer = Debouncer(
            settings.debounce,
            self._on_push,
            observe_debounce_time=metrics.debounce_time.observe,
        )

    # -- lifecycle --------------------------------------------------------------------

    def start(self, tasks: asyncio.TaskGroup) -> None:
        """Run the debouncer and the push workers in ``tasks`` until :meth:`close`."""
        tasks.create_task(self.debouncer.run())
        tasks.create_task(self.workers.run())

    def close(self) -> None:
        """Release nothing more; the workers finish the pushes in flight and stop."""
        self.debouncer.close()
        self.queue.shutdown()

    def pending(self) -> int:
        """Connections queued or being pushed."""
        return self.queue.pending() + self.queue.in_flight()

    def forget(self, connection: Connection) -> None:
        """``connection`` is gone: its queued push, if any, is dropped."""
        self.queue.remove(connection)

    # -- changes in: the pipeline decides, the debouncer merges --------------------------

    def request_push(self, request: PushRequest) -> None:
        """Queue ``request`` through the debouncer."""
        self.debouncer.enqueue(request)

    def config_changed(self, event: ConfigEvent) -> None:
        self._count_inbound("config", 1)
        request = self._pipeline.config_changed(event.key, time.monotonic())
        if request is not None:
            self.debouncer.enqueue(request)

    def jwks_users(self, uri: str) -> list[ConfigKey]:
        """The RequestAuthentications whose rules name ``uri`` as their ``jwksUri``."""
        return [
            config.key
            for config in self._store.configs(REQUEST_AUTHENTICATION)
            if any(rule.jwks_uri == uri for rule in config.spec.jwt_rules)  # type: ignore[attr-defined]
        ]

    def jwks_changed(self, uri: str) -> None:
        """A key set changed: push the proxies of the RequestAuthentications naming it."""
        keys = self.jwks_users(uri)
        if keys:
            self.debouncer.enqueue(PushRequest.for_configs(keys, start=time.monotonic()))

    def registry_changed(self, update: RegistryUpdate) -> None:
        services = len(update.services)
        if not update.full:
            self._count_inbound("eds", max(1, services))
        else:
            deleted = sum(1 for key in update.services if self._registry.service(key) is None)
            self._count_inbound("svcdelete", deleted)
            self._count_inbound("svc", services - deleted if services else 1)
        now = time.monotonic()
        request = self._pipeline.registry_changed(update, now)
        if request is not None:
            self.debouncer.enqueue(request)
        self._push_own_sidecars(self._pipeline.workloads_changed(update, now))

    def pods_changed(self, pods: frozenset[tuple[str, str]]) -> None:
        """istiod's ProxyUpdate for Pods: their sidecars are completed again from their
        Pod and get a push of their own (their labels, and the inbound ports their
        endpoints give, may have moved while only EDS went to the others)."""
        if self._pod_sidecars is not None and self._pipeline.context is not None:
            self._push_own_sidecars(self._pod_sidecars.changed(pods, time.monotonic()))

    def _push_own_sidecars(self, pushes: Iterable[tuple[Connection, PushRequest]]) -> None:
        """Queue a changed workload's own sidecars now, past the debouncer (as istiod's
        ProxyUpdate does): a Pod's, or those that were or are a WorkloadEntry."""
        stats = self._stats
        for connection, request in pushes:
            stats.push_triggers["proxy"] = stats.push_triggers.get("proxy", 0) + 1
            self.queue.enqueue(connection, request)
            stats.connections_queued += 1

    def _count_inbound(self, kind: str, count: int) -> None:
        """pilot_inbound_updates: ``config`` per store event; per service changed, ``eds``
        (endpoints only), ``svc`` (definition) or ``svcdelete`` (gone)."""
        if count:
            updates = self._stats.inbound_updates
            updates[kind] = updates.get(kind, 0) + count

    # -- pushes out: the pipeline plans, the loop carries out ---------------------------

    async def _on_push(self, request: PushRequest) -> None:
        if self._pipeline.context is None:
            return
        stats = self._stats
        for reason, count in request.reasons.items():
            stats.push_triggers[reason] = stats.push_triggers.get(reason, 0) + count
        # If planning raises (a bug building the context), the debouncer logs it and goes
        # on; the pipeline keeps the request and merges it into the next push.
        plan = self._pipeline.plan(request)
        if plan is None:
            return
        if plan.full:
            stats.context_builds += 1
            stats.full_pushes += 1
            context = self._pipeline.context  # the one the plan has just built
            if context is not None:
                self._metrics.context_init.observe(context.stats.build_seconds)
        else:
            keys = plan.request.configs_updated
            if has_secrets(keys):
                stats.secret_pushes += 1
            if not keys or not keys <= secret_keys(keys):
                stats.eds_pushes += 1
        for connection in plan.failed:  # logged by the pipeline
            stats.push_failures += 1
            connection.fail(INTERNAL_ERROR)
        for connection, pushed in plan.pushes:
            self.queue.enqueue(connection, pushed)
            stats.connections_queued += 1

    def _push_connection(
        self, connection: Connection, request: PushRequest
    ) -> asyncio.Future[None] | None:
        """Generate and queue ``connection``'s responses; what the push workers wait for
        until they are written (None: nothing to wait for). The workers give up waiting
        after ``send_timeout`` seconds, so a stalled stream keeps its push no longer."""
        if connection.id not in self._pipeline.connections or connection.failure is not None:
            return None
        try:
            connection.push(request, time.time())
        except Exception:
            log.exception("generating a push for %s failed; closing its stream", connection.id)
            self._stats.push_failures += 1
            connection.fail(INTERNAL_ERROR)
            return None
        waiter = connection.when_written()
        if request.full and math.isfinite(request.start):
            # istiod's convergence time: first event of the change → this proxy's push sent
            start = request.start
            if waiter is None:
                self._metrics.convergence.observe(time.monotonic() - start)
            else:
                observe = self._metrics.convergence.observe
                waiter.add_done_callback(lambda _: observe(time.monotonic() - start))
        return waiter
