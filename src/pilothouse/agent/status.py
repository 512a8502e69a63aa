"""The agent's status port: ``/healthz/ready`` as istio-agent's (port 15020).

Debug pages (``/debug/nodez``, the node agent's node set) are added as JSON views.

Ready means: the workload certificate was issued, a response from pilothouse reached
Envoy, and Envoy itself is ready (:meth:`EnvoyProcess.ready`: LIVE, and CDS and LDS
accepted). Answers 200, or 503 with the first reason that fails. Once ready, the answer
is cached (istio-agent does the same), so a control-plane restart does not fail the
probe while Envoy keeps serving its last config.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

log = logging.getLogger("pilothouse.agent.status")

Check = Callable[[], Awaitable[str | None]]
"""None when ready, else why not."""

View = Callable[[], Any]
"""A debug page's content, JSON-shaped."""


class StatusServer:
    """``GET /healthz/ready`` on ``host:port`` (port 0: the kernel picks; see ``port``)."""

    def __init__(self, host: str, port: int, checks: list[Check] | None = None) -> None:
        self.host = host
        self.port = port
        self.checks: list[Check] = list(checks or [])
        self.views: dict[str, View] = {}
        """Path → JSON view, served as ``GET path``."""
        self._ready = False
        self._runner: web.AppRunner | None = None

    async def readiness(self) -> str | None:
        if self._ready:
            return None
        for check in self.checks:
            reason = await check()
            if reason is not None:
                return reason
        self._ready = True
        return None

    async def _ready_page(self, request: web.Request) -> web.Response:
        reason = await self.readiness()
        if reason is None:
            return web.Response(text="ready\n")
        return web.Response(status=503, text=reason + "\n")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz/ready", self._ready_page)
        for path, view in self.views.items():
            app.router.add_get(path, _json_page(view))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((self.host, self.port))
        self.port = int(listening.getsockname()[1])
        await web.SockSite(runner, listening).start()
        self._runner = runner
        log.info("status port open", extra={"address": f"{self.host}:{self.port}"})

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _json_page(view: View) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def page(request: web.Request) -> web.Response:
        return web.json_response(view())

    return page
