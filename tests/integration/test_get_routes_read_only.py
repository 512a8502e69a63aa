"""No GET acts: every GET route of the admin app (``/ready``, ``/healthz``, ``/metrics``,
``/debug/*``, ``/admin/knobs``), of ControlZ and of the webhook app, asked with every
documented query parameter (``?push=true`` included), leaves the server as it was.

A real discovery server with a real ADS stream, the admin app mounted as ``serve``
mounts it, on real HTTP servers. The routes are read from the apps' routers, so a GET
added later is walked too. What must not change: the pushes asked for
(``request_push`` is watched), the push counters once the debouncer has had time to
release anything, the config store, the knobs, the log scopes, the connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web

from pilothouse import logscopes
from pilothouse.admin.access import AccessPolicy
from pilothouse.admin.api import AdminApi
from pilothouse.admin.app import build_admin_app
from pilothouse.admin.controlz.app import build_controlz_app
from pilothouse.admin.debug_routes import debug_routes
from pilothouse.admin.debug_views import push_status
from pilothouse.admin.knobs import KnobRegistry
from pilothouse.admin.metrics import metrics_routes, server_metrics
from pilothouse.admin.server import AdminServer
from pilothouse.admin.server_knobs import (
    register_admission_knobs,
    register_log_knobs,
    register_push_knobs,
)
from pilothouse.push.request import PushRequest
from pilothouse.webhook.server import WebhookServer
from pilothouse.xds.server.discovery import XdsSettings
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from pilothouse.xds.server.rest import RestDiscovery
from tests.integration.test_debug_http import APP, FAST, MESH, serving, subscribe

QUERY = {
    "push": "true",
    "namespace": "data",
    "kind": "ServiceEntry",
    "proxyID": "app-1.data",
    "types": "cds,lds",
    "include_eds": "true",
    "format": "json",
}
"""Every query parameter a GET route documents (``docs/guides/debugging.md``, module
docstrings), at once."""

PATH_VALUES = {
    "name": "push_throttle",  # /admin/knobs/{name}
    "scope": "default",  # ControlZ /scopej/{scope}
}


def get_paths(app: web.Application) -> Iterator[str]:
    """Every GET route of ``app`` as a path, ``{placeholders}`` filled in."""
    for resource in app.router.resources():
        if not any(route.method == "GET" for route in resource):
            continue
        info = resource.get_info()
        if "path" in info:
            yield str(info["path"])
        elif "formatter" in info:
            formatter = str(info["formatter"])
            static = "static" in formatter
            yield formatter.format(**{**PATH_VALUES, **({"name": "controlz.js"} if static else {})})


def state(running: Any, knobs: KnobRegistry) -> dict[str, Any]:
    discovery = running.discovery
    status = push_status(DiscoveryDebugView(discovery))
    store = discovery.store
    return {
        "pushes": copy.deepcopy(status["pushes"]),
        "pending": status["pendingPushes"],
        "version": discovery.version,
        "store": sorted((str(k), repr(store.get(k))) for k in store.keys()),
        "knobs": [(k["name"], k["value"]) for k in knobs.describe()],
        "scopes": [logscopes.state(name).as_json() for name in logscopes.scope_names()],
        "connections": sorted(discovery.connections),
    }


@contextlib.asynccontextmanager
async def started(app: web.Application) -> AsyncIterator[int]:
    server = AdminServer(app)
    port = await server.start("127.0.0.1", 0)
    try:
        yield port
    finally:
        await server.stop()


async def test_no_get_route_acts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "db.yaml").write_text(MESH)
    async with serving(mesh, XdsSettings(debounce=FAST, replica_id="replica-a")) as running:
        discovery = running.discovery
        view = DiscoveryDebugView(discovery)
        knobs = KnobRegistry()
        register_push_knobs(knobs, view)
        register_admission_knobs(knobs, discovery.admission, settings_prefix="xds.admission")
        register_log_knobs(knobs)
        access = AccessPolicy()
        admin_app = build_admin_app(
            view,
            rest=RestDiscovery(discovery),
            routes=[
                *metrics_routes(server_metrics(view).registry),
                *debug_routes(view),
                *AdminApi(knobs, view, access).routes(),
            ],
        )
        controlz_app = build_controlz_app(knobs, access)
        webhook_app = WebhookServer("unused.crt", "unused.key").build_app()
        stream, _ = await subscribe(running.xds_port, APP)
        asked: list[PushRequest] = []
        monkeypatch.setattr(discovery, "request_push", asked.append)
        try:
            await asyncio.sleep(0.3)  # the subscription's own work is done
            before = state(running, knobs)
            walked: dict[str, int] = {}
            async with (
                started(admin_app) as admin_port,
                started(controlz_app) as controlz_port,
                started(webhook_app) as webhook_port,
                aiohttp.ClientSession() as session,
            ):
                for port, app in (
                    (admin_port, admin_app),
                    (controlz_port, controlz_app),
                    (webhook_port, webhook_app),
                ):
                    for path in get_paths(app):
                        for query in ("", "?" + urlencode(QUERY), "?push=true"):
                            url = f"http://127.0.0.1:{port}{path}{query}"
                            async with session.get(url) as response:
                                await response.read()
                                walked[f"{port}{path}{query}"] = response.status
                                assert response.status < 500, (url, response.status)
                    async with session.head(f"http://127.0.0.1:{port}/") as response:
                        assert response.status < 500
            await asyncio.sleep(0.3)  # FAST debounce: anything queued would be pushed now
            after = state(running, knobs)
        finally:
            await stream.close()
    paths = {key.split("?")[0] for key in walked}
    assert len(paths) >= 30, sorted(paths)  # the walk reached every app's routes
    assert asked == []
    assert after == before
    adsz = [key for key in walked if "/debug/adsz?" in key]
    assert adsz and all(walked[key] == 400 for key in adsz)
