"""``/debug/*`` on the admin app: istiod's debug endpoints, loopback only by default.

========================  ==========================================================
path                      answer (JSON)
========================  ==========================================================
``/debug``                the list of these endpoints
``/debug/syncz``          per proxy: type, versions, ``{cluster,listener,route,
                          endpoint}_{sent,acked}`` and ``resources`` per type URL
                          (``?namespace=`` filters); see :mod:`pilothouse.xds.server.syncz`
``/debug/config_dump``    ``?proxyID=<pod.ns or node id>``: what pilothouse would send
                          that proxy as Envoy's ``/config_dump`` (``types=cds,lds,...``
                          picks parts; ``include_eds=true`` adds endpoints); 404 when the
                          proxy is not connected to this replica
``/debug/configz``        every config object (``?namespace=``, ``?kind=`` as ``get``
                          takes it: ``vs``, ``virtualservices``, ``vs,dr``; an unknown
                          kind is a 400 naming the kinds)
``/debug/registryz``      every service
``/debug/endpointShardz`` endpoints by hostname, namespace and shard (also served as
                          ``/debug/endpointz``, the name istiod used before)
``/debug/adsz``           every stream: id, time, address, labels, metadata, locality,
                          watches (``?push=`` is refused with 400: a push is
                          ``POST /admin/push``)
``/debug/connections``    every stream: id, time, address
``/debug/push_status``    the current PushContext's figures and the push counters
``/debug/sources``        each config source's state, with its files' problems at
                          ``file:line``
``/debug/acked``          ``?proxyID=``: digests of what that proxy acknowledged, for
                          the Inspector (:mod:`pilothouse.admin.acked`)
``/debug/refusals``       refused xDS connections and streams: counts by reason and the
                          latest few (:mod:`pilothouse.admin.refusals`)
``/debug/envoyfilterz``   every EnvoyFilter patch and what it did: applied, matched
                          nothing, reached no proxy yet, or dropped
                          (:mod:`pilothouse.push.envoy_filter_status`)
``/debug/telemetryz``     each connected proxy's effective Telemetry: access logs,
                          tracing, what is accepted and not applied
                          (:mod:`pilothouse.admin.telemetryz`)
``/debug/analyzez``       the latest analysis of the served config: istioctl analyze's
                          messages (:mod:`pilothouse.admin.analysis`)
``/debug/gateway_apiz``   the status of every Gateway API object (``?namespace=``),
                          as ``--write-status`` would write it
                          (:mod:`pilothouse.kinds.gateway_api.status`)
``POST /debug/impact``    candidate objects in, what they would push to each proxy
                          connected here out (:mod:`pilothouse.admin.impact`)
========================  ==========================================================

Every endpoint only reads: none pushes, changes config or state (what acts is a POST or
PUT on the admin API, :mod:`pilothouse.admin.api`, behind its access policy). All are
GETs but ``/debug/impact``, a POST because objects are its input; it changes nothing.
Every endpoint answers only a client on loopback unless
``PILOTHOUSE_DEBUG_ALLOW_REMOTE`` is set (:mod:`pilothouse.boundary.debug_access`);
anyone else gets 403 saying so. Any other ``/debug/...`` handler on the admin app should
be wrapped in :func:`debug_only` to follow the same rule. Errors have the admin app's
shape, ``{"error", "status"}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from aiohttp import web

from pilothouse.admin.acked import acked_routes
from pilothouse.admin.debug_views import (
    NamedSource,
    adsz,
    configz,
    connectionz,
    push_status,
    registryz,
    sources_view,
)
from pilothouse.admin.gateway_api_view import gateway_apiz
from pilothouse.admin.impact import impact_handler
from pilothouse.admin.refusals import refusal_routes
from pilothouse.admin.telemetryz import telemetryz
from pilothouse.boundary.contain import json_answer, json_error
from pilothouse.boundary.debug_access import debug_denial
from pilothouse.kinds.names import UnknownKind, resolve_kinds
from pilothouse.kinds.table import SCHEMAS
from pilothouse.xds.server.debug_view import DebugView

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ENDPOINTS: Final = (
    ("/debug/syncz", "sync status of every proxy connected to this replica (?namespace=)"),
    ("/debug/config_dump", "?proxyID=: what this replica would send that proxy"),
    ("/debug/configz", "every config object (?namespace=, ?kind=)"),
    ("/debug/registryz", "every service"),
    ("/debug/endpointShardz", "endpoints by hostname, namespace and shard"),
    ("/debug/endpointz", "the same (istiod's older name)"),
    ("/debug/adsz", "every xDS stream and what it watches (to push: POST /admin/push)"),
    ("/debug/connections", "every xDS stream"),
    ("/debug/push_status", "the current PushContext and the push counters"),
    ("/debug/sources", "each config source's state and problems"),
    ("/debug/acked", "?proxyID=: digests of what that proxy acknowledged (the Inspector)"),
    ("/debug/refusals", "refused xDS connections and streams: counts by reason, latest few"),
    ("/debug/envoyfilterz", "every EnvoyFilter patch: applied, matched nothing, no proxy, dropped"),
    ("/debug/telemetryz", "each proxy's effective Telemetry, and what is not applied"),
    ("/debug/analyzez", "the latest analysis of the served config (pilothouse analyze's checks)"),
    ("/debug/gateway_apiz", "the status of every Gateway API object (?namespace=)"),
    ("/debug/impact", "POST objects: what applying them would push to each proxy (no change)"),
)


def debug_only(handler: Handler, *, allow_remote: bool) -> Handler:
    """``handler``, answering 403 to any peer that is not on loopback unless
    ``allow_remote``."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        denial = debug_denial(request.remote, allow_remote=allow_remote)
        if denial is not None:
            return json_error(403, denial)
        return await handler(request)

    return guarded


class DebugEndpoints:
    """The handlers, over one discovery server's debug view and the config sources
    ``serve`` runs."""

    def __init__(self, discovery: DebugView, sources: Sequence[NamedSource] = ()) -> None:
        self._discovery = discovery
        self._sources = tuple(sources)

    def routes(self) -> list[web.RouteDef]:
        allow = self._discovery.settings.debug_allow_remote
        handlers: dict[str, Handler] = {
            "/debug": self.index,
            "/debug/": self.index,
            "/debug/syncz": self.syncz,
            "/debug/config_dump": self.config_dump,
            "/debug/configz": self.configz,
            "/debug/registryz": self.registryz,
            "/debug/endpointShardz": self.endpoint_shardz,
            "/debug/endpointz": self.endpoint_shardz,
            "/debug/adsz": self.adsz,
            "/debug/connections": self.connections,
            "/debug/push_status": self.push_status,
            "/debug/sources": self.sources,
            "/debug/envoyfilterz": self.envoy_filterz,
            "/debug/telemetryz": self.telemetryz,
            "/debug/gateway_apiz": self.gateway_apiz,
        }
        for acked in acked_routes(self._discovery):
            handlers[acked.path] = acked.handler
        for refusals in refusal_routes(self._discovery):
            handlers[refusals.path] = refusals.handler
        routes = [web.get(path, debug_only(h, allow_remote=allow)) for path, h in handlers.items()]
        impact = impact_handler(self._discovery)
        return [*routes, web.post(impact.path, debug_only(impact.handler, allow_remote=allow))]

    async def index(self, request: web.Request) -> web.Response:
        return json_answer({"endpoints": [{"path": p, "about": a} for p, a in ENDPOINTS]})

    async def syncz(self, request: web.Request) -> web.Response:
        return json_answer(self._discovery.syncz(request.query.get("namespace", "")))

    async def config_dump(self, request: web.Request) -> web.Response:
        discovery = self._discovery
        proxy_id = request.query.get("proxyID", "")
        if not proxy_id:
            return json_error(400, "give the proxy: /debug/config_dump?proxyID=<pod.namespace>")
        try:
            types = discovery.dump_types(
                request.query.get("types", ""),
                include_eds=request.query.get("include_eds", "").lower() == "true",
            )
        except ValueError as bad:
            return json_error(400, str(bad))
        connection = discovery.find_connection(proxy_id)
        if connection is None:
            return json_error(
                404,
                f"proxy {proxy_id} is not connected to this pilothouse instance "
                f"(replica {discovery.replica})",
            )
        if not discovery.ready():
            return json_error(503, "pilothouse is not ready: config has not synced yet")
        return json_answer(discovery.config_dump(connection, types))

    async def configz(self, request: web.Request) -> web.Response:
        wanted = request.query.get("kind", "")
        try:
            kinds = {schema.kind for schema in resolve_kinds(wanted, SCHEMAS)} if wanted else set()
        except UnknownKind as unknown:
            known = ", ".join(sorted(schema.kind for schema in SCHEMAS))
            return json_error(400, f"{unknown}; the kinds are {known}")
        store = self._discovery.store
        configs = [found for key in store.keys() if (found := store.get(key)) is not None]
        return json_answer(
            configz(configs, namespace=request.query.get("namespace", ""), kinds=kinds)
        )

    async def registryz(self, request: web.Request) -> web.Response:
        return json_answer(registryz(self._discovery.services()))

    async def endpoint_shardz(self, request: web.Request) -> web.Response:
        return json_answer(self._discovery.endpoint_shards())

    async def adsz(self, request: web.Request) -> web.Response:
        if "push" in request.query:
            return json_error(
                400,
                "GET /debug/adsz only reads and no longer pushes; "
                "queue a full push with POST /admin/push",
            )
        return json_answer(adsz(self._discovery.connections()))

    async def connections(self, request: web.Request) -> web.Response:
        return json_answer(connectionz(self._discovery.connections()))

    async def push_status(self, request: web.Request) -> web.Response:
        return json_answer(push_status(self._discovery))

    async def sources(self, request: web.Request) -> web.Response:
        return json_answer({"sources": sources_view(self._sources)})

    async def envoy_filterz(self, request: web.Request) -> web.Response:
        if not self._discovery.ready():
            return json_answer({"patches": []})
        reports = self._discovery.context.envoy_filters.statuses()
        return json_answer({"patches": [r.view() for r in reports]})

    async def telemetryz(self, request: web.Request) -> web.Response:
        return json_answer(telemetryz(self._discovery))

    async def gateway_apiz(self, request: web.Request) -> web.Response:
        return json_answer(gateway_apiz(self._discovery, request.query.get("namespace", "")))


def debug_routes(discovery: DebugView, sources: Sequence[NamedSource] = ()) -> list[web.RouteDef]:
    """The routes to mount on the admin app (``build_admin_app(..., routes=...)``)."""
    return DebugEndpoints(discovery, sources).routes()
