"""An xDS-enabled grpcio server (``grpc.server(..., xds=True)``) gets its inbound listener.

The server asks LDS for ``xds.istio.io/grpc/lds/inbound/127.0.0.1:<port>`` (Istio's
template, from its bootstrap) and refuses connections until a Listener arrives. Here
it is started before pilothouse: its port stays closed, then pilothouse comes up, sends
the listener (routes with ``non_forwarding_action``), and the server serves, both to a
plain gRPC call and to a proxyless client routed to it through xDS.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from pilothouse.protocol.type_urls import LDS
from tests.e2e.grpc_apps.backends import TAG_METHOD
from tests.e2e.grpc_apps.mesh import ProxylessMesh, service_entry
from tests.e2e.grpc_apps.processes import GrpcProcess, proxyless_bootstrap
from tests.e2e.harness.ports import free_ports, port_accepts


@pytest.fixture
async def mesh(tmp_path: Path) -> AsyncIterator[ProxylessMesh]:
    found = ProxylessMesh(tmp_path)
    try:
        yield found
    finally:
        print(found.describe())  # shown by pytest only when the test failed
        await found.close()


async def test_xds_server_serves_once_it_gets_its_inbound_listener(
    mesh: ProxylessMesh, tmp_path: Path
) -> None:
    xds_port, server_port = free_ports(2)
    bootstrap = proxyless_bootstrap(tmp_path / "echo-server.json", xds_port, "echo-server")
    arguments = ("--port", str(server_port), "--tag", "echo-server")
    server = await GrpcProcess.start("xds_server", bootstrap, *arguments)
    mesh.processes.append(server)
    started = await server.read(timeout=20)
    assert started["started"], started

    # no control plane, no listener: the port refuses connections
    refused_until = time.monotonic() + 1.0
    while time.monotonic() < refused_until:
        assert not port_accepts(server_port), "served before it had a listener"
        await asyncio.sleep(0.1)

    await mesh.start(xds_port)
    mesh.apply(service_entry("echo", [(server_port, {"app": "echo"})]))
    deadline = time.monotonic() + 15
    while not port_accepts(server_port):
        assert time.monotonic() < deadline, "the xDS server never started serving"
        await asyncio.sleep(0.05)

    async with grpc.aio.insecure_channel(f"127.0.0.1:{server_port}") as channel:
        body = await channel.unary_unary(TAG_METHOD)(b"", timeout=5)
    assert body == b"echo-server"

    (connection,) = mesh.connections_of("echo-server")
    assert connection.watched_names(LDS) == {
        f"xds.istio.io/grpc/lds/inbound/127.0.0.1:{server_port}"
    }
    watch = connection.sotw.watch(LDS) if connection.sotw is not None else None
    assert watch is not None and watch.last_error is None
    assert watch.nonce_acked == watch.nonce_sent

    client = await mesh.client()
    answer = await client.ask(op="calls", target="xds:///echo:50051", n=5, method="health")
    assert answer["tags"] == {"echo-server": 5}, answer
