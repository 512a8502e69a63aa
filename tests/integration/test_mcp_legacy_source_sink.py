"""pilothouse's ResourceSource server ↔ pilothouse's mcp:// sink client, over real grpc.aio."""

from __future__ import annotations

import grpc
import pytest

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.config.model import ConfigKey
from pilothouse.mcp.collection_table import SYNTHETIC_SERVICE_ENTRIES
from pilothouse.mcp.publisher import McpSourceOptions
from pilothouse.mcp.sink_client import McpSinkClient, parse_mcp_url
from pilothouse.sources.memory import MemoryStore
from tests.unit.mcp.builders import SE, service_entry
from tests.unit.mcp.harness import FAST, eventually, grpc_server, running, source_server

SOURCE_METHOD = "/istio.mcp.v1alpha1.ResourceSource/EstablishResourceStream"


def mirrored(upstream: MemoryStore, downstream: MemoryStore) -> bool:
    if upstream.keys() != downstream.keys():
        return False
    for key in upstream.keys():
        mine, theirs = upstream.get(key), downstream.get(key)
        if mine is None or theirs is None or not mine.same_content(theirs):
            return False
    return True


@pytest.mark.parametrize("incremental", [False, True], ids=["full", "incremental"])
async def test_configs_are_mirrored_on_add_update_delete(incremental: bool) -> None:
    upstream = MemoryStore("upstream")
    upstream.apply(service_entry("a", "web"))
    upstream.apply(service_entry("b", "web"))
    upstream.mark_synced()
    options = McpSourceOptions(
        max_wait=0.1, quiesce=0.02, incremental=frozenset({SE}) if incremental else frozenset()
    )
    source = source_server(upstream, options)
    async with (
        grpc_server(source=source) as port,
        running(source.run, source.close),
    ):
        client = McpSinkClient.from_url(
            f"mcp://127.0.0.1:{port}", incremental=incremental, reconnect_delay=0.1
        )
        async with running(client.run, client.close):
            await eventually(client.has_synced, what="sink synced")
            assert mirrored(upstream, client.store)
            assert client.name == f"mcp://127.0.0.1:{port}"
            assert client.store.get(ConfigKey("ServiceEntry", "web", "a")) is not None

            upstream.apply(service_entry("a", "web", host="changed.example.com"))
            upstream.apply(service_entry("c", "web"))
            upstream.delete(ConfigKey("ServiceEntry", "web", "b"))
            await eventually(lambda: mirrored(upstream, client.store), what="mirror")

            totals = client.sink.totals
            assert totals.nacks == 0 and totals.acks >= len(client.sink.options.collections)
            assert (totals.incremental > 0) is incremental
            [stream] = source.streams()
            assert stream.stats.nacks == 0
            assert (stream.stats.incremental_pushes > 0) is incremental
            if incremental:
                # only what changed travelled after the first full push
                assert stream.stats.resources_sent == 2 + 2


async def test_unknown_collection_ends_the_stream_with_invalid_argument() -> None:
    upstream = MemoryStore()
    upstream.mark_synced()
    source = source_server(upstream)
    async with grpc_server(source=source) as port, running(source.run, source.close):
        await eventually(source.has_synced)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.stream_stream(
                SOURCE_METHOD,
                request_serializer=mcp_pb2.RequestResources.SerializeToString,
                response_deserializer=mcp_pb2.Resources.FromString,
            )()
            await call.write(
                mcp_pb2.RequestResources(collection="istio/config/v1alpha2/httpapispecs")
            )
            with pytest.raises(grpc.aio.AioRpcError) as failure:
                await call.read()
            assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "httpapispecs" in (failure.value.details() or "")


async def test_synthetic_service_entries_are_served_empty() -> None:
    upstream = MemoryStore()
    upstream.apply(service_entry("a"))
    upstream.mark_synced()
    source = source_server(upstream)
    async with grpc_server(source=source) as port, running(source.run, source.close):
        await eventually(source.has_synced)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.stream_stream(
                SOURCE_METHOD,
                request_serializer=mcp_pb2.RequestResources.SerializeToString,
                response_deserializer=mcp_pb2.Resources.FromString,
            )()
            await call.write(
                mcp_pb2.RequestResources(collection=SYNTHETIC_SERVICE_ENTRIES, incremental=True)
            )
            response = await call.read()
            assert isinstance(response, mcp_pb2.Resources)
            assert response.collection == SYNTHETIC_SERVICE_ENTRIES
            assert list(response.resources) == [] and response.nonce == "1"
            assert not response.incremental
            call.cancel()


async def test_streams_are_refused_until_the_store_syncs() -> None:
    source = source_server(MemoryStore(), FAST)
    async with (
        grpc_server(source=source) as port,
        running(source.run, source.close),
        grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        call = channel.stream_stream(
            SOURCE_METHOD,
            request_serializer=mcp_pb2.RequestResources.SerializeToString,
            response_deserializer=mcp_pb2.Resources.FromString,
        )()
        # The server refuses as the stream opens, before reading a request, so the client
        # only reads: a write racing the refusal fails inside grpc's core with a synthetic
        # INTERNAL status instead of the server's.
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await call.read()
        assert failure.value.code() is grpc.StatusCode.UNAVAILABLE
        assert "not synced" in (failure.value.details() or "")


def test_mcp_url_parsing() -> None:
    assert parse_mcp_url("mcp://galley.istio-system:9901") == "galley.istio-system:9901"
    assert parse_mcp_url("mcp://[::1]:9901") == "[::1]:9901"
    for bad in ("xds://a:1", "mcp://host", "mcp://:80"):
        with pytest.raises(ValueError, match="mcp://host:port"):
            parse_mcp_url(bad)
