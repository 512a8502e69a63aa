"""Real TCP and TLS through a sidecar Envoy when several services share a port.

Two TCP ServiceEntries with addresses (127.0.21.1 and 127.0.21.2, both on port P) and
two TLS ServiceEntries without one (``a.tls.example`` and ``b.tls.example``, both on
port Q), each with its own loopback upstream, served by an in-process pilothouse to one
real Envoy sidecar over ADS. The sidecar must get a listener per address on P and one
listener on Q telling the two TLS services apart by SNI: bytes sent to each address,
and TLS handshakes naming each host (checked against the upstream's certificate),
must reach that service's upstream and no other.

Istio's default outbound listeners do not bind (``bind_to_port: false``): iptables
redirects connections to ``virtualOutbound``, which hands them over by original
destination. Without iptables here, an EnvoyFilter (a real one, as a user would write
it) merges ``bind_to_port: true`` into the sidecar's outbound listeners, so a client
connecting to an address reaches the listener iptables would have picked.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_ports
from tests.e2e.harness.tls import ThrowawayCa, client_ssl_context, server_ssl_context
from tests.e2e.traffic_mesh import render, serve, sidecar_bootstrap

NAMESPACE = "shared"
VIPS = {"pg-a": "127.0.21.1", "pg-b": "127.0.21.2"}
SNI = {"tls-a": "a.tls.example", "tls-b": "b.tls.example"}
TIMEOUT = 10.0


class NamedUpstream:
    """A loopback TCP server (TLS with ``context``) answering every connection with its
    name, counting the connections it took."""

    def __init__(self, name: str, context: ssl.SSLContext | None = None) -> None:
        self.name = name
        self.context = context
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._answer, LOOPBACK, 0, ssl=self.context)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _answer(self, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.write(self.name.encode())
        await writer.drain()
        writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


def entry(name: str, host: str, port: int, protocol: str, upstream: NamedUpstream) -> Any:
    spec: dict[str, Any] = {
        "hosts": [host],
        "location": "MESH_EXTERNAL",
        "resolution": "STATIC",
        "ports": [{"number": port, "name": "p", "protocol": protocol}],
        "endpoints": [{"address": LOOPBACK, "ports": {"p": upstream.port}}],
    }
    if name in VIPS:
        spec["addresses"] = [VIPS[name]]
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "ServiceEntry",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


BIND_OUTBOUND = {
    "apiVersion": "networking.istio.io/v1alpha3",
    "kind": "EnvoyFilter",
    "metadata": {"name": "bind-outbound", "namespace": NAMESPACE},
    "spec": {
        "configPatches": [
            {
                "applyTo": "LISTENER",
                "match": {"context": "SIDECAR_OUTBOUND"},
                "patch": {"operation": "MERGE", "value": {"bind_to_port": True}},
            }
        ]
    },
}


@pytest.fixture
async def upstreams(tmp_path: Path) -> AsyncIterator[tuple[dict[str, NamedUpstream], Path]]:
    ca = ThrowawayCa(tmp_path / "ca")
    started = {name: NamedUpstream(name) for name in VIPS}
    for name, host in SNI.items():
        started[name] = NamedUpstream(name, server_ssl_context(ca.issue(name, [host])))
    for upstream in started.values():
        await upstream.start()
    yield started, ca.cert_path
    for upstream in started.values():
        await upstream.stop()


async def answer(host: str, port: int, *, tls: ssl.SSLContext | None = None, sni: str = "") -> str:
    """What the upstream behind ``host:port`` says, once the listener there accepts
    (Envoy activates listeners one by one; a refused connection reaches no upstream)."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=tls, server_hostname=sni or None), TIMEOUT
            )
        except ConnectionRefusedError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.02)
            continue
        try:
            return (await asyncio.wait_for(reader.read(), TIMEOUT)).decode()
        finally:
            writer.close()


async def test_services_sharing_a_port_each_reach_their_own_upstream(
    envoy_factory: EnvoyFleet,
    upstreams: tuple[dict[str, NamedUpstream], Path],
) -> None:
    started, ca = upstreams
    tcp_port, tls_port = free_ports(2)
    mesh = render(
        *(entry(name, f"{name}.example", tcp_port, "TCP", started[name]) for name in VIPS),
        *(entry(name, host, tls_port, "TLS", started[name]) for name, host in SNI.items()),
        BIND_OUTBOUND,
    )
    plane = await serve(mesh)
    try:
        await envoy_factory(sidecar_bootstrap(NAMESPACE, plane.port, XdsTransport.SOTW))
        tcp = {name: [await answer(vip, tcp_port) for _ in range(3)] for name, vip in VIPS.items()}
        context = client_ssl_context(ca)
        tls = {
            name: [await answer(LOOPBACK, tls_port, tls=context, sni=host) for _ in range(3)]
            for name, host in SNI.items()
        }
    finally:
        await plane.stop()
    assert tcp == {name: [name] * 3 for name in VIPS}
    assert tls == {name: [name] * 3 for name in SNI}
    assert {n: u.connections for n, u in started.items()} == dict.fromkeys(started, 3)
