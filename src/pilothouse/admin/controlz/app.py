"""The ControlZ application: every topic's page and JSON, and the server that runs them.

Topics (istio's ``pkg/ctrlz``, each ``/<t>z`` for the page and ``/<t>j`` for JSON):
``scope`` (logging scopes, see :mod:`.scopes`), ``knob`` (the admin API's runtime
knobs: ``GET /knobj``, ``PUT /knobj/{name}``), ``mem`` (``PUT /memj/forcecollection``
runs the garbage collector), ``proc``, ``arg``, ``env`` and ``version`` (see
:mod:`.process`). ``/`` lists them.

:class:`ControlZ` serves the application on ``settings.ctrlz.address`` in the same
process and event loop as ``pilothouse serve``. As istiod does, a ControlZ that cannot
listen is logged and left off: it is an aid, and must not keep the control plane from
serving proxies. Every request must name this server in its ``Host`` (421 otherwise, 400
without one: :mod:`pilothouse.boundary.host_check`, as on the admin port), then goes
through :class:`~pilothouse.admin.access.AccessPolicy`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web

from pilothouse.addresses import AddressError, parse_host_port
from pilothouse.admin.access import AccessPolicy
from pilothouse.admin.api import client, knob_value
from pilothouse.admin.controlz import page, process, scopes
from pilothouse.admin.knobs import BadKnobValue, KnobRegistry, UnknownKnob
from pilothouse.admin.server import AdminServer
from pilothouse.boundary.contain import containment, json_error
from pilothouse.boundary.host_check import host_check
from pilothouse.boundary.json_body import BadJson
from pilothouse.settings import ControlZSettings

VIA: Final = "controlz"
TOPICS: Final = (
    page.Topic("scope", "Logging scopes", "Output level, stack traces and callers per scope."),
    page.Topic("knob", "Runtime knobs", "Debounce, push throttle, admission, log levels."),
    page.Topic("mem", "Memory", "Resident memory and the garbage collector's counters."),
    page.Topic("proc", "Process", "Process id, threads, open files, uptime, CPU time."),
    page.Topic("arg", "Command line", "The arguments this process was started with."),
    page.Topic("env", "Environment", "Environment variables; values that look secret hidden."),
    page.Topic("version", "Version", "pilothouse, Python and library versions."),
)
KNOBS: Final[web.AppKey[KnobRegistry]] = web.AppKey("controlz_knobs")
STARTED: Final[web.AppKey[float]] = web.AppKey("controlz_started")

_log = logging.getLogger("pilothouse.admin")

JsonHandler = Callable[[web.Request], Awaitable[web.Response]]


def build_controlz_app(
    knobs: KnobRegistry, policy: AccessPolicy | None = None, *, started: float | None = None
) -> web.Application:
    """ControlZ over ``knobs``; ``started`` is the process's start time where /proc cannot
    tell it (default: now)."""
    given = policy if policy is not None else AccessPolicy()
    app = web.Application(
        client_max_size=64 * 1024,
        middlewares=[
            containment(json_error, _log),
            host_check(lambda: given.names, json_error),
            given.middleware(json_error),
        ],
    )
    app[KNOBS] = knobs
    app[STARTED] = started if started is not None else time.time()
    app.router.add_get("/", _home)
    app.router.add_get("/static/{name}", _static)
    for topic in TOPICS:
        app.router.add_get(topic.page, _page(topic))
    json_handlers: dict[str, JsonHandler] = {
        "knob": _knobs,
        "mem": _json(lambda request: process.memory()),
        "proc": _json(lambda request: process.process(request.app[STARTED])),
        "arg": _json(lambda request: process.arguments()),
        "env": _json(lambda request: process.environment()),
        "version": _json(lambda request: process.version()),
    }
    for name, handler in json_handlers.items():
        app.router.add_get(f"/{name}j", handler)
        app.router.add_get(f"/{name}j/", handler)
    app.router.add_routes(scopes.routes())
    app.router.add_put("/knobj/{name}", _put_knob)
    app.router.add_put("/memj/forcecollection", _collect)
    return app


def _page(topic: page.Topic) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return page.topic_page(TOPICS, topic)

    return handler


async def _home(request: web.Request) -> web.Response:
    return page.home_page(TOPICS)


async def _static(request: web.Request) -> web.Response:
    return page.static_file(request.match_info["name"])


def _json(read: Callable[[web.Request], Any]) -> JsonHandler:
    async def handler(request: web.Request) -> web.Response:
        return _no_store(web.json_response(read(request)))

    return handler


def _no_store(response: web.Response) -> web.Response:
    response.headers["Cache-Control"] = "no-store"
    return response


async def _knobs(request: web.Request) -> web.Response:
    return _no_store(web.json_response({"knobs": request.app[KNOBS].describe()}))


async def _put_knob(request: web.Request) -> web.Response:
    registry = request.app[KNOBS]
    name = request.match_info["name"]
    if name not in registry:
        return json_error(404, UnknownKnob(name, registry.names()).message)
    try:
        value = await knob_value(request)
    except BadJson as problem:
        return json_error(400, f"{name}: body: {problem.reason}")
    try:
        change = registry.change(name, value, who=client(request), via=VIA)
    except BadKnobValue as problem:
        return json_error(400, problem.message)
    return web.json_response(change.as_json())


async def _collect(request: web.Request) -> web.Response:
    result = process.collect_garbage()
    _log.info("garbage collected", extra={**result, "by": client(request), "via": VIA})
    return web.json_response(result, status=202)


class ControlZ:
    """ControlZ on its own address, or off (``address`` ``off`` or empty)."""

    def __init__(
        self, settings: ControlZSettings, knobs: KnobRegistry, policy: AccessPolicy
    ) -> None:
        self.settings = settings
        self._server: AdminServer | None = None
        if settings.address.strip().lower() not in ("", ControlZSettings.OFF):
            self._server = AdminServer(build_controlz_app(knobs, policy))
        self.port = 0

    async def start(self) -> int:
        """Listen; returns the port, or 0 when off or when it cannot listen (logged)."""
        if self._server is None:
            return 0
        try:
            address = parse_host_port(self.settings.address, "--ctrlz-address")
            self.port = await self._server.start(address.host, address.port)
        except (OSError, AddressError) as problem:
            _log.warning(
                "ControlZ not started: cannot listen on %s: %s",
                self.settings.address,
                problem,
                extra={"address": self.settings.address},
            )
            self._server = None
            return 0
        bound = str(address.with_port(self.port))
        _log.info("ControlZ listening on %s", bound, extra={"address": bound})
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
