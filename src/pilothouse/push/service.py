"""The push service: every change, debounced and planned, pushed to the targets it concerns.

One VirtualService edit, left to right (DESIGN §1):

1. the ``fs://`` source reads the file and the store emits a ConfigEvent;
2. :meth:`PushService.config_changed` counts it (``pilot_inbound_updates``) and the
   pipeline turns it into a PushRequest (:meth:`PushPipeline.config_changed`);
3. the debouncer merges it with what else came meanwhile and releases one request;
4. the pipeline builds the new PushContext and plans it (:meth:`PushPipeline.plan`):
   the targets whose proxies can see the change, each with its request;
5. each pair waits in the push queue (one pending push per target, merging);
6. a push worker takes it, and :class:`~pilothouse.push.proxy_push.ProxyPushRules`
   decide what that target is sent (which types to skip, EDS only);
7. ``target.push(planned)``: the one hand-off into the xDS server, whose stream engine
   generates the responses; the worker waits until its stream writer has sent them.

Registry updates, changed Pods, changed key sets (a RequestAuthentication's jwksUri) and
fetched modules (a WasmPlugin's url) come in the same way (:meth:`registry_changed`,
:meth:`pods_changed`, :meth:`jwks_changed`, :meth:`wasm_module_arrived`); a changed
workload's own sidecars skip the debouncer and are queued at once, each for a push of
its own (istiod's ProxyUpdate). Faults stop at the target: one the pipeline reports
failed, or whose push raised, has its stream ended (:meth:`PushTarget.fail`); the others
are still pushed, and a plan that raises as a whole is logged by the debouncer and its
changes ride along with the next push.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.wasm_plugin import KIND as WASM_PLUGIN_KIND
from pilothouse.metrics.push import PushMetrics
from pilothouse.push.authorization import REQUEST_AUTHENTICATION
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.counters import PushCounters
from pilothouse.push.debounce import Debouncer, DebounceSettings
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.pod_sidecars import PodSidecars
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.proxy_push import ProxyPushRules
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.push.secrets import has_secrets, secret_keys
from pilothouse.push.signal import Waited
from pilothouse.push.target import PushTarget
from pilothouse.push.workers import PushWorkers, PushWorkerStats
from pilothouse.registry.aggregate import ServiceRegistry
from pilothouse.registry.update import RegistryUpdate
from pilothouse.settings import XdsSettings
from pilothouse.sources.events import ConfigEvent, ConfigStore

log = logging.getLogger("pilothouse.xds")
"""The log scope a failed push has always been reported in (``xds``)."""

T = TypeVar("T", bound=PushTarget)


class PushService(Generic[T]):
    """The debouncer, the push queue and the push workers of one discovery server, and
    the rules of what each target is pushed.

    :meth:`start` builds the first PushContext once :meth:`has_synced`; :meth:`run`
    runs the debouncer and the workers in a task group until :meth:`close`. Targets
    come and go through :meth:`connect` and :meth:`disconnect`. What changes cost is
    counted in ``counters`` and ``metrics``.
    """

    def __init__(
        self,
        pipeline: PushPipeline[T],
        store: ConfigStore,
        registry: ServiceRegistry,
        cache: ResourceCache,
        settings: XdsSettings,
        counters: PushCounters,
        metrics: PushMetrics,
        pod_sidecars: PodSidecars[T] | None = None,
    ) -> None:
        """``store`` and ``registry`` are read to count and scope changes (the store's
        events are subscribed to here); ``pod_sidecars`` (Kubernetes only) completes
        sidecars from their Pods and names the sidecars of changed Pods."""
        self._pipeline = pipeline
        self._store = store
        self._registry = registry
        self._cache = cache
        self._counters = counters
        self._metrics = metrics
        self._pod_sidecars = pod_sidecars
        self._rules: ProxyPushRules[T] = ProxyPushRules(self._endpoints_revision)
        self.queue: PushQueue[T] = PushQueue()
        self.workers: PushWorkers[T] = PushWorkers(
            self.queue,
            self._push_target,
            settings.push_throttle,
            observe_queue_time=metrics.queue_time.observe,
            deadline=settings.send_timeout,
            answered=_answered if settings.answer_wait > 0 else None,
            answer_wait=settings.answer_wait,
        )
        self.debouncer = Debouncer(
            settings.debounce,
            self._released,
            observe_debounce_time=metrics.debounce_time.observe,
        )
        self._unsubscribe = store.subscribe(self.config_changed)
        self._convergence: tuple[float, Callable[[object], None]] | None = None
        """The start of the change last pushed, and what observes its convergence."""

    # -- lifecycle --------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the store and the registry have their first complete state."""
        return self._store.has_synced() and self._registry.has_synced()

    def start(self, *, load_registry: bool = True) -> PushContext:
        """Build the first PushContext from the synced store (after the registry's first
        load of services and endpoints, unless ``load_registry`` is False)."""
        if load_registry:
            self._registry.initial_load()
        context = self._pipeline.start()
        self._counters.context_builds += 1
        self._metrics.context_init.observe(context.stats.build_seconds)
        return context

    def run(self, tasks: asyncio.TaskGroup) -> None:
        """Run the debouncer and the push workers in ``tasks`` until :meth:`close`."""
        tasks.create_task(self.debouncer.run())
        tasks.create_task(self.workers.run())

    def close(self) -> None:
        """Take no more changes and release nothing more; the workers finish the pushes
        in flight and stop."""
        self._unsubscribe()
        self._unsubscribe = _nothing
        self.debouncer.close()
        self.queue.shutdown()

    # -- targets ----------------------------------------------------------------------

    @property
    def context(self) -> PushContext | None:
        """The current PushContext; None until :meth:`start`."""
        return self._pipeline.context

    @property
    def version(self) -> str:
        return self._pipeline.version

    @property
    def pipeline(self) -> PushPipeline[T]:
        """The pipeline that plans this service's pushes (read by the impact of a change,
        :mod:`pilothouse.push.impact`, which plans without pushing)."""
        return self._pipeline

    @property
    def connections(self) -> Mapping[str, T]:
        """The connected targets, by id."""
        return self._pipeline.connections

    def complete(self, proxy: ProxyIdentity) -> ProxyIdentity:
        """``proxy`` with what the registry knows of it: a sidecar's labels, service
        account and locality from its Pod when Kubernetes is configured."""
        if self._pod_sidecars is None:
            return proxy
        return self._pod_sidecars.complete(proxy)

    def connect(self, target: T) -> None:
        self._pipeline.connect(target)

    def disconnect(self, target: T) -> None:
        """``target`` is gone: it is chosen no more, and its queued push is dropped."""
        self._pipeline.disconnect(target)
        self.queue.remove(target)
        self._rules.forget(target)

    def pending(self) -> int:
        """Targets queued or being pushed."""
        return self.queue.pending() + self.queue.in_flight()

    # -- knobs changed while running ----------------------------------------------------

    def set_mesh(self, mesh: MeshSettings) -> None:
        """Build from ``mesh`` from now on: every cached resource is dropped and a full
        push follows."""
        self._pipeline.set_mesh(mesh)
        self._cache.clear()
        self.request_push(PushRequest.everything(TriggerReason.GLOBAL))

    def set_debounce(self, debounce: DebounceSettings) -> None:
        self.debouncer.reconfigure(debounce)

    @property
    def throttle(self) -> int:
        """Concurrent pushes allowed now (the automatic default resolved)."""
        return self.workers.throttle

    def set_throttle(self, configured: int) -> int:
        """Allow ``configured`` concurrent pushes (0: the automatic default); returns the
        throttle now in force."""
        return self.workers.set_throttle(configured)

    @property
    def worker_stats(self) -> PushWorkerStats:
        return self.workers.stats

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

    def wasm_module_arrived(self, url: str) -> None:
        """A module was fetched: push the proxies of the WasmPlugins naming ``url``."""
        keys = [
            config.key
            for config in self._store.configs(WASM_PLUGIN_KIND.name)
            if config.spec.url == url  # type: ignore[attr-defined]
        ]
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

    def _push_own_sidecars(self, pushes: Iterable[tuple[T, PushRequest]]) -> None:
        """Queue a changed workload's own sidecars now, past the debouncer (as istiod's
        ProxyUpdate does): a Pod's, or those that were or are a WorkloadEntry."""
        counters = self._counters
        for target, request in pushes:
            counters.push_triggers["proxy"] = counters.push_triggers.get("proxy", 0) + 1
            self.queue.enqueue(target, request)
            counters.connections_queued += 1

    def _count_inbound(self, kind: str, count: int) -> None:
        """pilot_inbound_updates: ``config`` per store event; per service changed, ``eds``
        (endpoints only), ``svc`` (definition) or ``svcdelete`` (gone)."""
        if count:
            updates = self._counters.inbound_updates
            updates[kind] = updates.get(kind, 0) + count

    # -- pushes out: the pipeline plans, the queue holds, the workers push ---------------

    async def _released(self, request: PushRequest) -> None:
        """The debouncer released ``request``: plan it and queue each target's push."""
        if self._pipeline.context is None:
            return
        counters = self._counters
        for reason, count in request.reasons.items():
            counters.push_triggers[reason] = counters.push_triggers.get(reason, 0) + count
        # If planning raises (a bug building the context), the debouncer logs it and goes
        # on; the pipeline keeps the request and merges it into the next push.
        plan = self._pipeline.plan(request)
        if plan is None:
            return
        if plan.full:
            counters.context_builds += 1
            counters.full_pushes += 1
            context = self._pipeline.context  # the one the plan has just built
            if context is not None:
                self._metrics.context_init.observe(context.stats.build_seconds)
        else:
            keys = plan.request.configs_updated
            if has_secrets(keys):
                counters.secret_pushes += 1
            if not keys or not keys <= secret_keys(keys):
                counters.eds_pushes += 1
        for target in plan.failed:  # logged by the pipeline
            counters.push_failures += 1
            target.fail()
        for target, pushed in plan.pushes:
            self.queue.enqueue(target, pushed)
            counters.connections_queued += 1

    def _push_target(self, target: T, request: PushRequest) -> Waited | None:
        """Hand ``target`` its planned push; what the push workers wait for until its
        responses are written (None: nothing to wait for). The workers give up waiting
        after ``send_timeout`` seconds, so a stalled stream keeps its push no longer."""
        if target.id not in self._pipeline.connections or target.failure is not None:
            return None
        try:
            target.push(self._rules.plan(target, request), time.time())
        except Exception:
            log.exception("generating a push for %s failed; closing its stream", target.id)
            self._counters.push_failures += 1
            target.fail()
            return None
        waiter = target.when_written()
        if request.full and math.isfinite(request.start):
            # istiod's convergence time: first event of the change → this proxy's push sent
            if waiter is None:
                self._metrics.convergence.observe(time.monotonic() - request.start)
            else:
                waiter.add_done_callback(self._converged(request.start))
        return waiter

    def _converged(self, start: float) -> Callable[[object], None]:
        """What observes the convergence of a push started at ``start`` once written: one
        for every target of the same change (not one closure per target)."""
        last = self._convergence
        if last is not None and last[0] == start:
            return last[1]
        observe = self._metrics.convergence.observe

        def converged(_: object) -> None:
            observe(time.monotonic() - start)

        self._convergence = (start, converged)
        return converged

    def _endpoints_revision(self) -> int:
        return self._registry.endpoint_index.revision


def _answered(target: PushTarget) -> Waited | None:
    """What ``target``'s next push waits for: its proxy's answer to what it was sent."""
    return target.when_answered()


def _nothing() -> None:
    """What closing again unsubscribes."""
