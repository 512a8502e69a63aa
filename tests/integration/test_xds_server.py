"""The gRPC servicers with a real grpc.aio client: status codes, node rules, stream cleanup."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.xds.server.ads import ADS_SERVICE, add_discovery_services, new_grpc_server
from pilothouse.xds.server.discovery import DiscoveryServer
from tests.e2e.harness.control_plane import ControlPlane

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
GOOD_NODE = "sidecar~10.0.0.1~app-1.data~data.svc.cluster.local"


@pytest.fixture
async def plane() -> AsyncIterator[ControlPlane]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH)
    await control_plane.start()
    try:
        yield control_plane
    finally:
        await control_plane.stop()


def request(type_url: str, node_id: str | None = GOOD_NODE, **fields: object) -> bytes:
    message = discovery_pb2.DiscoveryRequest(type_url=type_url, **fields)
    if node_id is not None:
        message.node.id = node_id
        message.node.cluster = "test"
    return bytes(message.SerializeToString())


async def open_stream(
    port: int, method: str = "StreamAggregatedResources"
) -> tuple[grpc.aio.Channel, grpc.aio.StreamStreamCall[bytes, bytes]]:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    call = channel.stream_stream(
        f"/{ADS_SERVICE}/{method}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )()
    return channel, call


async def status_of(port: int, first: bytes) -> tuple[grpc.StatusCode, str]:
    channel, call = await open_stream(port)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            # the server may refuse the stream before the write completes: then the
            # write itself reports the status
            await call.write(first)
            await asyncio.wait_for(call.read(), 5)
        return caught.value.code(), caught.value.details() or ""
    finally:
        await channel.close()


async def test_a_sotw_client_gets_clusters_and_acks(plane: ControlPlane) -> None:
    channel, call = await open_stream(plane.port)
    try:
        await call.write(request(CDS))
        response = discovery_pb2.DiscoveryResponse.FromString(await call.read())
        assert response.type_url == CDS and response.nonce and response.version_info
        names = set()
        for resource in response.resources:
            from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]

            cluster = cluster_pb2.Cluster()
            resource.Unpack(cluster)
            names.add(cluster.name)
        assert "outbound|5432||db.data.svc.cluster.local" in names
        await call.write(
            request(CDS, None, version_info=response.version_info, response_nonce=response.nonce)
        )
        await call.write(
            request(EDS, None, resource_names=["outbound|5432||db.data.svc.cluster.local"])
        )
        eds = discovery_pb2.DiscoveryResponse.FromString(await call.read())
        assert eds.type_url == EDS and len(eds.resources) == 1
        connection = plane.only_connection()
        assert connection.proxy.namespace == "data"
    finally:
        await channel.close()


@pytest.mark.parametrize(
    ("node_id", "text"),
    [
        ("bad", "has 1 part(s); expected 4"),
        ("pod~10.0.0.1~a.b~b.svc", "unknown proxy type 'pod'"),
        ("sidecar~not-an-ip~a.b~b.svc", "'not-an-ip' is not an IP address"),
        ("", "must carry a node"),
    ],
)
async def test_malformed_node_is_invalid_argument(
    plane: ControlPlane, node_id: str, text: str
) -> None:
    code, details = await status_of(plane.port, request(CDS, node_id or None))
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert text in details
    assert plane.connections() == []


async def test_missing_type_url_is_invalid_argument(plane: ControlPlane) -> None:
    code, details = await status_of(plane.port, request(""))
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "type_url" in details


async def test_oversized_request_is_resource_exhausted(plane: ControlPlane) -> None:
    big = request(CDS, resource_names=["x" * 1024] * 5000)  # ~5 MiB > 4 MiB limit
    code, _ = await status_of(plane.port, big)
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    # the server keeps serving
    channel, call = await open_stream(plane.port)
    try:
        await call.write(request(CDS))
        assert discovery_pb2.DiscoveryResponse.FromString(await call.read()).resources
    finally:
        await channel.close()


async def test_not_ready_is_unavailable() -> None:
    from pilothouse.sources.memory import MemoryStore

    store = MemoryStore()  # never synced
    discovery = DiscoveryServer(store)
    server = new_grpc_server()
    add_discovery_services(server, discovery)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        code, details = await status_of(port, request(CDS))
        assert code is grpc.StatusCode.UNAVAILABLE and "not ready" in details
    finally:
        await server.stop(0)
        discovery.close()


async def test_closed_stream_leaves_no_state(plane: ControlPlane) -> None:
    channel, call = await open_stream(plane.port)
    await call.write(request(CDS))
    await call.read()
    assert len(plane.connections()) == 1
    await channel.close()
    for _ in range(100):
        if not plane.connections():
            break
        await asyncio.sleep(0.02)
    assert plane.connections() == []
    assert plane.discovery is not None
    assert plane.discovery.pushes.queue.pending() == 0


async def test_per_type_cluster_service(plane: ControlPlane) -> None:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{plane.port}")
    try:
        call = channel.stream_stream(
            "/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )()
        await call.write(request(""))  # type_url may be left out on a per-type stream
        response = discovery_pb2.DiscoveryResponse.FromString(await call.read())
        assert response.type_url == CDS and response.resources
    finally:
        await channel.close()
