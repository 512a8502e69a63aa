"""The admin application: ``/ready``, ``/healthz``, ``/version`` and REST discovery on one
aiohttp app.

:func:`build_admin_app` is the one place routes are mounted. Other handlers
(``/metrics`` from :func:`pilothouse.admin.metrics.metrics_routes`, ``/debug/*``)
come in through ``routes`` or by adding to the app's router before the server starts;
they find the discovery server's debug view
(:class:`~pilothouse.xds.server.debug_view.DebugView`) and the REST endpoint under the
typed keys :data:`DISCOVERY` and :data:`REST`. The REST endpoint is built where the
server is wired (``serve``) and handed in: admin/ reads the xDS server through its debug
view only.

Every request is contained (:func:`~pilothouse.boundary.contain.containment`): an
exception any handler lets out is logged and answered 500 with a generic message, and
404, 405 and unreadable bodies are answered in REST discovery's JSON error shape.
Every request must name this server in its ``Host`` header
(:mod:`pilothouse.boundary.host_check`), whatever its path: 421 otherwise, 400 without one.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Protocol

from aiohttp import web
from aiohttp.typedefs import Middleware

from pilothouse import __version__
from pilothouse.admin.readiness import (
    PendingSource,
    ReadinessCheck,
    SourceStates,
    all_checks,
    missing,
)
from pilothouse.bootstrap.envoy import XDS_REST_CLUSTER
from pilothouse.boundary.contain import containment, json_error
from pilothouse.boundary.host_check import host_check
from pilothouse.boundary.host_names import ServerNames
from pilothouse.settings import RestSettings
from pilothouse.xds.server.debug_view import DebugView


class RestEndpoint(Protocol):
    """REST discovery as the admin app mounts it
    (:class:`~pilothouse.xds.server.rest.RestDiscovery`)."""

    @property
    def settings(self) -> RestSettings: ...

    def routes(self) -> list[web.RouteDef]: ...


DISCOVERY: Final = web.AppKey("discovery", DebugView)
REST: Final = web.AppKey("rest", RestEndpoint)
CHECKS: Final[web.AppKey[tuple[ReadinessCheck, ...]]] = web.AppKey("readiness_checks")
SOURCES: Final[web.AppKey[SourceStates]] = web.AppKey("source_states")

_log = logging.getLogger("pilothouse.admin")


def build_admin_app(
    discovery: DebugView,
    readiness_checks: Sequence[ReadinessCheck] = (),
    *,
    rest: RestEndpoint | None = None,
    routes: Iterable[web.RouteDef] = (),
    source_states: SourceStates | None = None,
    names: ServerNames | None = None,
    sources: Callable[[], Iterable[PendingSource]] | None = None,
    middlewares: Iterable[Middleware] = (),
) -> web.Application:
    """The admin app for ``discovery`` (the discovery server's debug view), serving REST
    discovery with ``rest`` when given.

    ``/ready`` passes when the config sources have synced, the discovery server is
    ready and every one of ``readiness_checks`` returns None; until then it names each of
    ``sources`` that has not synced, and why. With ``source_states`` its
    body also lists each config source's state (an unavailable source keeps serving its
    last good config, so it does not fail readiness); ``/ready?format=json`` (or
    ``Accept: application/json``) answers ``{"ready", "reasons", "sources": [{"source",
    "state", "reason", "since"}]}`` with the same status code.

    Every route, those given in ``routes`` too, answers only requests whose ``Host``
    names this server (``names``, by default :meth:`ServerNames.of_this_host`); others
    get 421 (and a request without ``Host`` 400), so a web page cannot read them through
    DNS rebinding. ``middlewares`` run inside those two guards (a ``serve --workers``
    worker merges its debug answers so).
    """
    # Envoy's REST polls carry their cluster's name as Host (``xds-rest`` in pilothouse
    # bootstrap's; a single-label name no web page can own)
    named = (names if names is not None else ServerNames.of_this_host()).including(XDS_REST_CLUSTER)
    app = web.Application(
        client_max_size=(rest.settings if rest is not None else RestSettings()).max_body_bytes,
        middlewares=[
            containment(json_error, _log),
            host_check(lambda: named, json_error),
            *middlewares,
        ],
    )
    app[DISCOVERY] = discovery
    if rest is not None:
        app[REST] = rest
    app[CHECKS] = all_checks(discovery, readiness_checks, sources)
    app[SOURCES] = source_states if source_states is not None else tuple
    app.router.add_get("/ready", _ready)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/version", _version)
    if rest is not None:
        app.router.add_routes(rest.routes())
    app.router.add_routes(list(routes))
    return app


async def _version(request: web.Request) -> web.Response:
    """This server's build, as ``istioctl version --remote`` reads istiod's (``pilothouse
    version --remote`` reads it)."""
    return web.json_response(
        {
            "version": __version__,
            "pythonVersion": platform.python_version(),
            "replica": request.app[DISCOVERY].replica,
        }
    )


async def _ready(request: web.Request) -> web.Response:
    checks: tuple[ReadinessCheck, ...] = request.app[CHECKS]
    reasons = missing(checks)
    sources = list(request.app[SOURCES]())
    status = 503 if reasons else 200
    if _wants_json(request):
        body: dict[str, Any] = {
            "ready": not reasons,
            "reasons": reasons,
            "sources": [state.as_dict() for state in sources],
        }
        return web.json_response(body, status=status)
    text = "not ready:\n" + "".join(f"{r}\n" for r in reasons) if reasons else "ok\n"
    if sources:
        text += "config sources:\n" + "".join(f"  {state}\n" for state in sources)
    return web.Response(status=status, text=text)


def _wants_json(request: web.Request) -> bool:
    if request.query.get("format") == "json":
        return True
    return "application/json" in request.headers.get("Accept", "")


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")
