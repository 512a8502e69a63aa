"""Reverse mode: pilothouse's dial-out source → pilothouse's ResourceSink server."""

from __future__ import annotations

from pilothouse.config.model import ConfigKey
from pilothouse.mcp.dialout import McpDialOutSource, parse_sink_meta
from pilothouse.mcp.messages import Code
from pilothouse.mcp.publisher import SnapshotPublisher
from pilothouse.mcp.sink_server import McpSinkServer
from pilothouse.sources.memory import MemoryStore
from tests.unit.mcp.builders import SE, service_entry
from tests.unit.mcp.harness import FAST, eventually, grpc_server, running, start_server


def dial_out(port: int, store: MemoryStore, meta: tuple[str, ...] = ()) -> McpDialOutSource:
    return McpDialOutSource(
        f"127.0.0.1:{port}",
        SnapshotPublisher(store, options=FAST),
        metadata=parse_sink_meta(meta),
        reconnect_delay=0.1,
    )


async def test_trigger_handshake_then_configs_arrive_with_sink_metadata() -> None:
    upstream = MemoryStore("upstream")
    upstream.apply(service_entry("a", "web"))
    upstream.mark_synced()
    sink = McpSinkServer()
    async with grpc_server(sink=sink) as port, running(sink.run, sink.close):
        source = dial_out(port, upstream, ("cluster=c1,Zone=z1",))
        async with running(source.run, source.close):
            await eventually(sink.has_synced, what="sink synced")
            assert sink.store.get(ConfigKey("ServiceEntry", "web", "a")) is not None
            stream = source.stream()
            assert stream is not None
            assert stream.stats.triggers == 1  # the sink's UNIMPLEMENTED NACK, ignored
            assert stream.stats.nacks == 0
            assert sink.sink.totals.unsupported == 1  # ... for "$triggerCollection"
            [connection] = sink.connections()
            assert connection.metadata["cluster"] == "c1"
            assert connection.metadata["zone"] == "z1"

            upstream.apply(service_entry("b", "web"))
            upstream.delete(ConfigKey("ServiceEntry", "web", "a"))
            await eventually(
                lambda: sink.store.keys() == [ConfigKey("ServiceEntry", "web", "b")],
                what="update and delete arrive",
            )


async def test_bad_object_is_nacked_with_its_reason_and_the_good_ones_apply() -> None:
    upstream = MemoryStore("upstream")
    upstream.apply(service_entry("good", "web"))
    upstream.apply(service_entry("bad", "web", valid=False))  # no hosts
    upstream.mark_synced()
    sink = McpSinkServer()
    async with grpc_server(sink=sink) as port, running(sink.run, sink.close):
        source = dial_out(port, upstream)
        async with running(source.run, source.close):
            await eventually(sink.has_synced, what="sink synced")
            await eventually(lambda: (s := source.stream()) is not None and s.stats.nacks == 1)
            assert sink.store.keys() == [ConfigKey("ServiceEntry", "web", "good")]
            stream = source.stream()
            assert stream is not None
            error = stream.errors[SE]
            assert error.code == Code.INVALID_ARGUMENT
            assert "web/bad" in error.message and "at least one host" in error.message
            assert [r.name for r in sink.sink.last_rejections] == ["web/bad"]

            upstream.apply(service_entry("bad", "web"))  # fixed: the next push carries it
            await eventually(
                lambda: sink.store.get(ConfigKey("ServiceEntry", "web", "bad")) is not None,
                what="fixed object applied",
            )


async def test_dial_out_source_dials_again_after_the_sink_restarts() -> None:
    upstream = MemoryStore("upstream")
    upstream.apply(service_entry("a", "web"))
    upstream.mark_synced()
    first = McpSinkServer()
    server, port = await start_server(sink=first)
    source = dial_out(port, upstream)
    async with running(source.run, source.close):
        await eventually(first.has_synced, what="first sink synced")
        await server.stop(None)
        upstream.apply(service_entry("b", "web"))
        second = McpSinkServer()
        server, _ = await start_server(sink=second, port=port)
        try:
            await eventually(second.has_synced, what="second sink synced")
            assert second.store.keys() == [
                ConfigKey("ServiceEntry", "web", "a"),
                ConfigKey("ServiceEntry", "web", "b"),
            ]
            stream = source.stream()
            assert stream is not None and stream.stats.triggers == 1
        finally:
            await server.stop(None)
