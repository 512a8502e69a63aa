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

The port faces anyone who can reach it, so it protects itself. A connection is
*trusted* once it has proved an identity: it presented a client certificate the
handshake verified, or the backend accepted a call on it as authenticated (the
:class:`~pilothouse.xds.server.tls_guard.TlsGuard` tells the front with
:meth:`TlsFront.trust` whenever a call's caller is established). Until then it is
*unauthenticated*, from the moment it is accepted, through its handshake, until it is
trusted or closed, and:

- at most ``max_unauthenticated`` such connections are open at once; one accepted
  beyond that is closed at once, before any TLS work (0 picks an eighth of the
  process's open-file limit, at most 1,024: each may hold up to three descriptors);
- of those, at most ``max_unauthenticated_per_address`` from one client IP address, so
  that one host cannot take every slot and starve the others; one more from it is
  closed at once too (0 picks a quarter of the limit in force, at least 4; the
  counting is :mod:`pilothouse.xds.server.tls_share`'s);
- its handshake must finish within ``handshake_timeout`` seconds;
- after the handshake it has ``auth_timeout`` seconds to make an authenticated call;
  else it is closed, whatever it sent meanwhile (a stream refused for a bad token does
  not keep it open);
- the backend connection is opened only when the client sends its first bytes, so an
  idle connection holds one descriptor, not three.

Each of these closings is a refusal (``tls_busy``, also for a backend connection that
cannot be opened for want of descriptors; ``tls_address_busy``; ``tls_handshake``;
``tls_auth_timeout``)
recorded and logged, throttled, by the
:class:`~pilothouse.xds.server.refusals.RefusalLog`. Accepting itself, including
running out of file descriptors, is :mod:`pilothouse.xds.server.tls_accept`'s.

The ``ssl.SSLContext`` is owned by :mod:`pilothouse.security.serving_cert`, which
renews the certificate in it; new handshakes use the new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Final

from pilothouse.settings import XdsSettings
from pilothouse.xds.server.refusals import RefusalLog
from pilothouse.xds.server.tls_accept import Acceptor, listening_sockets
from pilothouse.xds.server.tls_share import (
    ALL_TAKEN,
    UnauthenticatedSlots,
    per_address_limit,
    source_of,
    unauthenticated_limit,
)

CHUNK: Final = 64 * 1024
BACKEND_HOST: Final = "127.0.0.1"
TLS_BUSY: Final = "tls_busy"
TLS_ADDRESS_BUSY: Final = "tls_address_busy"
TLS_HANDSHAKE: Final = "tls_handshake"
TLS_AUTH_TIMEOUT: Final = "tls_auth_timeout"


@dataclass(frozen=True, slots=True)
class TlsPeer:
    """The client of one TLS connection, as the front saw it."""

    address: str
    """``ipv4:host:port`` or ``ipv6:[host]:port``, as gRPC writes peers."""
    cert_der: bytes | None
    """The client certificate the handshake verified, if the client sent one."""


class _Relay:
    """One client connection's state in the front."""

    __slots__ = ("address", "cert_der", "expired", "source", "task", "timer", "trusted")

    def __init__(self, address: str, source: str) -> None:
        self.address = address
        self.source = source
        """The client's IP address, without its port: whose share of slots it holds."""
        self.cert_der: bytes | None = None
        self.trusted = False
        self.expired = False
        """Closed by the front for making no authenticated call in time."""
        self.timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None


class TlsFront:
    """Terminates TLS on a public address and relays to the backend gRPC port."""

    def __init__(
        self,
        context: ssl.SSLContext,
        *,
        handshake_timeout: float = XdsSettings.tls_handshake_timeout,
        auth_timeout: float = XdsSettings.tls_auth_timeout,
        max_unauthenticated: int = XdsSettings.tls_max_unauthenticated,
        max_unauthenticated_per_address: int = XdsSettings.tls_max_unauthenticated_per_address,
        accept_pause: float = XdsSettings.tls_accept_pause,
        log_interval: float = XdsSettings.refusal_log_interval,
        refusals: RefusalLog | None = None,
    ) -> None:
        self._context = context
        self._backend_port = 0
        self._handshake_timeout = handshake_timeout
        self._auth_timeout = auth_timeout
        limit = unauthenticated_limit(max_unauthenticated)
        self._slots = UnauthenticatedSlots(
            limit, per_address_limit(max_unauthenticated_per_address, limit)
        )
        self._refusals = refusals if refusals is not None else RefusalLog()
        self._acceptor = Acceptor(
            self._accepted, longest_pause=accept_pause, log_interval=log_interval
        )
        self._peers: dict[int, _Relay] = {}
        """Relayed connections by the local port of their backend connection."""
        self._relays: set[_Relay] = set()
        self._listeners: list[socket.socket] = []
        self._accepting: list[asyncio.Task[None]] = []

    async def start(
        self, host: str, port: int, backend_port: int, *, reuse_port: bool = False
    ) -> int:
        """Listen (raises OSError), relaying to ``backend_port``; returns the port bound.
        ``reuse_port`` shares the port with other workers (``SO_REUSEPORT``)."""
        self._backend_port = backend_port
        self._listeners = await listening_sockets(host, port, reuse_port=reuse_port)
        loop = asyncio.get_running_loop()
        self._accepting = [loop.create_task(self._acceptor.run(s)) for s in self._listeners]
        return int(self._listeners[0].getsockname()[1])

    def peer(self, grpc_peer: str) -> TlsPeer | None:
        """The TLS client behind a backend stream's ``context.peer()``, if it came
        through this front."""
        relay = self._relay_of(grpc_peer)
        return TlsPeer(relay.address, relay.cert_der) if relay is not None else None

    def trust(self, grpc_peer: str) -> None:
        """A call on this backend connection was authenticated: its client connection is
        trusted from now on (no longer counted, no deadline)."""
        relay = self._relay_of(grpc_peer)
        if relay is not None:
            self._trusted(relay)

    @property
    def connections(self) -> int:
        """Client connections relayed to the backend now."""
        return len(self._peers)

    @property
    def max_unauthenticated(self) -> int:
        """Unauthenticated connections open at once, at most (the limit in force)."""
        return self._slots.limit

    @property
    def max_unauthenticated_per_address(self) -> int:
        """Of those, from one client IP address, at most (the limit in force)."""
        return self._slots.per_address

    @property
    def unauthenticated(self) -> int:
        """Client connections open now that have not proved an identity."""
        return self._slots.taken

    def unauthenticated_from(self, source: str) -> int:
        """Of those, the ones from the client IP address ``source``."""
        return self._slots.taken_by(source)

    @property
    def accept_pauses(self) -> int:
        """Times accepting paused for want of file descriptors (or another error)."""
        return self._acceptor.paused

    async def stop(self) -> None:
        for task in self._accepting:
            task.cancel()
        for task in self._accepting:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for listener in self._listeners:
            listener.close()
        tasks = [relay.task for relay in self._relays if relay.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- one connection -----------------------------------------------------------------

    def _accepted(self, conn: socket.socket, address: Any) -> None:
        peer = _grpc_address(address)
        source = source_of(address)
        full = self._slots.take(source)
        if full is not None:
            conn.close()  # before any TLS work: the cheapest refusal there is
            if full == ALL_TAKEN:
                self._refusals.note(
                    TLS_BUSY,
                    peer,
                    f"{self.max_unauthenticated} connections have not authenticated yet "
                    "(PILOTHOUSE_XDS_TLS_MAX_UNAUTHENTICATED): closed before the handshake",
                )
            else:
                self._refusals.note(
                    TLS_ADDRESS_BUSY,
                    peer,
                    f"{self.max_unauthenticated_per_address} connections from {source} "
                    "have not authenticated yet "
                    "(PILOTHOUSE_XDS_TLS_MAX_UNAUTHENTICATED_PER_ADDRESS): closed before "
                    "the handshake",
                )
            return
        relay = _Relay(peer, source)
        self._relays.add(relay)
        relay.task = asyncio.get_running_loop().create_task(self._serve(conn, relay))

    async def _serve(self, conn: socket.socket, relay: _Relay) -> None:
        writer: asyncio.StreamWriter | None = None
        abort = True
        try:
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                reader, writer = await self._handshake(conn)
            except (OSError, ssl.SSLError, EOFError) as problem:
                self._refusals.note(TLS_HANDSHAKE, relay.address, _handshake_problem(problem))
                return
            self._after_handshake(relay, writer)
            await self._relay(reader, writer, relay)
            abort = False
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # stop(), or this front's own deadline (_expire); the task is the front's
            # own, so it ends normally either way.
            if relay.expired and not relay.trusted:
                self._refusals.note(
                    TLS_AUTH_TIMEOUT,
                    relay.address,
                    f"no authenticated request within {self._auth_timeout:g} s of the TLS "
                    "handshake (PILOTHOUSE_XDS_TLS_AUTH_TIMEOUT): connection closed",
                )
        finally:
            self._forget(relay)
            if writer is None:
                conn.close()
            elif abort:  # no TLS goodbye: a client that does not answer one holds nothing
                writer.transport.abort()
            else:
                _close(writer)

    async def _handshake(
        self, conn: socket.socket
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2 * CHUNK)
        protocol = asyncio.StreamReaderProtocol(reader)
        transport, _ = await loop.connect_accepted_socket(
            lambda: protocol,
            conn,
            ssl=self._context,
            ssl_handshake_timeout=self._handshake_timeout,
        )
        return reader, asyncio.StreamWriter(transport, protocol, reader, loop)

    def _after_handshake(self, relay: _Relay, writer: asyncio.StreamWriter) -> None:
        tls: ssl.SSLObject | None = writer.get_extra_info("ssl_object")
        relay.cert_der = (tls.getpeercert(binary_form=True) if tls is not None else None) or None
        if relay.cert_der is not None:
            self._trusted(relay)  # the handshake verified it against the CA's roots
        else:
            relay.timer = asyncio.get_running_loop().call_later(
                self._auth_timeout, self._expire, relay
            )

    async def _relay(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, relay: _Relay
    ) -> None:
        first = await reader.read(CHUNK)
        if not first:
            return  # the client left without a word: no backend connection was needed
        try:
            back_reader, back_writer = await asyncio.open_connection(
                BACKEND_HOST, self._backend_port
            )
        except OSError as problem:  # out of file descriptors, most likely
            self._refusals.note(
                TLS_BUSY, relay.address, f"cannot reach the TLS port's backend: {problem}"
            )
            return
        sock = back_writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        local_port = int(back_writer.get_extra_info("sockname")[1])
        self._peers[local_port] = relay
        try:
            back_writer.write(first)
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

    # -- trust and deadlines ------------------------------------------------------------

    def _relay_of(self, grpc_peer: str) -> _Relay | None:
        prefix = f"ipv4:{BACKEND_HOST}:"
        if not grpc_peer.startswith(prefix):
            return None
        try:
            return self._peers.get(int(grpc_peer[len(prefix) :]))
        except ValueError:
            return None

    def _trusted(self, relay: _Relay) -> None:
        if relay.trusted:
            return
        relay.trusted = True
        if relay in self._relays:
            self._slots.give_back(relay.source)
        if relay.timer is not None:
            relay.timer.cancel()
            relay.timer = None

    def _expire(self, relay: _Relay) -> None:
        relay.timer = None
        if not relay.trusted and relay.task is not None:
            relay.expired = True
            relay.task.cancel()

    def _forget(self, relay: _Relay) -> None:
        if relay not in self._relays:
            return
        self._relays.discard(relay)
        if not relay.trusted:
            self._slots.give_back(relay.source)
        if relay.timer is not None:
            relay.timer.cancel()
            relay.timer = None


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


def _handshake_problem(problem: BaseException) -> str:
    if isinstance(problem, ConnectionAbortedError) and "longer than" in str(problem):
        return (
            f"TLS handshake not finished in time (PILOTHOUSE_XDS_TLS_HANDSHAKE_TIMEOUT): {problem}"
        )
    return f"TLS handshake failed: {problem or type(problem).__name__}"


def _grpc_address(peername: object) -> str:
    if isinstance(peername, tuple) and len(peername) >= 2:
        host, port = str(peername[0]), int(peername[1])
        return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"
    return "unknown"
