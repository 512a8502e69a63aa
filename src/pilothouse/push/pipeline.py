"""The push pipeline: config and registry changes in, ``(connection, PushRequest)`` pairs out.

This is where the push stage decides (DESIGN §1, push/ *drives* the push):

1. A change becomes a request: :meth:`PushPipeline.config_changed` for a store event,
   :meth:`PushPipeline.registry_changed` for a registry update (via
   :mod:`pilothouse.push.changes`). The push service feeds those requests to its
   debouncer.
2. A released (debounced) request is planned by :meth:`PushPipeline.plan`: the cache
   entries of the changed keys are evicted; a full request builds a new PushContext
   (reusing untouched indexes); an endpoint-only request takes the EDS fast path (no new
   context). Then only the connections the change concerns are chosen: for a full push,
   those whose scope sees a changed key (before or after the change), and for a kind
   whose objects select workloads (AuthorizationPolicy, RequestAuthentication,
   EnvoyFilter) those whose workload its old or new version selects, the change marked
   inert for the types neither version changes where the kind declares which
   (:mod:`pilothouse.push.selected_workloads`; one that reached a context before its
   request, as an unsettled DestinationRule does, follows its kind's uncompared
   audience, all types). A full push's request is queued per
   scope: DestinationRule changes that leave a scope's routes alone are marked inert
   for RDS in its connections' request (``affected_types.inert_for_scope``), so those
   connections do not regenerate routes; for an endpoint
   push, those watching a changed service's hosts or holding a changed SDS secret
   (:mod:`pilothouse.push.secrets`: a new workload certificate, trust bundle or
   credential is pushed this way, SDS only). MCP-over-xDS clients
   (``GENERATOR=api``) are chosen for every change of a kind they watch, whatever their
   scope (on the fast path with the request made full: the ``api`` generator answers
   from the store).
3. The :class:`PushPlan` names the pairs; the push service
   (:mod:`pilothouse.push.service`) queues them for its push workers and ends the
   streams of the connections reported failed.

A workload's own sidecars get a full push of their own (istiod's ProxyUpdate,
:mod:`pilothouse.push.own_sidecars`): their inbound clusters and listeners read the
workload's endpoints. :meth:`PushPipeline.workloads_changed` turns a WorkloadEntry's
endpoint change into a full push, queued at once, for the sidecars that were or are the
entry, while the update's EDS push still goes through the debouncer to everyone else.
A full registry update (a ServiceEntry changed) names the entries it selects; the full
push planned for it reaches their sidecars even where their scope does not see the
ServiceEntry. The pipeline files every connection in
:attr:`PushPipeline.own_sidecars`, which the Pods' ProxyUpdate
(:mod:`pilothouse.push.pod_sidecars`) reads too.

Faults stop at the connection: an exception while choosing one connection is logged
and that connection is reported in :attr:`PushPlan.failed`; every other connection is
still chosen. A plan that raises as a whole (a failed PushContext build) keeps its
request, which is merged into the next one, so no change is lost.

The pipeline knows connections only through
:class:`~pilothouse.push.target.ProxyWatches`, so push/ never imports the server.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.push.affected_types import inert_for_scope
from pilothouse.push.authorization import JwksLookup
from pilothouse.push.cache import ResourceCache
from pilothouse.push.changes import config_request, in_registry, registry_request
from pilothouse.push.context import PushContext, build_context
from pilothouse.push.own_sidecars import OwnSidecars, proxy_update
from pilothouse.push.proxy import GeneratorFamily
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.push.rule_reads import RuleReads, moved_rules
from pilothouse.push.secrets import has_secrets, secret_names
from pilothouse.push.selected_workloads import moved_selections, selected_change
from pilothouse.push.target import ProxyWatches
from pilothouse.push.wasm_plugins import ModuleLookup
from pilothouse.registry.model import Service, Workload, service_hosts
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.events import ConfigStore

log = logging.getLogger("pilothouse.push")


C = TypeVar("C", bound=ProxyWatches)


@dataclass(frozen=True, slots=True)
class PushPlan(Generic[C]):
    """What one released request comes to: the pairs to push and the connections that failed."""

    request: PushRequest
    """The request planned (merged with any request whose plan raised before)."""
    full: bool
    """True when a new PushContext was built; False for the EDS fast path."""
    pushes: tuple[tuple[C, PushRequest], ...]
    failed: tuple[C, ...]
    """Connections for which choosing raised (logged): their streams should end."""


class PushPipeline(Generic[C]):
    """The push stage's decisions: the current PushContext, the connections, and who is pushed.

    ``services`` is the registry's service list, ``next_version`` the source of push
    versions (the protocol's), ``api_kinds`` maps the type names an MCP-over-xDS client
    watches to the Kinds it watches.
    """

    def __init__(
        self,
        store: ConfigStore,
        services: Callable[[], tuple[Service, ...]],
        mesh: MeshSettings,
        cache: ResourceCache,
        *,
        next_version: Callable[[], str],
        api_kinds: Callable[[list[str]], frozenset[str]],
        jwks: JwksLookup | None = None,
        wasm_modules: ModuleLookup | None = None,
    ) -> None:
        self._store = store
        self._jwks = jwks
        self._wasm_modules = wasm_modules
        self._services = services
        self._mesh = mesh
        self._cache = cache
        self._next_version = next_version
        self._api_kinds = api_kinds
        self._version = next_version()
        self._context: PushContext | None = None
        self._connections: dict[str, C] = {}
        self._api_connections: set[str] = set()
        self._own_sidecars: OwnSidecars[C] = OwnSidecars()
        self._unpushed: PushRequest | None = None
        """A request whose plan raised: merged into the next one, so its changes are not lost."""
        self._unsettled: frozenset[ConfigKey] = frozenset()
        """DestinationRules that changed in a context before a request named them: the
        request that names them is not compared (see ``affected_types.inert_for_scope``)."""
        self._own_workloads: frozenset[Workload] = frozenset()
        """The workloads of full registry updates not planned yet: their sidecars join
        the next full push (every full update's request is merged into it)."""

    # -- state ------------------------------------------------------------------------

    @property
    def context(self) -> PushContext | None:
        """The current PushContext; None until :meth:`start`."""
        return self._context

    @property
    def version(self) -> str:
        return self._version

    @property
    def connections(self) -> Mapping[str, C]:
        return self._connections

    @property
    def own_sidecars(self) -> OwnSidecars[C]:
        """The connections by proxy id and by (namespace, IP)."""
        return self._own_sidecars

    def start(self) -> PushContext:
        """Build the first PushContext from the whole store."""
        self._context = build_context(
            self._store,
            self._services,
            self._mesh,
            self._version,
            jwks=self._jwks,
            wasm_modules=self._wasm_modules,
        )
        return self._context

    def set_mesh(self, mesh: MeshSettings) -> None:
        """Build every PushContext from now on with ``mesh``."""
        self._mesh = mesh

    def connect(self, connection: C) -> None:
        self._connections[connection.id] = connection
        self._own_sidecars.connect(connection)
        if connection.proxy.generator is GeneratorFamily.API:
            self._api_connections.add(connection.id)

    def disconnect(self, connection: C) -> None:
        self._connections.pop(connection.id, None)
        self._own_sidecars.disconnect(connection)
        self._api_connections.discard(connection.id)

    # -- changes into requests --------------------------------------------------------

    def config_changed(self, key: ConfigKey, start: float) -> PushRequest | None:
        """The push a store event for ``key`` asks for; None when there is nothing to push."""
        if self._context is None:
            return None  # the first PushContext is built from the whole store
        if in_registry(key):
            # The registry turns these into service and endpoint updates, which do not
            # name the object itself; MCP-over-xDS clients watch the objects, so name it.
            if not self._api_connections:
                return None
            return PushRequest.for_configs([key], TriggerReason.CONFIG, start=start, full=False)
        return config_request(key, start)

    def registry_changed(self, update: RegistryUpdate, start: float) -> PushRequest | None:
        """The push a registry update asks for; None before the first PushContext."""
        if self._context is None:
            return None
        if update.full and update.workloads:
            self._own_workloads |= update.workloads
        return registry_request(update, start)

    def workloads_changed(
        self, update: RegistryUpdate, start: float
    ) -> tuple[tuple[C, PushRequest], ...]:
        """istiod's ProxyUpdate for WorkloadEntries: the sidecars that were or are the
        changed entries (:meth:`OwnSidecars.of`), each with a full push naming the
        entries, to be queued now. Empty before the first PushContext, and for a full
        update: that one builds a new context first, and its planned push reaches them.

        The update's endpoints are already in the index and its services are unchanged,
        so the current context is the right one to generate from."""
        if self._context is None or update.full or not update.workloads:
            return ()
        sidecars = self._own_sidecars.of(update.workloads)
        if not sidecars:
            return ()
        request = proxy_update(update.config_keys, start)
        return tuple((connection, request) for connection in sidecars)

    # -- requests into pushes ---------------------------------------------------------

    def plan(self, request: PushRequest) -> PushPlan[C] | None:
        """Decide one released request; None before the first PushContext.

        If deciding raises (say, building the context), the request is kept and merged
        into the next one, and the exception propagates.
        """
        if self._context is None:
            return None
        if self._unpushed is not None:
            request, self._unpushed = self._unpushed.merge(request), None
        own, self._own_workloads = self._own_workloads, frozenset()
        try:
            self._version = self._next_version()
            if request.full:
                return self._full(request, self._context, own)
            self._own_workloads |= own  # only a full update names them: not planned yet
            return self._endpoints(request)
        except Exception:
            self._unpushed = request
            self._own_workloads |= own
            raise

    def preview(
        self, store: ConfigStore, request: PushRequest
    ) -> tuple[PushContext, tuple[tuple[C, PushRequest], ...], tuple[C, ...]]:
        """What planning the full ``request`` would do were the store ``store``: the
        PushContext it would build (from the current one, whose untouched indexes it
        reuses), the connections it would choose, each with the request queued for its
        scope, and those for which choosing raised. Nothing is changed: not the current
        context, the cache, the version nor the rules not settled yet
        (:mod:`pilothouse.push.impact`). LookupError before :meth:`start`."""
        previous = self._context
        if previous is None:
            raise LookupError("no PushContext yet: the server has not synced")
        context = self._build(store, previous, request)
        compared = self._unsettled if previous.mesh == context.mesh else None
        pushes, failed = self._affected(request, previous, context, compared)
        return context, pushes, failed

    def _build(
        self, store: ConfigStore, previous: PushContext, request: PushRequest
    ) -> PushContext:
        """The PushContext ``request`` makes of ``store``, from ``previous``."""
        return build_context(
            store,
            self._services,
            self._mesh,
            self._version,
            previous,
            request,
            self._jwks,
            self._wasm_modules,
        )

    def _full(
        self, request: PushRequest, previous: PushContext, own: frozenset[Workload]
    ) -> PushPlan[C]:
        self._cache.invalidate(request.configs_updated)
        context = self._build(self._store, previous, request)
        self._context = context
        unsettled = self._unsettled
        moved = moved_rules(previous.destination_rules, context.destination_rules)
        moved |= moved_selections(previous, context)
        self._unsettled = (unsettled - request.configs_updated) | (moved - request.configs_updated)
        # every type reads the mesh settings: across a change of them, nothing is compared
        compared = unsettled if previous.mesh == context.mesh else None
        pushes, failed = self._affected(request, previous, context, compared)
        if own:  # the sidecars of the entries a ServiceEntry selects, whatever they see
            taken = {connection for connection, _ in pushes}.union(failed)
            sidecars = self._own_sidecars.of(own)
            pushes += tuple((c, request) for c in sidecars if c not in taken)
        return PushPlan(request, True, pushes, failed)

    def _endpoints(self, request: PushRequest) -> PushPlan[C]:
        """The EDS fast path: no new context; the watchers of the changed hosts."""
        self._cache.invalidate(request.configs_updated)
        hosts = service_hosts(request.configs_updated)
        secrets = has_secrets(request.configs_updated)
        pushes: list[tuple[C, PushRequest]] = []
        failed: list[C] = []
        for connection in list(self._connections.values()):
            try:
                if self._watches_changed_kind(connection, request):
                    # the api generator answers from the store: a per-connection full push
                    pushes.append((connection, dataclasses.replace(request, full=True)))
                elif connection.watches_any_host(hosts) or (
                    secrets and self._holds_changed_secret(connection, request)
                ):
                    pushes.append((connection, request))
            except Exception:
                self._failed(connection, "choosing an endpoint push", failed)
        return PushPlan(request, False, tuple(pushes), tuple(failed))

    def _affected(
        self,
        request: PushRequest,
        old: PushContext,
        new: PushContext,
        unsettled: frozenset[ConfigKey] | None,
    ) -> tuple[tuple[tuple[C, PushRequest], ...], tuple[C, ...]]:
        """The connections whose proxies can see a changed key (scoped push), each with the
        request queued for its scope (``affected_types.inert_for_scope``, leaving the
        rules in ``unsettled`` uncompared; None: nothing compared), and the connections
        for which deciding that raised."""
        connections = list(self._connections.values())
        if request.is_everything or request.forced:
            return tuple((c, request) for c in connections), ()
        root = self._mesh.root_namespace
        # the kinds whose objects select workloads are asked per proxy, not per scope
        selected = selected_change(request.configs_updated, old, new, unsettled)
        keys = selected.others
        verdicts: dict[tuple[object, object], bool] = {}
        queued: dict[tuple[object, object], PushRequest] = {}
        reads: RuleReads = {}
        chosen: list[tuple[C, PushRequest]] = []
        failed: list[C] = []
        for connection in connections:
            try:
                if self._watches_changed_kind(connection, request):
                    chosen.append((connection, request))
                    continue
                old_scope = old.scope(connection.proxy)
                new_scope = new.scope(connection.proxy)
                pair = (old_scope.key, new_scope.key)
                verdict = verdicts.get(pair)
                if verdict is None:
                    verdict = (
                        old_scope.key != new_scope.key
                        or any(old_scope.sees(k, root) or new_scope.sees(k, root) for k in keys)
                        or selected.seen_by(old_scope, new_scope, root)
                    )
                    verdicts[pair] = verdict
                if not verdict and selected.compared:
                    verdict = selected.selects(connection.proxy)
                if not verdict:
                    continue
                scoped = queued.get(pair)
                if scoped is None:
                    scoped = queued[pair] = (
                        request
                        if unsettled is None
                        else inert_for_scope(request, old_scope, new_scope, unsettled, reads)
                    )
                    if selected.inert:
                        scoped = queued[pair] = scoped.with_inert(scoped.inert | selected.inert)
            except Exception:
                self._failed(connection, "scoping a push", failed)
                continue
            chosen.append((connection, scoped))
        return tuple(chosen), tuple(failed)

    @staticmethod
    def _holds_changed_secret(connection: C, request: PushRequest) -> bool:
        """Whether the connection watches an SDS secret the request replaces for it."""
        names = secret_names(request.configs_updated, connection.proxy)
        return bool(names) and connection.watches_secrets(names)

    def _watches_changed_kind(self, connection: C, request: PushRequest) -> bool:
        """An MCP-over-xDS client (``GENERATOR=api``) watching a kind the request changed."""
        if connection.id not in self._api_connections:
            return False
        return not self._api_kinds(connection.watched_types()).isdisjoint(request.kinds())

    @staticmethod
    def _failed(connection: C, doing: str, failed: list[C]) -> None:
        """Report one connection after an exception while ``doing`` something for it
        (called from an ``except`` block: the traceback is logged)."""
        log.exception("%s for %s failed; closing its stream", doing, connection.id)
        failed.append(connection)
