"""The TLS port's front: TLS terminated here, gRPC served by a loopback backend server.

grpcio's server credentials either require a client certificate or never ask for one;
istiod's port 15012 asks for one and verifies it *if given* (``VerifyClientCertIfGiven``):
sidecars authenticate with a certificate or with a bearer token on the same port. So
the front does the TLS itself, with Python's :mod:`ssl` (TLS 1.2 at least, client
certificate optional but verified against the CA's roots when sent, ALPN ``h2``), and
relays the decrypted HTTP/2 bytes to a plaintext gRPC server listening on
``127.0.0.1`` on a port of its own (the backend). For every relayed connection it
remembers the backend connection's local port, the client's real address and the
verified client certificate: the backend finds them from ``context.peer()``
(``ipv4:127.0.0.1:<that port>``) with :meth:`TlsFront.peer`. A connection to the backend
port that did not come through the front has no entry, and the TLS port's handlers
refuse it (UNAUTHENTICATED), so nothing is gained by dialling the backend directly.

The ``ssl.SSLContext`` is owned by :mod:`pilothouse.security.serving_cert`, which
renews the certificate in it; new handshakes use the new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from dataclasses import dataclass
from typing import Final

log = logging.getLogger("pilothouse.xds")

CHUNK: Final = 64 * 1024
BACKEND_HOST: Final = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class TlsPeer:
    """The client of one TLS connection, as the front saw it."""

    address: str
    """``ipv4:host:port`` or ``ipv6:[host]:port``, as gRPC writes peers."""
    cert_der: bytes | None
    """The client certificate the handshake verified, if the client sent one."""


class TlsFront:
    """Terminates TLS on a public address and relays to the backend gRPC port."""

    def __init__(self, context: ssl.SSLContext, *, handshake_timeout: float = 10.0) -> None:
        self._context = context
        self._backend_port = 0
        self._handshake_timeout = handshake_timeout
        self._peers: dict[int, TlsPeer] = {}
        self._relays: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(
        self, host: str, port: int, backend_port: int, *, reuse_port: bool = False
    ) -> int:
        """Listen (raises OSError), relaying to ``backend_port``; returns the port bound.
        ``reuse_port`` shares the port with other workers (``SO_REUSEPORT``)."""
        self._backend_port = backend_port
        self._server = await asyncio.start_server(
            self._accept,
            host or None,
            port,
            ssl=self._context,
            ssl_handshake_timeout=self._handshake_timeout,
            reuse_port=reuse_port,
        )
        return int(self._server.sockets[0].getsockname()[1])

    def peer(self, grpc_peer: str) -> TlsPeer | None:
        """The TLS client behind a backend stream's ``context.peer()``, if it came
        through this front."""
        prefix = f"ipv4:{BACKEND_HOST}:"
        if not grpc_peer.startswith(prefix):
            return None
        try:
            return self._peers.get(int(grpc_peer[len(prefix) :]))
        except ValueError:
            return None

    @property
    def connections(self) -> int:
        return len(self._peers)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for relay in list(self._relays):
            relay.cancel()
        for relay in list(self._relays):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await relay
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            await self._relay(reader, writer)
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # stop(): this task is the connection's own (asyncio's stream server made it);
            # ending it normally keeps Python 3.11's stream callback from logging the
            # cancellation as an error.
            pass
        finally:
            self._relays.discard(task)
            _close(writer)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tls: ssl.SSLObject | None = writer.get_extra_info("ssl_object")
        cert = tls.getpeercert(binary_form=True) if tls is not None else None
        address = _grpc_address(writer.get_extra_info("peername"))
        back_reader, back_writer = await asyncio.open_connection(BACKEND_HOST, self._backend_port)
        sock = back_writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        local_port = int(back_writer.get_extra_info("sockname")[1])
        self._peers[local_port] = TlsPeer(address, cert or None)
        try:
            upstream = asyncio.create_task(_pump(reader, back_writer))
            downstream = asyncio.create_task(_pump(back_reader, writer))
            try:
                await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in (upstream, downstream):
                    pump.cancel()
                for pump in (upstream, downstream):
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pump
        finally:
            # Forget the port before closing the socket, so that a later connection that
            # gets the same local port can never be taken for this client. Streams are
            # authenticated when they start; this client is gone, so none starts now.
            self._peers.pop(local_port, None)
            _close(back_writer)
            with contextlib.suppress(Exception):
                await back_writer.wait_closed()


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while True:
        data = await source.read(CHUNK)
        if not data:
            return
        sink.write(data)
        await sink.drain()


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


def _grpc_address(peername: object) -> str:
    if isinstance(peername, tuple) and len(peername) >= 2:
        host, port = str(peername[0]), int(peername[1])
        return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"
    return "unknown"
