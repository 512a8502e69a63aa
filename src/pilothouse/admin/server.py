"""``AdminServer``: serves the admin application on one address (``settings.admin.address``).

``start`` returns the bound port, so port 0 lets the kernel choose (tests). Access logs
are off: Envoy's REST polls alone would flood them.
"""

from __future__ import annotations

import socket

from aiohttp import web


class AdminServer:
    """One aiohttp application on one TCP address."""

    def __init__(self, app: web.Application, *, shutdown_timeout: float = 2.0) -> None:
        self.app = app
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self, host: str, port: int, *, reuse_port: bool = False) -> int:
        """Bind and serve; returns the bound port. Fails (OSError) if the port is taken,
        unless ``reuse_port`` shares it (``SO_REUSEPORT``, for ``serve --workers``)."""
        if self._runner is not None:
            raise RuntimeError("the admin server is already started")
        runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=self._shutdown_timeout)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        return self.port

    async def listen_also(self, host: str) -> int:
        """Serve the same application on ``host`` too, on a port the kernel chooses (a
        ``serve --workers`` worker's private port); returns that port."""
        if self._runner is None:
            raise RuntimeError("the admin server is not started")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
            await web.SockSite(self._runner, sock).start()
        except BaseException:
            sock.close()
            raise
        return port

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
