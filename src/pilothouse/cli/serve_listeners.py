"""The ports ``serve`` listens on, each a :class:`Listener`, started and stopped in one place.

One class per port: the plaintext xDS gRPC server, the admin HTTP server, the
validation webhook, ControlZ and the TLS xDS port. Each knows its address knob, how it
says it is listening and how it says it cannot. :class:`Listeners` holds the rule for
all of them: a start call opens its listeners in order and is all or nothing (when one
cannot listen, the ones that call opened are stopped, newest first, and ``serve`` exits
with the reason); at shutdown the xDS ports drain together (their streams get the
grace), then the others stop, newest first, so that ``/ready`` and ``/metrics`` answer
while streams drain.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

import grpc

from pilothouse.addresses import HostPort, join_host_port
from pilothouse.admin.controlz.app import ControlZ
from pilothouse.cli.serve_listen import bind_problem
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.tls_port import TlsPort

log = logging.getLogger("pilothouse.serve")


class CannotListen(Exception):
    """A listener could not open its port; the message is what ``serve`` exits with."""


class Listener(Protocol):
    """One port of ``serve``."""

    @property
    def name(self) -> str:
        """What it serves, for logs and tests (``xds``, ``admin``, ...)."""
        ...

    @property
    def drains(self) -> bool:
        """True for the xDS ports: stopping gives their streams the grace."""
        ...

    async def start(self) -> int:
        """Listen; the bound port (0: off). Raises :class:`CannotListen` having
        released whatever it opened."""
        ...

    async def stop(self, grace: float) -> None:
        """Stop listening (``grace``: seconds for open streams, when it drains)."""
        ...


class Listeners:
    """The started listeners, stopped newest first by :meth:`stop`, the one shutdown path."""

    def __init__(self) -> None:
        self._started: list[Listener] = []

    @property
    def started(self) -> tuple[Listener, ...]:
        return tuple(self._started)

    async def start(self, *listeners: Listener) -> dict[str, int]:
        """Start ``listeners`` in order; their bound ports by name. When one cannot
        listen, the ones this call started are stopped (no grace) and SystemExit says
        why; those of earlier calls stay for :meth:`stop`."""
        ports: dict[str, int] = {}
        opened: list[Listener] = []
        for listener in listeners:
            try:
                ports[listener.name] = await listener.start()
            except CannotListen as problem:
                await _stop_all(opened, 0)
                raise SystemExit(str(problem)) from None
            opened.append(listener)
        self._started += opened
        return ports

    async def stop(self, grace: float) -> None:
        """Stop every started listener: the draining ones together, given ``grace``,
        then the rest, newest first. Safe to call again (stops nothing twice)."""
        started, self._started = self._started, []
        await _stop_all(started, grace)


async def _stop_all(started: list[Listener], grace: float) -> None:
    newest_first = started[::-1]
    await asyncio.gather(*(each.stop(grace) for each in newest_first if each.drains))
    for each in newest_first:
        if not each.drains:
            await each.stop(0)


class XdsListener:
    """The plaintext xDS (and MCP) gRPC port; tells ``discovery`` its port before serving."""

    name = "xds"
    drains = True

    def __init__(
        self,
        server: grpc.aio.Server,
        address: HostPort,
        configured: str,
        discovery: DiscoveryServer,
    ) -> None:
        self._server = server
        self._address = address
        self._configured = configured
        self._discovery = discovery

    async def start(self) -> int:
        try:
            port = self._server.add_insecure_port(str(self._address))
        except RuntimeError as problem:  # grpcio's way of saying it cannot bind, not why
            why = bind_problem(self._address) or str(problem)
            raise CannotListen(f"pilothouse: cannot listen on {self._configured}: {why}") from None
        if port == 0:
            raise CannotListen(f"pilothouse: cannot listen on {self._configured}")
        self._discovery.identify(port)
        await self._server.start()
        bound = join_host_port(self._address.host, port)
        log.info("xDS listening on %s", bound, extra={"address": bound})
        return port

    async def stop(self, grace: float) -> None:
        await self._server.stop(grace)


class HttpServer(Protocol):
    """An aiohttp-based server ``serve`` runs: the admin app or the webhook."""

    async def start(self, host: str, port: int, *, reuse_port: bool = False) -> int: ...

    async def stop(self) -> None: ...


class HttpListener:
    """An HTTP(S) port of ``serve``; subclasses say how it is named and announced."""

    name = ""
    drains = False
    cannot = "cannot listen on"
    """How a failure to listen begins, after ``pilothouse: ``."""

    def __init__(
        self, server: HttpServer, address: HostPort, configured: str, *, shared: bool
    ) -> None:
        self._server = server
        self._address = address
        self._configured = configured
        self._shared = shared

    async def start(self) -> int:
        try:
            port = await self._server.start(
                self._address.host, self._address.port, reuse_port=self._shared
            )
        except OSError as problem:
            raise CannotListen(
                f"pilothouse: {self.cannot} {self._configured}: {problem}"
            ) from None
        self.announce(port)
        return port

    def announce(self, port: int) -> None:
        """Log that it listens on ``port`` (each port in its own words)."""
        raise NotImplementedError

    async def stop(self, grace: float) -> None:
        await self._server.stop()


class AdminListener(HttpListener):
    """The admin HTTP port (/ready, /metrics, /debug, REST xDS, /admin)."""

    name = "admin"

    def announce(self, port: int) -> None:
        bound = join_host_port(self._address.host, port)
        log.info(
            "admin (/ready, /metrics, /debug, REST xDS, /admin) listening on %s",
            bound,
            extra={"address": bound},
        )


class WebhookListener(HttpListener):
    """The validation webhook's HTTPS port (its certificate is loaded at start)."""

    name = "webhook"
    cannot = "cannot serve the webhook on"

    def announce(self, port: int) -> None:
        log.info(
            "validation webhook (HTTPS) listening",
            extra={"address": str(self._address.with_port(port))},
        )


class ControlZListener:
    """ControlZ's port: as istiod, it logs and stays off (port 0) when it cannot listen."""

    name = "ctrlz"
    drains = False

    def __init__(self, ctrlz: ControlZ) -> None:
        self._ctrlz = ctrlz

    async def start(self) -> int:
        return await self._ctrlz.start()

    async def stop(self, grace: float) -> None:
        await self._ctrlz.stop()


class TlsListener:
    """The TLS xDS port with the certificate service (opened once the CA's root is read)."""

    name = "xds-tls"
    drains = True

    def __init__(
        self, tls: TlsPort, address: HostPort, configured: str, ca_dir: str, *, shared: bool
    ) -> None:
        self._tls = tls
        self._address = address
        self._configured = configured
        self._ca_dir = ca_dir
        self._shared = shared

    async def start(self) -> int:
        try:
            port = await self._tls.start(
                self._address.host, self._address.port, reuse_port=self._shared
            )
        except OSError as problem:
            await self._tls.stop(0)
            raise CannotListen(
                f"pilothouse: cannot listen on {self._configured}: {problem}"
            ) from None
        bound = join_host_port(self._address.host, port)
        log.info(
            "xDS (TLS) and certificate service listening on %s",
            bound,
            extra={"address": bound, "ca_dir": self._ca_dir},
        )
        return port

    async def stop(self, grace: float) -> None:
        await self._tls.stop(grace)
