"""Keepalive really drops a proxy that vanished without closing its connection (a node
that lost power, a dropped NAT entry): the server's ping goes unanswered and, after
``keepalive_time + keepalive_timeout``, the connection and its stream are gone.

The proxy talks to the server through a TCP relay on loopback that the test can freeze:
frozen, it forwards nothing either way and closes nothing, as a dead peer behaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from pilothouse.protocol.type_urls import CDS
from pilothouse.settings import AdmissionSettings, XdsSettings
from tests.e2e.harness.control_plane import FAST, ControlPlane
from tests.integration.test_xds_server import MESH, open_stream, request

KEEPALIVE = 0.5
TIMEOUT = 0.5


class FreezingRelay:
    """Forwards one TCP connection to ``port`` until :meth:`freeze`, then holds it silent."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.frozen = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._writers += [writer, upstream_writer]
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while not self.frozen.is_set():
            data = await source.read(65536)
            if not data or self.frozen.is_set():
                return  # frozen: the bytes are dropped and nothing is closed
            sink.write(data)
            await sink.drain()

    def freeze(self) -> None:
        self.frozen.set()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def test_a_proxy_that_stops_answering_is_dropped_after_the_keepalive_timeout() -> None:
    plane = ControlPlane(
        settings=XdsSettings(
            debounce=FAST.debounce,
            keepalive_time=KEEPALIVE,
            keepalive_timeout=TIMEOUT,
            max_connection_age=0,
            admission=AdmissionSettings(rate=0),
        )
    )
    plane.apply_yaml(MESH)
    await plane.start()
    relay = FreezingRelay(plane.port)
    relay_port = await relay.start()
    channel, call = await open_stream(relay_port)
    try:
        await call.write(request(CDS))
        await asyncio.wait_for(call.read(), 5)
        assert len(plane.connections()) == 1
        assert plane.discovery is not None
        await asyncio.sleep(6 * KEEPALIVE)  # pings come and are answered: it stays
        assert len(plane.connections()) == 1

        relay.freeze()
        frozen = time.monotonic()
        while plane.connections():
            assert time.monotonic() - frozen < 10 * (KEEPALIVE + TIMEOUT), "never dropped"
            await asyncio.sleep(0.02)
        dropped_after = time.monotonic() - frozen
        # the next ping is at most one interval away, then unanswered for the timeout
        assert TIMEOUT <= dropped_after <= KEEPALIVE + TIMEOUT + 1.0, dropped_after
        assert plane.discovery.admission.connections == 0
    finally:
        call.cancel()
        await channel.close()
        await relay.close()
        await plane.stop()
