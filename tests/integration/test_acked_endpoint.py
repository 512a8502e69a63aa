"""``/debug/acked`` over a real socket: proxies streaming real ADS to an in-process server.

A DiscoveryServer over a MemoryStore serves gRPC (raw ADS clients that send what they
choose: ACK, NACK or nothing) and the admin app; ``/debug/acked`` must list them, and
for one of them answer the digest of exactly what it ACKed, not what it was sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.admin.app import build_admin_app
from pilothouse.admin.debug_routes import debug_routes
from pilothouse.admin.server import AdminServer
from pilothouse.inspector.admin_address import ENVOY_ADMIN_ADDRESS
from pilothouse.inspector.digest import bytes_digest
from pilothouse.inspector.message_types import MessageTypes
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.e2e.harness.control_plane import ControlPlane
from tests.integration.ads_stream import AdsStream, delta_request, open_ads

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  hosts: [db.data.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.9}]
"""
SIDECAR = "sidecar~10.0.0.1~app-1.data~data.svc.cluster.local"
ROUTER = "router~10.0.0.2~app-1.data~data.svc.cluster.local"
DB = "outbound|5432||db.data.svc.cluster.local"


@pytest.fixture
async def plane() -> AsyncIterator[tuple[ControlPlane, str]]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH)
    await control_plane.start()
    assert control_plane.discovery is not None
    view = DiscoveryDebugView(control_plane.discovery)
    admin = AdminServer(
        build_admin_app(view, routes=debug_routes(view)),
        shutdown_timeout=0.25,
    )
    port = await admin.start("127.0.0.1", 0)
    try:
        yield control_plane, f"http://127.0.0.1:{port}/debug/acked"
    finally:
        await admin.stop()
        await control_plane.stop()


def request(type_url: str, node: str | None = None, **fields: Any) -> bytes:
    message = discovery_pb2.DiscoveryRequest(type_url=type_url, **fields)
    if node is not None:
        message.node.id = node
        message.node.cluster = "test"
        message.node.metadata.fields[ENVOY_ADMIN_ADDRESS].string_value = "127.0.0.1:15000"
    return bytes(message.SerializeToString())


async def get(url: str, **query: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url, params=query) as answer:
        return answer.status, await answer.json()


def sotw_digests(response: Any) -> dict[str, str]:
    """Cluster name → digest of each cluster a SotW CDS response carried."""
    found = {}
    for packed in response.resources:
        cluster = cluster_pb2.Cluster()
        packed.Unpack(cluster)
        found[cluster.name] = bytes_digest(CDS, packed.SerializeToString(), MessageTypes())
    return found


def delta_digests(response: Any) -> dict[str, str]:
    return {
        r.name: bytes_digest(CDS, r.resource.SerializeToString(), MessageTypes())
        for r in response.resources
    }


async def test_the_digests_of_what_a_sotw_proxy_acked(plane: tuple[ControlPlane, str]) -> None:
    _, url = plane
    stream: AdsStream = await open_ads(plane[0].port)
    try:
        await stream.send(request(CDS, SIDECAR))
        clusters = await stream.read()
        assert await get(url, proxyID=SIDECAR) == (200, {CDS: {}})  # sent, not yet ACKed
        await stream.send(
            request(CDS, response_nonce=clusters.nonce, version_info=clusters.version_info)
        )
        await stream.send(request(EDS, resource_names=[DB]))
        endpoints = await stream.read()
        status, body = await get(url, proxyID="app-1.data")  # pod.namespace works too
        assert status == 200
        assert body == {CDS: sotw_digests(clusters), EDS: {}}
        assert DB in body[CDS] and len(body[CDS]) >= 3  # with BlackHole and Passthrough
        # a NACK leaves nothing acked for EDS
        await stream.send(
            request(
                EDS,
                resource_names=[DB],
                response_nonce=endpoints.nonce,
                error_detail={"message": "no"},
            )
        )
        status, body = await get(url, proxyID=SIDECAR)
        assert body[EDS] == {}
        status, listed = await get(url)
        assert listed == {
            "proxies": [
                {
                    "proxyID": "app-1.data",
                    "nodeID": SIDECAR,
                    "connectionID": listed["proxies"][0]["connectionID"],
                    "delta": False,
                    "envoyAdmin": "127.0.0.1:15000",
                }
            ]
        }
    finally:
        await stream.close()


async def test_a_delta_proxy_and_the_errors(plane: tuple[ControlPlane, str]) -> None:
    control_plane, url = plane
    status, body = await get(url, proxyID=SIDECAR)
    assert (status, body["error"]) == (
        404,
        f"proxy {SIDECAR!r}: not connected to this pilothouse instance",
    )
    delta = await open_ads(control_plane.port, delta=True)
    sotw = await open_ads(control_plane.port)
    try:
        await delta.send(delta_request(CDS, SIDECAR, resource_names_subscribe=["*"]))
        clusters = await delta.read()
        await delta.send(delta_request(CDS, response_nonce=clusters.nonce))
        await sotw.send(request(CDS, ROUTER))
        await sotw.read()
        status, body = await get(url, proxyID=SIDECAR)
        assert status == 200 and body[CDS] == delta_digests(clusters)
        status, body = await get(url, proxyID="app-1.data")  # two nodes answer to it
        assert status == 409 and SIDECAR in body["error"] and ROUTER in body["error"]
    finally:
        await delta.close()
        await sotw.close()
