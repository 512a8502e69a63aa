"""The TLS front protects itself: a handshake timeout, a deadline for an authenticated
call, a limit on connections that have not proved an identity (closed before any TLS
work) and a share of it per client address, no backend connection for an idle client,
and an ``accept`` that pauses, with one log line, when the process is out of file
descriptors.

Real TLS clients (Python's ``ssl``) against a real :class:`TlsFront` with the suite's
throwaway CA; the backend is a plain TCP echo server standing in for the loopback gRPC
server (the front relays bytes and never reads them), which lets a test see which
backend connections exist and call :meth:`TlsFront.trust` for one of them, as the TLS
guard does for an authenticated call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import socket
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pilothouse.xds.server.refusals import RefusalLog
from pilothouse.xds.server.tls_front import TlsFront
from pilothouse.xds.server.tls_share import unauthenticated_limit
from tests.e2e.harness.tls import CertificateFiles, ThrowawayCa, client_ssl_context

pytestmark = pytest.mark.timeout(60)


@dataclass
class Echo:
    """The stand-in backend: echoes, and remembers its clients' ports."""

    ports: list[int] = field(default_factory=list)
    server: asyncio.Server | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.ports.append(int(writer.get_extra_info("peername")[1]))
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()


@dataclass
class Front:
    front: TlsFront
    port: int
    echo: Echo
    refusals: RefusalLog
    ca: ThrowawayCa
    server: CertificateFiles

    def client_context(self, *, with_cert: bool = False) -> ssl.SSLContext:
        if with_cert:
            files = self.ca.issue("client", ("client",), client=True)
            return client_ssl_context(files.ca, files.cert, files.key)
        return client_ssl_context(self.server.ca)

    async def tls_client(
        self, *, with_cert: bool = False, source: str = "127.0.0.1"
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TLS connection from the loopback address ``source`` (Linux routes all of
        127.0.0.0/8 to lo)."""
        return await asyncio.open_connection(
            "127.0.0.1",
            self.port,
            ssl=self.client_context(with_cert=with_cert),
            server_hostname="localhost",
            local_addr=(source, 0),
        )

    def reasons(self) -> dict[str, int]:
        return self.refusals.counts()


def server_context(files: CertificateFiles) -> ssl.SSLContext:
    """As the TLS port's: a client certificate optional, verified when sent."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(files.ca))
    context.load_cert_chain(str(files.cert), str(files.key))
    context.verify_mode = ssl.CERT_OPTIONAL
    return context


@contextlib.asynccontextmanager
async def running_front(tmp_path: Path, **knobs: float) -> AsyncIterator[Front]:
    ca = ThrowawayCa(tmp_path / "ca")
    files = ca.issue("server", ("localhost", "127.0.0.1"))
    echo = Echo()
    echo.server = await asyncio.start_server(echo.serve, "127.0.0.1", 0)
    backend_port = int(echo.server.sockets[0].getsockname()[1])
    refusals = RefusalLog()
    front = TlsFront(server_context(files), refusals=refusals, **knobs)  # type: ignore[arg-type]
    port = await front.start("127.0.0.1", 0, backend_port)
    try:
        yield Front(front, port, echo, refusals, ca, files)
    finally:
        await front.stop()
        echo.server.close()
        await echo.server.wait_closed()


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> float:
    """Seconds until the front closed the connection (EOF or reset); fails after ``seconds``."""
    started = time.monotonic()
    async with asyncio.timeout(seconds):
        with contextlib.suppress(OSError, ssl.SSLError):
            while await reader.read(65536):
                pass
    return time.monotonic() - started


async def echoed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> bool:
    writer.write(data)
    await writer.drain()
    async with asyncio.timeout(5):
        return await reader.readexactly(len(data)) == data


async def test_a_client_that_never_finishes_its_handshake_is_closed(tmp_path: Path) -> None:
    async with running_front(tmp_path, handshake_timeout=0.5) as front:
        reader, writer = await asyncio.open_connection("127.0.0.1", front.port)  # no TLS
        waited = await closed_within(reader, 5)
        writer.close()
        assert 0.4 <= waited < 3
        await asyncio.sleep(0.05)
        assert front.reasons() == {"tls_handshake": 1}
        assert front.front.unauthenticated == 0


async def test_a_connection_that_makes_no_authenticated_call_is_closed(tmp_path: Path) -> None:
    async with running_front(tmp_path, auth_timeout=0.5) as front:
        idle_reader, idle = await front.tls_client()  # says nothing at all
        talk_reader, talker = await front.tls_client()  # talks, but never authenticates
        assert await echoed(talk_reader, talker, b"PRI * HTTP/2.0")
        assert await closed_within(idle_reader, 5) < 3
        assert await closed_within(talk_reader, 5) < 3
        idle.close()
        talker.close()
        await asyncio.sleep(0.05)
        assert front.reasons() == {"tls_auth_timeout": 2}
        assert front.front.unauthenticated == 0
        assert len(front.echo.ports) == 1  # the idle client never cost a backend connection


async def test_a_trusted_connection_stays_past_the_deadline(tmp_path: Path) -> None:
    async with running_front(tmp_path, auth_timeout=0.5) as front:
        reader, writer = await front.tls_client()
        assert await echoed(reader, writer, b"hello")
        front.front.trust(f"ipv4:127.0.0.1:{front.echo.ports[0]}")  # as the guard does
        assert front.front.unauthenticated == 0
        peer = front.front.peer(f"ipv4:127.0.0.1:{front.echo.ports[0]}")
        assert peer is not None and peer.address.startswith("ipv4:127.0.0.1:")
        await asyncio.sleep(1.0)
        assert await echoed(reader, writer, b"still here")
        writer.close()
        assert front.reasons() == {}


async def test_a_verified_client_certificate_is_trusted_at_the_handshake(tmp_path: Path) -> None:
    async with running_front(tmp_path, auth_timeout=0.5) as front:
        reader, writer = await front.tls_client(with_cert=True)
        await asyncio.sleep(0.05)
        assert front.front.unauthenticated == 0
        await asyncio.sleep(1.0)
        assert await echoed(reader, writer, b"mine")
        peer = front.front.peer(f"ipv4:127.0.0.1:{front.echo.ports[0]}")
        assert peer is not None and peer.cert_der
        writer.close()


async def test_beyond_the_limit_a_connection_is_closed_before_the_handshake(
    tmp_path: Path,
) -> None:
    async with running_front(
        tmp_path, max_unauthenticated=4, max_unauthenticated_per_address=4, handshake_timeout=30
    ) as front:
        held = [await asyncio.open_connection("127.0.0.1", front.port) for _ in range(4)]
        await asyncio.sleep(0.1)
        assert front.front.unauthenticated == 4
        reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
        assert await closed_within(reader, 2) < 1  # at once, not at the handshake timeout
        writer.close()
        assert front.reasons() == {"tls_busy": 1}
        held[0][1].close()  # one leaves: there is room for one more
        await asyncio.sleep(0.1)
        reader, writer = await front.tls_client()
        assert await echoed(reader, writer, b"room")
        writer.close()
        for _, other in held[1:]:
            other.close()


async def test_one_address_cannot_starve_another(tmp_path: Path) -> None:
    """Real TLS clients from 127.0.0.1 fill its share of the slots; one more from it is
    closed at once, while 127.0.0.2 still gets in and is relayed."""
    async with running_front(
        tmp_path, max_unauthenticated=8, max_unauthenticated_per_address=3, handshake_timeout=30
    ) as front:
        assert front.front.max_unauthenticated_per_address == 3
        held = [await front.tls_client() for _ in range(3)]  # handshaken, never trusted
        assert front.front.unauthenticated_from("127.0.0.1") == 3
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", front.port, local_addr=("127.0.0.1", 0)
        )
        assert await closed_within(reader, 2) < 1  # at once, before any TLS work
        writer.close()
        assert front.reasons() == {"tls_address_busy": 1}
        others = [await front.tls_client(source="127.0.0.2") for _ in range(3)]
        assert [await echoed(r, w, b"other host") for r, w in others] == [True] * 3
        assert front.front.unauthenticated_from("127.0.0.2") == 3
        assert front.front.unauthenticated == 6
        # trusting one of 127.0.0.1's connections frees a slot of its share
        assert await echoed(*held[0], b"hello")  # its backend connection is the latest
        front.front.trust(f"ipv4:127.0.0.1:{front.echo.ports[-1]}")
        assert front.front.unauthenticated_from("127.0.0.1") == 2
        reader, writer = await front.tls_client()
        assert await echoed(reader, writer, b"room again")
        assert front.reasons() == {"tls_address_busy": 1}
        for _, other in [*held, *others, (reader, writer)]:
            other.close()


def test_the_automatic_limit_follows_the_open_file_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert unauthenticated_limit(7) == 7
    assert unauthenticated_limit(0) == max(16, min(1024, soft // 8))


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_out_of_file_descriptors_accept_pauses_with_one_line_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The process's own open-file limit is lowered for a moment, to just what is open:
    the front's ``accept`` fails with EMFILE while clients wait in the backlog."""
    async with running_front(tmp_path, accept_pause=0.2, log_interval=60.0) as front:
        clients = [socket.socket() for _ in range(20)]  # their descriptors exist already
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        with caplog.at_level(logging.INFO, logger="pilothouse.xds"):
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_descriptors() + 1, hard))
            try:
                for client in clients:
                    client.setblocking(False)
                    with contextlib.suppress(BlockingIOError):
                        client.connect(("127.0.0.1", front.port))
                deadline = time.monotonic() + 10
                while front.front.accept_pauses < 3:  # it keeps trying, with pauses between
                    assert time.monotonic() < deadline, front.front.accept_pauses
                    await asyncio.sleep(0.02)
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        paused = [r for r in caplog.records if "not accepting connections" in r.getMessage()]
        assert front.front.accept_pauses >= 3  # it kept trying, with pauses between
        assert len(paused) == 1, [r.getMessage() for r in paused]  # one line per interval
        assert paused[0].__dict__["errno"] == "EMFILE"
        assert not any(r.exc_info for r in caplog.records)  # no traceback
        # With descriptors back, the waiting clients are accepted (they are now in their
        # handshakes, counted as unauthenticated).
        async with asyncio.timeout(5):
            while front.front.unauthenticated < len(clients):
                await asyncio.sleep(0.05)
        for client in clients:
            client.close()
