"""Admission control on the xDS port, through real grpc.aio streams: the connection limit
refuses with UNAVAILABLE at once, the rate limit makes a stream wait its turn and refuses
one whose turn is beyond the wait with RESOURCE_EXHAUSTED; every kind of stream (ADS
SotW and delta, per-type, legacy MCP) passes the same door and shows in its counters."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc
import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.mcp.publisher import SnapshotPublisher
from pilothouse.mcp.source_server import McpSourceServer
from pilothouse.protocol.type_urls import CDS
from pilothouse.settings import AdmissionSettings, XdsSettings
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.admission import Admission
from tests.e2e.harness.control_plane import FAST, ControlPlane
from tests.integration.test_xds_server import MESH, open_stream, request, status_of
from tests.unit.mcp.builders import SE, service_entry
from tests.unit.mcp.harness import FAST as MCP_FAST
from tests.unit.mcp.harness import eventually, grpc_server, running

SOURCE_METHOD = "/istio.mcp.v1alpha1.ResourceSource/EstablishResourceStream"


async def started(admission: AdmissionSettings) -> ControlPlane:
    plane = ControlPlane(settings=XdsSettings(debounce=FAST.debounce, admission=admission))
    plane.apply_yaml(MESH)
    await plane.start()
    return plane


@pytest.fixture
async def channels() -> AsyncIterator[list[grpc.aio.Channel]]:
    """Channels a test opened; closed at the end."""
    opened: list[grpc.aio.Channel] = []
    try:
        yield opened
    finally:
        for channel in opened:
            await channel.close()


async def served_stream(
    port: int, channels: list[grpc.aio.Channel], method: str = "StreamAggregatedResources"
) -> grpc.aio.StreamStreamCall[bytes, bytes]:
    """A stream that asked for clusters and got them (it holds a place)."""
    channel, call = await open_stream(port, method)
    channels.append(channel)
    await call.write(request(CDS) if "Delta" not in method else delta_request())
    await asyncio.wait_for(call.read(), 5)
    return call


def delta_request() -> bytes:
    message = discovery_pb2.DeltaDiscoveryRequest(type_url=CDS)
    message.node.id = "sidecar~10.0.0.2~app-2.data~data.svc.cluster.local"
    return bytes(message.SerializeToString())


async def test_beyond_the_connection_limit_a_stream_is_refused_at_once_with_unavailable(
    channels: list[grpc.aio.Channel],
) -> None:
    plane = await started(AdmissionSettings(rate=0, max_connections=2))
    try:
        first = await served_stream(plane.port, channels)
        await served_stream(plane.port, channels, "DeltaAggregatedResources")
        began = time.monotonic()
        code, details = await status_of(plane.port, request(CDS))
        assert time.monotonic() - began < 1.0  # refused at once, not after a wait
        assert code is grpc.StatusCode.UNAVAILABLE
        assert "limit of 2 xDS connections" in details and "circuit breaker" in details
        assert len(plane.connections()) == 2

        first.cancel()  # a place frees up: the next stream is let in
        assert plane.discovery is not None
        admission = plane.discovery.admission
        for _ in range(250):
            if admission.connections < 2:
                break
            await asyncio.sleep(0.02)
        await served_stream(plane.port, channels)
        counts = admission.snapshot()
        assert counts.admitted == 3
        assert counts.rejected["max_connections"] == 1
        assert counts.connections == 2
    finally:
        await plane.stop()


async def test_a_stream_waits_for_its_turn_and_one_beyond_the_wait_gets_resource_exhausted(
    channels: list[grpc.aio.Channel],
) -> None:
    # one new stream a second: the first is let in at once, the second waits its turn a
    # second later, the third's turn is two seconds away, beyond the one-second wait
    plane = await started(AdmissionSettings(rate=1, burst=1, wait=1.0))
    try:
        began = time.monotonic()
        await served_stream(plane.port, channels)
        assert time.monotonic() - began < 0.9

        second = asyncio.create_task(served_stream(plane.port, channels))
        await asyncio.sleep(0.1)
        refused_at = time.monotonic()
        code, details = await status_of(plane.port, request(CDS))
        refused_after = time.monotonic() - refused_at
        assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "request rate limit exceeded" in details and "1 new xDS streams a second" in details
        assert refused_after < 0.5  # told at once: its turn could not come within the wait
        await asyncio.wait_for(second, 5)
        waited = time.monotonic() - began
        assert 0.9 <= waited <= 2.5, waited  # its turn came one second after the first's

        assert plane.discovery is not None
        counts = plane.discovery.admission.snapshot()
        assert (counts.admitted, counts.rejected["rate_limited"]) == (2, 1)
    finally:
        await plane.stop()


async def test_the_limits_can_be_changed_while_serving(channels: list[grpc.aio.Channel]) -> None:
    plane = await started(AdmissionSettings(rate=0))
    try:
        assert plane.discovery is not None
        admission = plane.discovery.admission
        await served_stream(plane.port, channels)
        admission.configure(max_connections=1)
        code, _ = await status_of(plane.port, request(CDS))
        assert code is grpc.StatusCode.UNAVAILABLE
        admission.configure(max_connections=0)
        await served_stream(plane.port, channels, "StreamAggregatedResources")
        assert admission.snapshot().rejected["max_connections"] == 1
    finally:
        await plane.stop()


async def test_bad_nodes_and_not_ready_refusals_are_counted(
    channels: list[grpc.aio.Channel],
) -> None:
    plane = await started(AdmissionSettings(rate=0))
    try:
        assert plane.discovery is not None
        code, _ = await status_of(plane.port, request(CDS, "bad"))
        assert code is grpc.StatusCode.INVALID_ARGUMENT
        code, _ = await status_of(plane.port, request(CDS, None))
        assert code is grpc.StatusCode.INVALID_ARGUMENT
        plane.discovery._ready.clear()  # as before the first sync
        code, _ = await status_of(plane.port, request(CDS))
        assert code is grpc.StatusCode.UNAVAILABLE
        counts = plane.discovery.admission.snapshot()
        assert counts.rejected["bad_node"] == 2 and counts.rejected["not_ready"] == 1
        assert counts.admitted == 2  # the bad nodes were let in, then refused on reading
        assert counts.connections == 0
    finally:
        await plane.stop()


async def test_legacy_mcp_streams_pass_the_same_door() -> None:
    upstream = MemoryStore()
    upstream.apply(service_entry("a", "web"))
    upstream.mark_synced()
    admission = Admission(AdmissionSettings(rate=0, max_connections=1))
    source = McpSourceServer(SnapshotPublisher(upstream, options=MCP_FAST), admission=admission)
    async with (
        grpc_server(source=source) as port,
        running(source.run, source.close),
        grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        await eventually(source.has_synced)
        method = channel.stream_stream(
            SOURCE_METHOD,
            request_serializer=mcp_pb2.RequestResources.SerializeToString,
            response_deserializer=mcp_pb2.Resources.FromString,
        )
        first = method()
        await first.write(mcp_pb2.RequestResources(collection=SE))
        assert (await asyncio.wait_for(first.read(), 5)).collection == SE
        second = method()
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await second.write(mcp_pb2.RequestResources(collection=SE))
            await asyncio.wait_for(second.read(), 5)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
        assert "circuit breaker" in (refused.value.details() or "")
        counts = admission.snapshot()
        assert (counts.admitted, counts.rejected["max_connections"]) == (1, 1)
        first.cancel()
