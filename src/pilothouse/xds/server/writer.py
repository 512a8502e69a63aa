"""The writer loop of one stream: send a connection's queued responses, in order, timed.

Each written response is reported to a :class:`WriteRecorder` (the discovery server)
with its push time (generating it, waiting in the queue and writing it: istiod's
``pilot_xds_push_time``, whose ``Send`` blocks as this write does) and its send time
(the write alone: ``pilot_xds_send_time``); a write that fails is reported as a send
error and ends the loop. Timing uses the connection's ``clock``, so a server that does
not record metrics reads no clock here either.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from pilothouse.xds.server.connection import Connection

Write = Callable[[bytes], Awaitable[object]]
"""Writes one message to the stream (``grpc.aio.ServicerContext.write``)."""


class WriteRecorder(Protocol):
    def record_written(self, type_url: str, push_seconds: float, send_seconds: float) -> None:
        """A response of ``type_url`` was written."""
        ...

    def record_send_error(self, type_url: str) -> None:
        """Writing a response of ``type_url`` raised."""
        ...


async def write_responses(connection: Connection, write: Write, recorder: WriteRecorder) -> None:
    """Send queued responses until the connection closes (or a write raises).

    Whatever is left queued when the loop ends is dropped (nothing will write it). No
    local keeps the last response alive while the stream idles (about 50 KiB per idle
    connection otherwise). Whoever waits for the queue to run empty
    (:meth:`Connection.when_written`) is woken when it does, and when the loop ends.
    """
    outbound = connection.outbound
    clock = connection.clock
    connection.writer_attached = True
    try:
        while True:
            # a push queues a response or two at once: only the first is waited for
            queued = await outbound.get() if outbound.empty() else outbound.get_nowait()
            if queued is None:
                return
            started = clock()
            try:
                await write(queued.body)
            except Exception:
                recorder.record_send_error(queued.type_url)
                raise
            finally:
                if connection.written_waiter is not None and outbound.empty():
                    connection.drained()
            done = clock()
            recorder.record_written(
                queued.type_url, queued.generation + done - queued.queued_at, done - started
            )
            del queued
    finally:
        # Nothing more will be written: whoever waits for the queue to drain goes on.
        connection.writer_attached = False
        while not outbound.empty():
            outbound.get_nowait()
        connection.drained()
