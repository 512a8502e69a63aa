"""A push counts until its responses are written: Connection.when_written, the writer loop
(which also reports every write, its push and send time, and every failed one), and the
push workers' deadline, which frees a stalled stream's slot."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.proxy import parse_node
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest
from pilothouse.push.workers import PushWorkers
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


async def written(conn: Connection) -> None:
    """Wait for what the push workers wait for (nothing when there is none)."""
    waiter = conn.when_written()
    if waiter is not None:
        await waiter


async def test_each_write_reports_its_push_and_send_time() -> None:
    clock = StepClock()
    conn, stream, recorder = connection(clock), SlowStream(clock, write_seconds=0.25), Recorder()
    stream.release.set()
    # generated in 0.5 s, queued at 100.0; the clock has moved to 101.0 when it is taken
    conn.outbound.put_nowait(queued(b"clusters", CDS, generation=0.5, at=100.0))
    clock.now = 101.0
    writer = asyncio.create_task(write_responses(conn, stream.write, recorder))
    await asyncio.sleep(0)
    await asyncio.wait_for(written(conn), 1.0)
    conn.outbound.put_nowait(queued(b"endpoints", EDS, generation=0.0, at=clock.now))
    await asyncio.wait_for(written(conn), 1.0)
    conn.close()
    await asyncio.wait_for(writer, 1.0)
    assert recorder.written == [
        (CDS, pytest.approx(0.5 + 1.0 + 0.25), pytest.approx(0.25)),
        (EDS, pytest.approx(0.25), pytest.approx(0.25)),
    ]
    assert recorder.errors == []


async def test_a_writer_that_fails_releases_its_waiters_and_reports_one_send_error() -> None:
    class Broken:
        async def write(self, body: bytes) -> None:
            raise RuntimeError("stream gone")

    stalled, recorder = connection(), Recorder()
    writer: Any = asyncio.create_task(write_responses(stalled, Broken().write, recorder))
    await asyncio.sleep(0)
    stalled.outbound.put_nowait(queued(b"a", EDS))
    stalled.outbound.put_nowait(queued(b"b"))
    waiter = stalled.when_written()
    assert waiter is not None
    await asyncio.wait_for(waiter, 1.0)  # the dead writer released it
    (ended,) = await asyncio.gather(writer, return_exceptions=True)
    assert isinstance(ended, RuntimeError)
    assert recorder.errors == [EDS] and recorder.written == []  # one failed write, then none
    assert stalled.outbound.empty()  # what was left is dropped, not kept alive
    assert stalled.when_written() is None  # no writer: nothing to wait for


async def test_the_workers_give_up_on_a_stalled_stream_after_their_deadline() -> None:
    """The push workers wait for ``when_written`` at most ``deadline`` seconds: a stream
    whose write never finishes holds its push slot no longer, and the connection can be
    pushed again."""
    conn, stream = connection(), SlowStream()
    writer = asyncio.create_task(write_responses(conn, stream.write, Recorder()))
    await asyncio.sleep(0)
    pushes: list[PushRequest] = []

    def push(target: Connection, request: PushRequest) -> asyncio.Future[None] | None:
        pushes.append(request)
        target.outbound.put_nowait(queued(b"stuck"))
        return target.when_written()

    queue: PushQueue[Connection] = PushQueue()
    workers = PushWorkers(queue, push, throttle=1, deadline=0.2)
    running = asyncio.create_task(workers.run())
    loop = asyncio.get_running_loop()
    begin = loop.time()
    queue.enqueue(conn, PushRequest.everything())
    await asyncio.sleep(0.05)
    assert queue.is_in_flight(conn) and workers.running() == 1  # waiting for the write
    while queue.in_flight():
        assert loop.time() - begin < 5.0, "the stalled push was never given up"
        await asyncio.sleep(0.01)
    assert loop.time() - begin >= 0.2
    assert stream.written == [] and workers.running() == 0
    queue.enqueue(conn, PushRequest.everything())  # the slot is free for the next push
    while len(pushes) < 2:
        assert loop.time() - begin < 5.0, "the freed slot was not reused"
        await asyncio.sleep(0.01)
    queue.shutdown()
    stream.release.set()  # the writes finish; the second push's wait ends with them
    await asyncio.wait_for(running, 5.0)
    assert stream.written == [b"stuck", b"stuck"]
    conn.close()
    await asyncio.wait_for(writer, 1.0)


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
