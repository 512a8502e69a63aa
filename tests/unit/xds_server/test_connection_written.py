"""A push counts until its responses are written: Connection.written and the writer loop."""

from __future__ import annotations

import asyncio
from typing import Any

from pilothouse.push.proxy import parse_node
from pilothouse.xds.server.ads import StreamHandler
from pilothouse.xds.server.connection import Connection
from tests.unit.xds_server.test_connection_push import FakeGeneration

NODE = "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local"


def connection() -> Connection:
    return Connection("c-1", "peer", parse_node(NODE, {}), FakeGeneration({}), delta=False)


class SlowStream:
    """A gRPC context stand-in whose writes finish only when released."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.release = asyncio.Event()

    async def write(self, body: bytes) -> None:
        await self.release.wait()
        self.written.append(body)


async def test_written_waits_for_the_writer() -> None:
    conn, stream = connection(), SlowStream()
    writer = asyncio.create_task(StreamHandler._write(conn, stream))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    conn.outbound.put_nowait(b"one")
    conn.outbound.put_nowait(b"two")
    waiting = asyncio.create_task(conn.written(5.0))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the responses are queued, not written
    stream.release.set()
    await asyncio.wait_for(waiting, 1.0)
    assert stream.written == [b"one", b"two"]
    conn.close()
    await asyncio.wait_for(writer, 1.0)


async def test_written_returns_when_the_writer_stops_or_is_absent() -> None:
    conn = connection()
    conn.outbound.put_nowait(b"queued")
    await asyncio.wait_for(conn.written(5.0), 0.5)  # no writer attached: nothing to wait for

    class Broken:
        async def write(self, body: bytes) -> None:
            raise RuntimeError("stream gone")

    stalled = connection()
    writer: Any = asyncio.create_task(StreamHandler._write(stalled, Broken()))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    stalled.outbound.put_nowait(b"a")
    stalled.outbound.put_nowait(b"b")
    await asyncio.wait_for(stalled.written(5.0), 1.0)  # the dead writer released the queue
    await asyncio.gather(writer, return_exceptions=True)


async def test_written_gives_up_after_the_timeout() -> None:
    conn, stream = connection(), SlowStream()
    writer = asyncio.create_task(StreamHandler._write(conn, stream))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    conn.outbound.put_nowait(b"stuck")
    await asyncio.wait_for(conn.written(0.1), 1.0)
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
