"""A raw grpc.aio ADS client for tests that send bytes of their choosing: well-formed
requests, broken ones, or random bytes, over SotW or delta, and read what comes back."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import grpc
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import CDS
from pilothouse.xds.server.ads import ADS_SERVICE

SOTW = "StreamAggregatedResources"
DELTA = "DeltaAggregatedResources"


def sotw_request(type_url: str, node_id: str | None = None, **fields: Any) -> bytes:
    message = discovery_pb2.DiscoveryRequest(type_url=type_url, **fields)
    if node_id is not None:
        message.node.id = node_id
    return bytes(message.SerializeToString())


def delta_request(type_url: str, node_id: str | None = None, **fields: Any) -> bytes:
    message = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url, **fields)
    if node_id is not None:
        message.node.id = node_id
    return bytes(message.SerializeToString())


@dataclass
class AdsStream:
    """One open stream; ``close`` ends it and its channel."""

    channel: grpc.aio.Channel
    call: grpc.aio.StreamStreamCall[bytes, bytes]
    delta: bool

    async def send(self, body: bytes) -> None:
        """Write one message; if the server has ended the stream meanwhile, the status is
        left for :meth:`read` or :meth:`status` to report."""
        with contextlib.suppress(grpc.aio.AioRpcError):
            await self.call.write(body)

    async def read(self, timeout: float = 5.0) -> Any:
        """The next response, parsed; raises AioRpcError when the stream ends with a status."""
        body = await asyncio.wait_for(self.call.read(), timeout)
        if body is grpc.aio.EOF:
            raise EOFError("the stream ended without a status")
        kind = (
            discovery_pb2.DeltaDiscoveryResponse if self.delta else discovery_pb2.DiscoveryResponse
        )
        return kind.FromString(body)

    async def status(self, timeout: float = 5.0) -> tuple[grpc.StatusCode, str]:
        """Read until the stream ends; its status code and details."""
        try:
            while True:
                await self.read(timeout)
        except grpc.aio.AioRpcError as ended:
            return ended.code(), ended.details() or ""

    async def close(self) -> None:
        await self.channel.close()


async def open_ads(port: int, *, delta: bool = False, service: str = ADS_SERVICE) -> AdsStream:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    method = DELTA if delta else SOTW
    if service != ADS_SERVICE:
        method = "DeltaClusters" if delta else "StreamClusters"
    call = channel.stream_stream(
        f"/{service}/{method}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )()
    return AdsStream(channel, call, delta)


def cluster_names(response: Any) -> set[str]:
    """The cluster names in a SotW or delta CDS response."""
    names = set()
    for item in response.resources:
        packed = item.resource if hasattr(item, "resource") else item
        cluster = cluster_pb2.Cluster()
        packed.Unpack(cluster)
        names.add(cluster.name)
    return names


async def converge(port: int, node_id: str, wanted: str, *, delta: bool = False) -> set[str]:
    """A well-behaved client: subscribe to CDS, read until ``wanted`` is among the clusters,
    ACK, and return the clusters seen. Fails (TimeoutError) if it never comes."""
    stream = await open_ads(port, delta=delta)
    try:
        first = delta_request(CDS, node_id) if delta else sotw_request(CDS, node_id)
        await stream.send(first)
        async with asyncio.timeout(10):
            while True:
                response = await stream.read()
                names = cluster_names(response)
                if delta:
                    await stream.send(delta_request(CDS, response_nonce=response.nonce))
                else:
                    ack = sotw_request(
                        CDS, version_info=response.version_info, response_nonce=response.nonce
                    )
                    await stream.send(ack)
                if wanted in names:
                    return names
    finally:
        await stream.close()
