"""The responses one stream has queued for its writer, in order.

Every push appends a response or two to each of its connections' queues and the
stream's writer loop (:mod:`pilothouse.xds.server.writer`) takes them off: per response
that is one append and, when the writer sleeps, one wake-up. ``asyncio.Queue`` does
more for each (a count of unfinished tasks, an event cleared, putters woken, a new
future per wait) for features a stream's queue never uses: it is unbounded and has one
reader. :class:`Outbound` keeps only what the writer needs: a deque, and one future the
writer sleeps on, made when it has to sleep and resolved by the next append.

It answers ``put_nowait``/``get_nowait``/``get``/``empty``/``qsize`` as the asyncio
queue does (``get_nowait`` on an empty one raises :class:`asyncio.QueueEmpty`), so a
reader written for either reads both.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Outbound(Generic[T]):
    """An unbounded FIFO for one event loop, read by one writer at a time.

    Several readers would still each get every item exactly once (they sleep on the same
    future, and whoever runs first takes the item), only without asyncio's fairness.
    """

    __slots__ = ("_items", "_loop", "_waiter")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The reader's loop, looked up once (each lookup asks the OS for the pid)."""

    def put_nowait(self, item: T) -> None:
        """Append ``item``; wake the reader if it sleeps."""
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # cancelled with its reader
                waiter.set_result(None)

    def get_nowait(self) -> T:
        """The oldest item; :class:`asyncio.QueueEmpty` if there is none."""
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    async def get(self) -> T:
        """The oldest item, once there is one."""
        items = self._items
        while not items:
            waiter = self._waiter
            if waiter is None or waiter.done():
                loop = self._loop
                if loop is None:
                    loop = self._loop = asyncio.get_running_loop()
                waiter = self._waiter = loop.create_future()
            await waiter
        return items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)
