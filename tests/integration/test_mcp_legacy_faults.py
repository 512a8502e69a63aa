"""Faults stop at the legacy MCP message and stream: both sink roles, and the source server.

Real grpc.aio on 127.0.0.1 and pilothouse's own peers: the ``mcp://`` sink client
against the ``ResourceSource`` server, and the dial-out source against the
``ResourceSink`` server. The exception of our own is made by patching the resource
decoder to raise for one object name (a correct decoder cannot be made to fail).
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.config.mcp_resource import ResourceDecoder
from pilothouse.config.model import ConfigKey
from pilothouse.mcp import sink_session
from pilothouse.mcp.dialout import McpDialOutSource
from pilothouse.mcp.messages import Code
from pilothouse.mcp.publisher import SnapshotPublisher
from pilothouse.mcp.sink_client import McpSinkClient
from pilothouse.mcp.sink_server import McpSinkServer
from pilothouse.sources.memory import MemoryStore
from tests.unit.mcp.builders import SE, service_entry
from tests.unit.mcp.harness import FAST, eventually, grpc_server, running, source_server

CURSED = "cursed"
GOOD = ConfigKey("ServiceEntry", "web", "good")


@pytest.fixture
def decoder_raises_on_cursed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """While the list yielded holds CURSED, decoding an object of that name raises
    RuntimeError; clearing the list heals the decoder."""
    real = sink_session.ResourceDecoder.decode
    cursed = [CURSED]

    def decode(self: ResourceDecoder, resource: resource_pb2.Resource) -> object:
        if resource.metadata.name.endswith("/" + CURSED) and cursed:
            raise RuntimeError("decoder bug")
        return real(self, resource)

    monkeypatch.setattr(sink_session.ResourceDecoder, "decode", decode)
    yield cursed


def upstream_with_good() -> MemoryStore:
    upstream = MemoryStore("upstream")
    upstream.apply(service_entry("good", "web"))
    upstream.mark_synced()
    return upstream


async def test_sink_client_nacks_the_message_and_keeps_stream_and_store(
    decoder_raises_on_cursed: list[str],
) -> None:
    upstream = upstream_with_good()
    source = source_server(upstream)
    async with grpc_server(source=source) as port, running(source.run, source.close):
        client = McpSinkClient(f"127.0.0.1:{port}", reconnect_delay=0.1)
        async with running(client.run, client.close) as task:
            await eventually(client.has_synced, what="sink synced")
            held = client.store.get(GOOD)
            assert held is not None
            upstream.apply(service_entry(CURSED, "web"))
            await eventually(lambda: client.sink.totals.nacks == 1, what="the NACK")
            assert client.store.keys() == [GOOD] and client.store.get(GOOD) is held
            # The client counts its NACK when it sends it; the source records it on receipt.
            # streams() describes the streams as they are when called: ask again each time.
            await eventually(
                lambda: [SE in stream.errors for stream in source.streams()] == [True],
                what="the source saw the NACK",
            )
            [stream] = source.streams()
            error = stream.errors[SE]
            assert error.code == Code.INTERNAL
            assert "failed to apply 2 resource(s)" in error.message
            assert "decoder bug" not in error.message

            decoder_raises_on_cursed.clear()
            upstream.apply(service_entry("next", "web"))
            await eventually(
                lambda: (
                    client.store.get(ConfigKey("ServiceEntry", "web", CURSED)) is not None
                    and client.store.get(ConfigKey("ServiceEntry", "web", "next")) is not None
                ),
                what="the next message applies",
            )
            assert client.sink.totals.streams == 1 and not task.done()


async def test_sink_server_nacks_the_message_and_keeps_stream_and_store(
    decoder_raises_on_cursed: list[str],
) -> None:
    upstream = upstream_with_good()
    sink = McpSinkServer()
    async with grpc_server(sink=sink) as port, running(sink.run, sink.close):
        source = McpDialOutSource(
            f"127.0.0.1:{port}", SnapshotPublisher(upstream, options=FAST), reconnect_delay=0.1
        )
        async with running(source.run, source.close):
            await eventually(sink.has_synced, what="sink synced")
            upstream.apply(service_entry(CURSED, "web"))
            await eventually(lambda: sink.sink.totals.nacks == 1, what="the NACK")
            # The sink counts its NACK when it sends it; the source records it on receipt.
            # stream() describes the stream as it is when called: ask again each time.
            await eventually(
                lambda: (live := source.stream()) is not None and SE in live.errors,
                what="the source records it",
            )
            stream = source.stream()
            assert stream is not None
            assert stream.errors[SE].code == Code.INTERNAL
            assert sink.store.keys() == [GOOD]

            decoder_raises_on_cursed.clear()
            upstream.apply(service_entry("next", "web"))
            await eventually(lambda: len(sink.store.keys()) == 3, what="the next message")
            now = source.stream()
            assert now is not None and now.id == stream.id and sink.sink.totals.streams == 1
            assert len(sink.connections()) == 1


@pytest.mark.parametrize(
    ("service", "message"),
    [
        ("istio.mcp.v1alpha1.ResourceSink", "istio.mcp.v1alpha1.Resources"),
        ("istio.mcp.v1alpha1.ResourceSource", "istio.mcp.v1alpha1.RequestResources"),
    ],
)
async def test_undecodable_bytes_are_invalid_argument(service: str, message: str) -> None:
    upstream = upstream_with_good()
    source = source_server(upstream)
    sink = McpSinkServer()
    async with (
        grpc_server(source=source, sink=sink) as port,
        running(source.run, source.close),
        running(sink.run, sink.close),
    ):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.stream_stream(
                f"/{service}/EstablishResourceStream",
                request_serializer=lambda b: b,
                response_deserializer=lambda b: b,
            )()
            await call.write(b"\x0a\xff\x01")
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                while True:
                    await call.read()
        assert ended.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert f"not a valid {message}" in (ended.value.details() or "")


async def test_source_server_ends_one_stream_with_internal_when_deciding_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ResourceSource side: the session raising on one request ends that stream with
    INTERNAL (no Python text); the sink dials again and syncs, the server still serves."""
    from pilothouse.mcp.source_session import SourceSession

    real = SourceSession.receive
    raised: list[int] = []

    def receive_failing_once(self: SourceSession, request: object) -> object:
        if not raised:
            raised.append(1)
            raise RuntimeError("session bug")
        return real(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(SourceSession, "receive", receive_failing_once)
    upstream = upstream_with_good()
    source = source_server(upstream)
    async with grpc_server(source=source) as port, running(source.run, source.close):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2

            call = channel.stream_stream(
                "/istio.mcp.v1alpha1.ResourceSource/EstablishResourceStream",
                request_serializer=mcp_pb2.RequestResources.SerializeToString,
                response_deserializer=lambda b: b,
            )()
            await call.write(mcp_pb2.RequestResources(collection=SE))
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                while True:
                    await call.read()
        assert ended.value.code() is grpc.StatusCode.INTERNAL
        assert "session bug" not in (ended.value.details() or "")
        client = McpSinkClient(f"127.0.0.1:{port}", reconnect_delay=0.1)
        async with running(client.run, client.close):
            await eventually(client.has_synced, what="a new stream syncs")
            assert client.store.keys() == [GOOD]
