"""Outbound: a stream's queued responses, read by its writer in order."""

from __future__ import annotations

import asyncio

import pytest

from pilothouse.xds.server.outbound import Outbound


async def test_items_come_out_in_the_order_they_went_in() -> None:
    queue: Outbound[int | None] = Outbound()
    for item in (1, 2, None):
        queue.put_nowait(item)
    assert queue.qsize() == 3 and not queue.empty()
    assert [await queue.get(), queue.get_nowait(), await queue.get()] == [1, 2, None]
    assert queue.empty() and queue.qsize() == 0


async def test_an_empty_queue_refuses_get_nowait_as_asyncios_does() -> None:
    with pytest.raises(asyncio.QueueEmpty):
        Outbound[bytes]().get_nowait()


async def test_a_waiting_reader_is_woken_by_the_next_item() -> None:
    queue: Outbound[bytes] = Outbound()
    reader = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not reader.done()  # nothing queued: it waits
    queue.put_nowait(b"clusters")
    queue.put_nowait(b"endpoints")
    assert await asyncio.wait_for(reader, 5) == b"clusters"
    assert await queue.get() == b"endpoints"  # already there: no wait


async def test_a_cancelled_reader_loses_nothing_and_the_next_reader_gets_it() -> None:
    queue: Outbound[bytes] = Outbound()
    reader = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    queue.put_nowait(b"listeners")  # the cancelled reader's wake-up is not reused
    assert queue.qsize() == 1
    assert await asyncio.wait_for(queue.get(), 5) == b"listeners"
