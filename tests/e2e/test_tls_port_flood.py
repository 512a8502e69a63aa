"""The TLS port under a flood of connections that never authenticate, against a real
``pilothouse serve`` whose open-file limit is lowered (``prlimit``) so that "thousands"
fits in seconds.

The attacker (this test) opens hundreds of TLS connections that finish their handshake
and then say nothing, and hundreds of TCP connections that never start one, all at
once, and holds them. A legitimate client must still get a certificate
(``CreateCertificate`` with a valid token) and config (a CDS response on an ADS stream)
within seconds; every idle connection must be closed by the front's deadlines; and the
log must stay small: a bounded number of lines, no traceback. Two ways in:

- the limit on unauthenticated connections holds the flood off (it closes the surplus
  before any TLS work), so the descriptors never run out;
- with that limit set above what the descriptors allow, ``accept`` runs out of file
  descriptors (EMFILE): it pauses and says so once per interval, and the server comes
  back when the deadlines have closed the idle connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import socket
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import grpc
import pytest

from pilothouse.api.istio.security.v1alpha1 import ca_pb2, ca_pb2_grpc
from tests.e2e.harness.client import fetch
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.token_served import served_with_issuer
from tests.e2e.test_tls_xds_envoy import root_file
from tests.integration.tls_served import CDS, first_answer, node_request
from tests.unit.security.certs import csr_pem, ec_key
from tests.unit.security.tokens import Issuer

pytestmark = pytest.mark.timeout(180)

NODE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
DEADLINE = 3.0
"""The front's handshake and authentication timeouts in these tests, seconds: long enough
that a loaded machine's slow flood still holds more connections at once than the limit
(at one second the first were let go before the last came, and no limit was reached)."""
IDLE_TLS = 600
"""TLS connections the first test's flood opens: far beyond the limit."""
LIMIT = 128
"""The unauthenticated-connection limit of the first test."""
EMFILE_FILES = 400
"""The second test's open-file limit."""
EMFILE_FLOOD = (300, 300)
"""The second test's flood (connections that never handshake, idle TLS ones): half as
many again as :data:`EMFILE_FILES`, so that ``accept`` must run out."""
EMFILE_HANDSHAKE = DEADLINE + 1
"""The second test's handshake timeout, seconds: the connections that never handshake
are held that long, so they still hold their descriptors when the rest of the flood
comes in, however slowly a loaded machine accepts and handshakes (at one second they
were let go first on a loaded machine, and ``accept`` never ran out)."""


@contextlib.asynccontextmanager
async def serve_with_fd_limit(
    tmp_path: Path, files: int, environment: Mapping[str, str], handshake: float = DEADLINE
) -> AsyncIterator[tuple[ServeProcess, Issuer]]:
    deadlines = {
        "PILOTHOUSE_XDS_TLS_HANDSHAKE_TIMEOUT": str(handshake),
        "PILOTHOUSE_XDS_TLS_AUTH_TIMEOUT": str(DEADLINE),
    }

    def limit(process: ServeProcess) -> None:
        resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (files, files))

    async with served_with_issuer(tmp_path, {**deadlines, **environment}, started=limit) as s:
        yield s


class Attacker:
    """Connections that never authenticate, held open until the server closes them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.raw: list[socket.socket] = []
        self.turned_away = 0
        """TLS connections closed before their handshake finished."""

    async def flood(
        self, context: ssl.SSLContext, no_handshake: int, idle_tls: int = IDLE_TLS
    ) -> None:
        """``no_handshake`` TCP connections that never start a handshake, then
        ``idle_tls`` TLS connections that say nothing after theirs."""
        for _ in range(no_handshake):
            sock = socket.socket()
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.connect(("127.0.0.1", self.port))
            self.raw.append(sock)
        gate = asyncio.Semaphore(64)

        async def one() -> None:
            async with gate:
                try:
                    self.idle.append(
                        await asyncio.wait_for(
                            asyncio.open_connection(
                                "127.0.0.1", self.port, ssl=context, server_hostname="localhost"
                            ),
                            timeout=10,
                        )
                    )
                except (OSError, ssl.SSLError, TimeoutError):
                    self.turned_away += 1

        await asyncio.gather(*(one() for _ in range(idle_tls)))

    async def all_closed_by_server(self, within: float) -> None:
        """Every held connection ends (EOF or reset) from the server's side in time."""
        async with asyncio.timeout(within):
            for reader, _ in self.idle:
                with contextlib.suppress(OSError, ssl.SSLError):
                    while await reader.read(65536):
                        pass
            loop = asyncio.get_running_loop()
            for sock in self.raw:
                with contextlib.suppress(OSError):
                    while await loop.sock_recv(sock, 65536):
                        pass

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        for sock in self.raw:
            sock.close()


async def legitimate_client(process: ServeProcess, issuer: Issuer) -> float:
    """Seconds until a client with a valid token has a certificate and a CDS response."""
    started = time.monotonic()
    credentials = grpc.ssl_channel_credentials(root_certificates=root_file().read_bytes())
    token = (("authorization", f"Bearer {issuer.token('bookinfo', 'bookinfo-productpage')}"),)
    options = (("grpc.initial_reconnect_backoff_ms", 200), ("grpc.max_reconnect_backoff_ms", 1000))
    target = f"127.0.0.1:{process.xds_tls_port}"
    async with grpc.aio.secure_channel(target, credentials, options=options) as channel:
        stub = ca_pb2_grpc.IstioCertificateServiceStub(channel)  # type: ignore[no-untyped-call]
        answer = await stub.CreateCertificate(
            ca_pb2.IstioCertificateRequest(csr=csr_pem(ec_key())),
            metadata=token,
            timeout=30,  # bounds a failure; callers assert how long it took
            wait_for_ready=True,
        )
        assert len(answer.cert_chain) >= 2
        response = await first_answer(
            channel, node_request(NODE, {"NAMESPACE": "bookinfo"}, CDS), token
        )
        assert response.resources
    return time.monotonic() - started


async def refusal_counts(process: ServeProcess) -> dict[str, int]:
    answer = await fetch("127.0.0.1", process.admin_port, "/debug/refusals", timeout=5.0)
    assert answer.status == 200
    return {r: seen["count"] for r, seen in json.loads(answer.body)["reasons"].items()}


def client_context() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(root_file()))


async def paused_accepting(process: ServeProcess, within: float) -> None:
    """Wait until the server has said it stopped accepting (out of descriptors)."""
    deadline = time.monotonic() + within
    while "not accepting connections" not in process.log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, process.log_tail(60)
        await asyncio.sleep(0.05)


def small_log(process: ServeProcess) -> list[str]:
    lines = process.log_path.read_text(errors="replace").splitlines()
    assert not any("Traceback" in line for line in lines), process.log_tail(60)
    assert len(lines) < 120, process.log_tail(60)
    return lines


async def test_the_unauthenticated_limit_holds_a_flood_off(tmp_path: Path) -> None:
    environment = {
        "PILOTHOUSE_XDS_TLS_MAX_UNAUTHENTICATED": str(LIMIT),
        # the whole flood comes from 127.0.0.1: its share is the whole limit here
        "PILOTHOUSE_XDS_TLS_MAX_UNAUTHENTICATED_PER_ADDRESS": str(LIMIT),
    }
    async with serve_with_fd_limit(tmp_path, 1024, environment) as (process, issuer):
        attacker = Attacker(process.xds_tls_port)
        started = time.monotonic()  # no refusal before the flood
        try:
            await attacker.flood(client_context(), no_handshake=64)
            # On a loaded machine the flood outlasts the deadlines, which close held
            # connections and make room for more: the limit is on those held at once.
            during = await refusal_counts(process)
            freed = during.get("tls_auth_timeout", 0) + during.get("tls_handshake", 0)
            assert len(attacker.idle) >= 32  # some got in and are held idle...
            assert len(attacker.idle) <= LIMIT + freed  # ...never more than the limit...
            assert attacker.turned_away >= IDLE_TLS - LIMIT - freed  # ...the surplus closed
            waited = await legitimate_client(process, issuer)
            assert waited < 2 * DEADLINE + 8
            await attacker.all_closed_by_server(within=2 * DEADLINE + 15)
        finally:
            attacker.close()
        counts = await refusal_counts(process)
        assert counts["tls_busy"] >= IDLE_TLS - LIMIT - freed
        assert counts["tls_handshake"] >= 1  # the ones that never started a handshake
        assert counts.get("tls_auth_timeout", 0) >= 1  # the idle ones that got in
        lines = small_log(process)
        # five lines per reason (three) per refusal log interval (the default ten seconds;
        # a loaded machine's flood lasts into a second one)
        intervals = (time.monotonic() - started) // 10 + 1
        assert sum("xds connection refused" in line for line in lines) <= 3 * 5 * intervals


async def test_out_of_file_descriptors_accept_pauses_and_the_server_comes_back(
    tmp_path: Path,
) -> None:
    environment = {
        "PILOTHOUSE_XDS_TLS_MAX_UNAUTHENTICATED": "5000",  # no help from the limit
        "PILOTHOUSE_XDS_TLS_ACCEPT_PAUSE": "0.5",
        "PILOTHOUSE_XDS_REFUSAL_LOG_INTERVAL": "5",
    }
    serving = serve_with_fd_limit(tmp_path, EMFILE_FILES, environment, EMFILE_HANDSHAKE)
    async with serving as (process, issuer):
        attacker = Attacker(process.xds_tls_port)
        started = time.monotonic()
        try:
            no_handshake, idle_tls = EMFILE_FLOOD
            flood = asyncio.create_task(attacker.flood(client_context(), no_handshake, idle_tls))
            await paused_accepting(process, within=30.0)  # the descriptors are gone
            # the flood ends first (a loaded machine's attacker is slow, and a client let
            # in among its connections loses the descriptors freed to them); then its idle
            # connections still hold the descriptors, until the deadlines close them
            await flood
            waited = await legitimate_client(process, issuer)
            assert waited < 2 * EMFILE_HANDSHAKE + 15
            await attacker.all_closed_by_server(within=2 * EMFILE_HANDSHAKE + 15)
        finally:
            attacker.close()
        elapsed = time.monotonic() - started
        lines = small_log(process)
        paused = [line for line in lines if "not accepting connections" in line]
        assert paused, process.log_tail(60)  # it did run out, and said so...
        assert len(paused) <= elapsed / 5 + 2  # ...once per interval
        assert "errno=EMFILE" in paused[0]
