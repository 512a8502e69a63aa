"""A push counts until its responses are written: Connection.written and the writer loop,
which also reports every write (push and send time) and every failed one."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.proxy import parse_node
from pilothouse.xds.server.connection import Connection, Queued
from pilothouse.xds.server.writer import write_responses
from tests.unit.xds_server.test_connection_push import FakeGeneration

NODE = "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local"


class StepClock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Recorder:
    written: list[tuple[str, float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def record_written(self, type_url: str, push_seconds: float, send_seconds: float) -> None:
        self.written.append((type_url, push_seconds, send_seconds))

    def record_send_error(self, type_url: str) -> None:
        self.errors.append(type_url)


def connection(clock: StepClock | None = None) -> Connection:
    return Connection(
        "c-1",
        "peer",
        parse_node(NODE, {}),
        FakeGeneration({}),
        delta=False,
        clock=clock if clock is not None else StepClock(),
    )


def queued(body: bytes, type_url: str = CDS, generation: float = 0.0, at: float = 100.0) -> Queued:
    return Queued(body, type_url, generation, at)


class SlowStream:
    """A gRPC context stand-in whose writes finish only when released."""

    def __init__(self, clock: StepClock | None = None, write_seconds: float = 0.0) -> None:
        self.written: list[bytes] = []
        self.release = asyncio.Event()
        self._clock = clock
        self._write_seconds = write_seconds

    async def write(self, body: bytes) -> None:
        await self.release.wait()
        if self._clock is not None:
            self._clock.now += self._write_seconds
        self.written.append(body)


async def test_written_waits_for_the_writer() -> None:
    conn, stream = connection(), SlowStream()
    writer = asyncio.create_task(write_responses(conn, stream.write, Recorder()))
    await asyncio.sleep(0)
    conn.outbound.put_nowait(queued(b"one"))
    conn.outbound.put_nowait(queued(b"two"))
    waiting = asyncio.create_task(conn.written(5.0))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the responses are queued, not written
    stream.release.set()
    await asyncio.wait_for(waiting, 1.0)
    assert stream.written == [b"one", b"two"]
    conn.close()
    await asyncio.wait_for(writer, 1.0)


async def test_each_write_reports_its_push_and_send_time() -> None:
    clock = StepClock()
    conn, stream, recorder = connection(clock), SlowStream(clock, write_seconds=0.25), Recorder()
    stream.release.set()
    # generated in 0.5 s, queued at 100.0; the clock has moved to 101.0 when it is taken
    conn.outbound.put_nowait(queued(b"clusters", CDS, generation=0.5, at=100.0))
    clock.now = 101.0
    writer = asyncio.create_task(write_responses(conn, stream.write, recorder))
    await asyncio.wait_for(conn.written(5.0), 1.0)
    conn.outbound.put_nowait(queued(b"endpoints", EDS, generation=0.0, at=clock.now))
    await asyncio.wait_for(conn.written(5.0), 1.0)
    conn.close()
    await asyncio.wait_for(writer, 1.0)
    assert recorder.written == [
        (CDS, pytest.approx(0.5 + 1.0 + 0.25), pytest.approx(0.25)),
        (EDS, pytest.approx(0.25), pytest.approx(0.25)),
    ]
    assert recorder.errors == []


async def test_written_returns_when_the_writer_stops_or_is_absent() -> None:
    conn = connection()
    conn.outbound.put_nowait(queued(b"queued"))
    await asyncio.wait_for(conn.written(5.0), 0.5)  # no writer attached: nothing to wait for

    class Broken:
        async def write(self, body: bytes) -> None:
            raise RuntimeError("stream gone")

    stalled, recorder = connection(), Recorder()
    writer: Any = asyncio.create_task(write_responses(stalled, Broken().write, recorder))
    await asyncio.sleep(0)
    stalled.outbound.put_nowait(queued(b"a", EDS))
    stalled.outbound.put_nowait(queued(b"b"))
    await asyncio.wait_for(stalled.written(5.0), 1.0)  # the dead writer released the queue
    (ended,) = await asyncio.gather(writer, return_exceptions=True)
    assert isinstance(ended, RuntimeError)
    assert recorder.errors == [EDS] and recorder.written == []  # one failed write, then none


async def test_written_gives_up_after_the_timeout() -> None:
    conn, stream = connection(), SlowStream()
    writer = asyncio.create_task(write_responses(conn, stream.write, Recorder()))
    await asyncio.sleep(0)
    conn.outbound.put_nowait(queued(b"stuck"))
    await asyncio.wait_for(conn.written(0.1), 1.0)
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)


async def test_when_written_resolves_once_the_queue_is_written_or_the_writer_stops() -> None:
    conn, stream = connection(), SlowStream()
    assert conn.when_written() is None  # no writer: nothing to wait for
    writer = asyncio.create_task(write_responses(conn, stream.write, Recorder()))
    await asyncio.sleep(0)
    assert conn.when_written() is None  # nothing queued
    conn.outbound.put_nowait(queued(b"one"))
    conn.outbound.put_nowait(queued(b"two"))
    waiter = conn.when_written()
    assert waiter is not None and conn.when_written() is waiter  # one future for all
    await asyncio.sleep(0.05)
    assert not waiter.done()
    stream.release.set()
    await asyncio.wait_for(waiter, 1.0)
    assert stream.written == [b"one", b"two"]
    stream.release.clear()
    conn.outbound.put_nowait(queued(b"stuck"))
    stuck = conn.when_written()
    assert stuck is not None and stuck is not waiter
    writer.cancel()  # the stream ends with a write in flight
    await asyncio.gather(writer, return_exceptions=True)
    await asyncio.wait_for(stuck, 1.0)
