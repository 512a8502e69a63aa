"""``POST /debug/impact``: what candidate objects would push, before they are applied.

The body is Istio YAML (or JSON), as ``apply -f`` takes it. The answer says which of
the proxies connected here the change would push, and for each, per type, the
resources that would be added, changed and removed and how many it would hold before
and after (:mod:`pilothouse.xds.server.impact`), computed by the server's own push
planner against the PushContext the objects would build. Nothing is applied, pushed or
cached: it is a POST only because the objects are its input (a body of any size a GET
cannot carry), like Kubernetes' dry-run requests.

Query: ``namespace`` (for objects that name none; ``default``), ``timeout`` (seconds,
at most :data:`MAX_TIMEOUT`; :data:`DEFAULT_TIMEOUT` by default): proxies not reached
by then are counted as skipped and the answer says it is not complete.

Errors, in the admin app's shape: 400 for objects that do not load or validate (each
problem at ``file:line``, the file being ``request``), for more than
:data:`MAX_OBJECTS` objects, for none, or for a bad query; 413 (the admin app's body
bound) for a body that is too large; 422 for kinds whose impact is not predicted
(ServiceEntry, WorkloadEntry: the registry's); 503 before the first PushContext.

Reading and validating the objects (up to :data:`MAX_OBJECTS` of them, YAML) and
writing the answer's JSON (every proxy's names, for a wide change) are done in a worker
thread, so that a large request does not hold up the event loop that serves the
proxies; only the prediction itself, which reads the server's state, runs on it.
"""

from __future__ import annotations

import asyncio
import math
from typing import Final

from aiohttp import web

from pilothouse.boundary.contain import json_answer, json_error
from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.impact import NotPredicted
from pilothouse.settings import Settings
from pilothouse.xds.server.debug_view import DebugView

PATH: Final = "/debug/impact"
MAX_OBJECTS: Final = 1000
DEFAULT_TIMEOUT: Final = 10.0
MAX_TIMEOUT: Final = 60.0


def impact_handler(discovery: DebugView) -> web.RouteDef:
    """The ``POST /debug/impact`` route over ``discovery`` (unguarded: wrap it in
    :func:`~pilothouse.admin.debug_routes.debug_only`)."""

    async def impact(request: web.Request) -> web.Response:
        namespace = request.query.get("namespace") or Settings.default_namespace
        try:
            timeout = float(request.query.get("timeout", DEFAULT_TIMEOUT))
        except ValueError:
            return json_error(400, "timeout: give seconds, e.g. timeout=5")
        if not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT:
            return json_error(400, f"timeout: give seconds above 0, at most {MAX_TIMEOUT:g}")
        text = await request.text()
        candidates = await asyncio.to_thread(read_candidates, text, namespace)
        if isinstance(candidates, str):
            return json_error(400, candidates)
        if not discovery.ready():
            return json_error(503, "pilothouse is not ready: config has not synced yet")
        try:
            answer = await discovery.impact(candidates, timeout)
        except NotPredicted as refused:
            return json_error(422, str(refused))
        except LookupError as early:
            return json_error(503, str(early))
        return await asyncio.to_thread(json_answer, answer)  # the answer is this request's

    return web.post(PATH, impact)


def read_candidates(text: str, namespace: str) -> tuple[Config, ...] | str:
    """The Istio objects of a request body (``namespace`` for those that name none), or
    why there are none to predict for: each problem at ``request:line``. CPU-bound; the
    handler runs it in a worker thread."""
    loader = Loader(SCHEMAS, default_namespace=namespace, source="impact", skip_plain=True)
    loaded = loader.load_text(text, "request")
    if loaded.errors:
        problems = "; ".join(str(problem) for problem in loaded.errors)
        return f"{len(loaded.errors)} error(s), nothing predicted: {problems}"
    if not loaded.configs:
        return "no Istio objects in the request body"
    if len(loaded.configs) > MAX_OBJECTS:
        return f"{len(loaded.configs)} objects: at most {MAX_OBJECTS} per request"
    return loaded.configs
