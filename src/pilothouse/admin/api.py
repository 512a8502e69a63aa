"""The admin API on the admin address: read and change runtime knobs, push, disconnect.

- ``GET /admin/knobs``: ``{"knobs": [{"name", "value", "type", "description",
  "setting"}]}``, every knob of the registry;
- ``GET /admin/knobs/{name}``: one of them;
- ``PUT /admin/knobs/{name}`` with a JSON value as the body (``1.5``, ``"100ms"``,
  ``true``, ``"debug"``; ``{"value": ...}`` is read the same): ``{"name", "old", "new"}``;
- ``POST /admin/push``: a full push to every connected proxy (through the debouncer;
  istiod does it on ``GET /debug/adsz?push=true``, which pilothouse refuses: no GET acts):
  202 ``{"push": "queued", "connections": N}``;
- ``POST /admin/disconnect?proxyID=ID``: ends the streams of that proxy (its node id,
  its ``pod.namespace``, or a connection id); the proxy reconnects as after any lost
  stream. ``{"disconnected": [connection ids]}``.

Answers are JSON; a refused request gets ``{"error", "status"}``: 400 for a value the
knob cannot take or a body that is not JSON (the message says which and why), 404 for
an unknown knob (naming the nearest) or proxy, 403 by :class:`AccessPolicy`. Every change
is logged on the ``admin`` scope with the old and new value and the client's address.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from typing import Final

from aiohttp import web

from pilothouse.admin.access import AccessPolicy
from pilothouse.admin.knobs import BadKnobValue, KnobRegistry, UnknownKnob
from pilothouse.boundary.contain import json_error
from pilothouse.boundary.json_body import BadJson, read_json
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.xds.server.debug_view import DebugConnection, DebugView

VIA: Final = "admin-api"
MAX_BODY_BYTES: Final = 64 * 1024

_log = logging.getLogger("pilothouse.admin")


class AdminApi:
    """The handlers, over one knob registry and one discovery server's debug view."""

    def __init__(self, knobs: KnobRegistry, discovery: DebugView, policy: AccessPolicy) -> None:
        self.knobs = knobs
        self.discovery = discovery
        self.policy = policy

    def routes(self) -> list[web.RouteDef]:
        guard = self.policy.guard
        return [
            web.get("/admin/knobs", guard(json_error, self.list_knobs)),
            web.get("/admin/knobs/{name}", guard(json_error, self.get_knob)),
            web.put("/admin/knobs/{name}", guard(json_error, self.put_knob)),
            web.post("/admin/push", guard(json_error, self.push)),
            web.post("/admin/disconnect", guard(json_error, self.disconnect)),
        ]

    async def list_knobs(self, request: web.Request) -> web.Response:
        return web.json_response({"knobs": self.knobs.describe()})

    async def get_knob(self, request: web.Request) -> web.Response:
        try:
            knob = self.knobs.get(request.match_info["name"])
        except UnknownKnob as unknown:
            return json_error(404, unknown.message)
        return web.json_response(knob.describe())

    async def put_knob(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.knobs:
            return json_error(404, UnknownKnob(name, self.knobs.names()).message)
        try:
            value = await knob_value(request)
        except BadJson as problem:
            return json_error(400, f"{name}: body: {problem.reason}")
        try:
            change = self.knobs.change(name, value, who=client(request), via=VIA)
        except BadKnobValue as problem:
            return json_error(400, problem.message)
        return web.json_response(change.as_json())

    async def push(self, request: web.Request) -> web.Response:
        connections = len(self.discovery.connections())
        self.discovery.request_push(PushRequest.everything(TriggerReason.DEBUG, forced=True))
        _log.info(
            "full push requested",
            extra={"connections": connections, "by": client(request), "via": VIA},
        )
        return web.json_response({"push": "queued", "connections": connections}, status=202)

    async def disconnect(self, request: web.Request) -> web.Response:
        wanted = request.query.get("proxyID", "").strip()
        if not wanted:
            return json_error(
                400, "name the proxy: ?proxyID=<node id, pod.namespace or connection id>"
            )
        connections = self.discovery.connections()
        chosen = [c for c in connections if wanted in names_of(c)]
        if not chosen:
            return json_error(404, unknown_proxy(wanted, connections))
        for connection in chosen:
            connection.close()
        ids = [c.id for c in chosen]
        _log.info(
            "proxy disconnected",
            extra={"proxy": wanted, "connections": ",".join(ids), "by": client(request),
                   "via": VIA},
        )  # fmt: skip
        return web.json_response({"disconnected": ids})


async def knob_value(request: web.Request) -> object:
    """The JSON value of a PUT body: the value itself, or ``{"value": ...}``."""
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise BadJson(f"more than {MAX_BODY_BYTES} bytes")
    body = await request.read()  # bounded by the application's client_max_size too
    if len(body) > MAX_BODY_BYTES:
        raise BadJson(f"more than {MAX_BODY_BYTES} bytes")
    if not body.strip():
        raise BadJson('empty; send the new value as JSON, such as 0.5, true or "debug"')
    value = read_json(body)
    if isinstance(value, dict) and set(value) == {"value"}:
        return value["value"]
    return value


def client(request: web.Request) -> str:
    return request.remote or "unknown"


def names_of(connection: DebugConnection) -> set[str]:
    """Every name a proxy can be asked for by: node id, ``pod.namespace``, connection id."""
    return {connection.id, connection.proxy.node_id, connection.proxy.id} - {""}


def unknown_proxy(wanted: str, connections: Iterable[DebugConnection]) -> str:
    known = sorted({connection.proxy.id or connection.proxy.node_id for connection in connections})
    if not known:
        return f"no proxy {wanted!r} is connected (no proxy is)"
    close = difflib.get_close_matches(wanted, known, n=1, cutoff=0.5)
    hint = f": did you mean {close[0]!r}?" if close else f"; {len(known)} proxies are connected"
    return f"no proxy {wanted!r} is connected{hint}"
