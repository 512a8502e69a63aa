"""The mcp:// sink client across a restart of its ResourceSource server on the same port."""

from __future__ import annotations

from pilothouse.config.model import ConfigKey
from pilothouse.mcp.publisher import McpSourceOptions
from pilothouse.mcp.sink_client import McpSinkClient
from pilothouse.sources.memory import MemoryStore
from tests.unit.mcp.builders import SE, service_entry
from tests.unit.mcp.harness import eventually, running, source_server, start_server

INCREMENTAL = McpSourceOptions(max_wait=0.1, quiesce=0.02, incremental=frozenset({SE}))


def names(store: MemoryStore) -> list[str]:
    return [f"{k.namespace}/{k.name}" for k in store.keys()]


async def test_sink_keeps_its_state_while_down_and_resumes_after_restart() -> None:
    upstream = MemoryStore("upstream")
    for name in ("a", "b", "c"):
        upstream.apply(service_entry(name, "web"))
    upstream.mark_synced()

    first = source_server(upstream, INCREMENTAL)
    server, port = await start_server(source=first)
    client = McpSinkClient(f"127.0.0.1:{port}", incremental=True, reconnect_delay=0.1)
    async with running(client.run, client.close):
        async with running(first.run, first.close):
            await eventually(client.has_synced, what="first sync")
            assert names(client.store) == ["web/a", "web/b", "web/c"]
            await server.stop(None)
        await eventually(lambda: not client.connected, what="client notices the restart")

        # While the server is down the client keeps its last good state.
        assert names(client.store) == ["web/a", "web/b", "web/c"]
        assert client.has_synced()
        upstream.apply(service_entry("a", "web", host="moved.example.com"))
        upstream.delete(ConfigKey("ServiceEntry", "web", "c"))
        upstream.apply(service_entry("d", "web"))

        second = source_server(upstream, INCREMENTAL)
        server, _ = await start_server(source=second, port=port)
        try:
            async with running(second.run, second.close):
                await eventually(
                    lambda: names(client.store) == ["web/a", "web/b", "web/d"], what="resumed"
                )
                moved = client.store.get(ConfigKey("ServiceEntry", "web", "a"))
                assert moved is not None and list(moved.spec.hosts) == ["moved.example.com"]  # type: ignore[attr-defined]
                [stream] = second.streams()
                # The client announced what it held: only a (changed) and d (new) travel,
                # c goes as a removal, b is not sent again.
                assert stream.stats.incremental_pushes >= 1
                assert stream.stats.resources_sent == 2
                assert client.sink.totals.streams == 2
                assert client.sink.totals.nacks == 0
        finally:
            await server.stop(None)
