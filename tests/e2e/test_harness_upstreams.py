"""Self-tests of the local upstreams, the traffic client, ports and TLS helpers (no Envoy).

Each upstream behaviour (plain, slow, flaky with 503 or reset, /status/<code>) is driven
through the client in both connection modes, so the client's bookkeeping is checked too.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import pytest

from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.ports import (
    LOOPBACK,
    free_ports,
    port_accepts,
    wait_for_port,
    wait_for_port_closed,
)
from tests.e2e.harness.tls import ThrowawayCa, client_ssl_context, server_ssl_context
from tests.e2e.harness.upstreams import Failure, UpstreamBehaviour, UpstreamPool


@pytest.mark.parametrize("keep_alive", [True, False], ids=["keep-alive", "close"])
async def test_upstream_names_itself_and_echoes_the_request(
    upstream_factory: UpstreamPool, keep_alive: bool
) -> None:
    upstream = await upstream_factory("alpha")

    report = await send_requests(
        *upstream.address,
        5,
        path="/api/v1?x=1",
        headers={"x-test": "yes"},
        keep_alive=keep_alive,
    )

    assert report.statuses == {200: 5}, report.summary()
    assert report.upstreams == {"alpha": 5}
    assert upstream.requests == 5
    assert upstream.connections == (1 if keep_alive else 5)
    body = report.results[-1]
    echoed = json.loads(body.body)
    assert echoed["upstream"] == "alpha"
    assert echoed["path"] == "/api/v1?x=1"
    assert echoed["headers"]["x-test"] == "yes"
    assert echoed["headers"]["host"] == f"{LOOPBACK}:{upstream.port}"
    assert echoed["request"] == 5


async def test_echo_headers_narrows_the_echo(upstream_factory: UpstreamPool) -> None:
    upstream = await upstream_factory("beta", UpstreamBehaviour(echo_headers=("X-Keep",)))

    response = await fetch(*upstream.address, headers={"x-keep": "1", "x-drop": "2"})

    assert response.json()["headers"] == {"x-keep": "1"}
    assert response.header("x-upstream") == "beta"


async def test_status_path_and_post_body(upstream_factory: UpstreamPool) -> None:
    upstream = await upstream_factory("gamma")

    teapot = await fetch(*upstream.address, "/status/418")
    posted = await fetch(*upstream.address, "/upload", method="POST", body=b"x" * 1000)

    assert teapot.status == 418
    assert posted.status == 200
    assert posted.json()["body_bytes"] == 1000
    assert posted.json()["method"] == "POST"


@pytest.mark.parametrize("keep_alive", [True, False], ids=["keep-alive", "close"])
async def test_flaky_upstream_fails_the_first_requests_with_503(
    upstream_factory: UpstreamPool, keep_alive: bool
) -> None:
    upstream = await upstream_factory("flaky", UpstreamBehaviour(fail_first=3))

    report = await send_requests(*upstream.address, 8, keep_alive=keep_alive)

    assert [result.status for result in report.results] == [503] * 3 + [200] * 5
    assert report.upstreams == {"flaky": 8}
    assert (upstream.requests, upstream.failures) == (8, 3)


async def test_flaky_upstream_can_reset_connections(upstream_factory: UpstreamPool) -> None:
    upstream = await upstream_factory(
        "resetter", UpstreamBehaviour(fail_first=2, failure=Failure.RESET)
    )

    report = await send_requests(*upstream.address, 5)

    assert [result.status for result in report.results] == [None, None, 200, 200, 200]
    assert all(error for error in report.errors[:2]), report.summary()
    assert (upstream.requests, upstream.failures) == (5, 2)
    assert upstream.connections == 3  # the client reconnects after each reset


async def test_slow_upstream_hits_the_request_timeout(upstream_factory: UpstreamPool) -> None:
    upstream = await upstream_factory("slow", UpstreamBehaviour(delay=0.3))

    slow = await send_requests(*upstream.address, 1, request_timeout=0.05)
    patient = await send_requests(*upstream.address, 1, request_timeout=2.0)

    assert slow.statuses == {None: 1}
    assert slow.errors[0].startswith("TimeoutError")
    assert patient.statuses == {200: 1}
    assert patient.results[0].elapsed >= 0.3


async def test_total_timeout_bounds_the_batch(upstream_factory: UpstreamPool) -> None:
    upstream = await upstream_factory("slow", UpstreamBehaviour(delay=0.1))

    report = await send_requests(*upstream.address, 100, total_timeout=0.35, request_timeout=0.5)

    # Each request takes >= 0.1 s, so at most 4 can start within 0.35 s.
    assert 1 <= len(report.results) <= 4, report.summary()
    assert report.unsent == 100 - len(report.results)
    assert upstream.requests == len(report.results)
    assert report.elapsed < 0.35 + 0.5 + 0.5


async def test_concurrent_workers_use_their_own_connections(
    upstream_factory: UpstreamPool,
) -> None:
    upstream = await upstream_factory("busy", UpstreamBehaviour(delay=0.05))

    report = await send_requests(*upstream.address, 20, concurrency=4)

    assert report.statuses == {200: 20}, report.summary()
    assert upstream.connections == 4
    assert report.elapsed < 20 * 0.05  # they overlapped


async def test_refused_connection_is_an_error_not_an_exception() -> None:
    [port] = free_ports(1)

    report = await send_requests(LOOPBACK, port, 2)

    assert report.statuses == {None: 2}
    assert all("ConnectionRefused" in error for error in report.errors)


async def test_closed_upstream_frees_its_port(upstream_factory: UpstreamPool) -> None:
    upstream = await upstream_factory("short-lived")
    await wait_for_port(upstream.port)
    await send_requests(*upstream.address, 1)  # leaves a keep-alive connection open

    await upstream.close()

    await wait_for_port_closed(upstream.port, timeout=2)
    assert not port_accepts(upstream.port)


def test_free_ports_are_distinct() -> None:
    ports = free_ports(20)

    assert len(set(ports)) == 20
    assert all(0 < port < 65536 for port in ports)


async def test_wait_for_port_times_out_on_a_closed_port() -> None:
    [port] = free_ports(1)

    with pytest.raises(TimeoutError):
        await wait_for_port(port, timeout=0.1)


async def test_throwaway_ca_certificates_work_with_ssl(tmp_path: Path) -> None:
    ca = ThrowawayCa(tmp_path)
    server = ca.issue("server", ("localhost", "127.0.0.1"))
    context = server_ssl_context(server)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nx-upstream: tls\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    tls_server = await asyncio.start_server(answer, LOOPBACK, 0, ssl=context)
    port = int(tls_server.sockets[0].getsockname()[1])
    trusting = client_ssl_context(ca.cert_path)
    try:
        good = await fetch(LOOPBACK, port, ssl_context=trusting, server_hostname="localhost")
        by_ip = await fetch(LOOPBACK, port, ssl_context=trusting, server_hostname=LOOPBACK)
        with pytest.raises(ssl.SSLCertVerificationError):
            await fetch(LOOPBACK, port, ssl_context=trusting, server_hostname="elsewhere.example")
    finally:
        tls_server.close()
        await tls_server.wait_closed()

    assert good.header("x-upstream") == "tls"
    assert by_ip.status == 200
    assert server.ca == ca.cert_path
    assert server.key.stat().st_mode & 0o077 == 0
