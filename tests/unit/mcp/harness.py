"""grpc.aio plumbing for the legacy MCP integration tests: servers on 127.0.0.1, waiting."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import grpc

from pilothouse.mcp.publisher import McpSourceOptions, SnapshotPublisher
from pilothouse.mcp.services import add_mcp_services
from pilothouse.mcp.sink_server import McpSinkServer
from pilothouse.mcp.source_server import McpSourceServer
from pilothouse.sources.events import ConfigStore

FAST = McpSourceOptions(max_wait=0.1, quiesce=0.02, sync_poll=0.01)


async def eventually(check: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    """Wait until ``check()`` holds (polling), or fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        await asyncio.sleep(0.01)


async def start_server(
    *, source: McpSourceServer | None = None, sink: McpSinkServer | None = None, port: int = 0
) -> tuple[grpc.aio.Server, int]:
    """A started grpc.aio server with the MCP services on 127.0.0.1, and its port."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    add_mcp_services(server, source=source, sink=sink)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    assert bound != 0 and (port == 0 or bound == port), f"cannot bind 127.0.0.1:{port}"
    await server.start()
    return server, bound


@contextlib.asynccontextmanager
async def grpc_server(
    *, source: McpSourceServer | None = None, sink: McpSinkServer | None = None, port: int = 0
) -> AsyncIterator[int]:
    """A grpc.aio server with the MCP services on 127.0.0.1; yields its port."""
    server, bound = await start_server(source=source, sink=sink, port=port)
    try:
        yield bound
    finally:
        await server.stop(None)


@contextlib.asynccontextmanager
async def running(
    run: Callable[[], Coroutine[Any, Any, None]], close: Callable[[], None]
) -> AsyncIterator[asyncio.Task[None]]:
    """Run a component's ``run()`` in a task; on exit ``close()`` it and check it returned."""
    task = asyncio.create_task(run())
    try:
        yield task
    finally:
        close()
        await asyncio.wait_for(task, 5)


def source_server(store: ConfigStore, options: McpSourceOptions = FAST) -> McpSourceServer:
    return McpSourceServer(SnapshotPublisher(store, options=options))
