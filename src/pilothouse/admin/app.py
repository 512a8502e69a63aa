"""The admin application: ``/ready``, ``/healthz`` and REST discovery on one aiohttp app.

:func:`build_admin_app` is the one place routes are mounted. Later handlers
(``/metrics``, ``/debug/*``) come in through ``routes`` or by adding to the app's
router before the server starts; they find the discovery server and the REST
endpoint under the typed keys :data:`DISCOVERY` and :data:`REST`.

Every request is contained (:func:`~pilothouse.boundary.contain.containment`): an
exception any handler lets out is logged and answered 500 with a generic message, and
404, 405 and unreadable bodies are answered in REST discovery's JSON error shape.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Final

from aiohttp import web

from pilothouse.admin.readiness import ReadinessCheck, all_checks, missing
from pilothouse.boundary.contain import containment, json_error
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.rest import RestDiscovery, RestSettings

DISCOVERY: Final = web.AppKey("discovery", DiscoveryServer)
REST: Final = web.AppKey("rest", RestDiscovery)
CHECKS: Final[web.AppKey[tuple[ReadinessCheck, ...]]] = web.AppKey("readiness_checks")

_log = logging.getLogger("pilothouse.admin")


def build_admin_app(
    discovery: DiscoveryServer,
    readiness_checks: Sequence[ReadinessCheck] = (),
    *,
    rest: RestSettings | None = None,
    routes: Iterable[web.RouteDef] = (),
) -> web.Application:
    """The admin app for ``discovery``.

    ``/ready`` passes when the config sources have synced, the discovery server is
    ready and every one of ``readiness_checks`` returns None.
    """
    rest_discovery = RestDiscovery(discovery, rest)
    app = web.Application(
        client_max_size=rest_discovery.settings.max_body_bytes,
        middlewares=[containment(json_error, _log)],
    )
    app[DISCOVERY] = discovery
    app[REST] = rest_discovery
    app[CHECKS] = all_checks(discovery, readiness_checks)
    app.router.add_get("/ready", _ready)
    app.router.add_get("/healthz", _healthz)
    app.router.add_routes(rest_discovery.routes())
    app.router.add_routes(list(routes))
    return app


async def _ready(request: web.Request) -> web.Response:
    checks: tuple[ReadinessCheck, ...] = request.app[CHECKS]
    reasons = missing(checks)
    if reasons:
        return web.Response(status=503, text="not ready:\n" + "\n".join(reasons) + "\n")
    return web.Response(text="ok\n")


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")
