"""The push queue: at most one pending push per connection, FIFO, merging while it waits.

A connection is pending (waiting in FIFO order), in flight (dequeued and not yet marked done),
both (requests arrived while in flight: they wait in a slot that goes back to the end of the
FIFO when the push is marked done), or unknown to the queue. So a connection never has two
pushes in flight, and a request for a connection is never dropped, only merged.

Connections are opaque hashable keys: the queue knows nothing of the server.

Merging is done once per distinct pair of requests, not once per connection: one push
enqueues the same request object for every connection it reaches, and the connections
still waiting from the push before hold one same request too, so under steady churn a
thousand connections would otherwise merge the same two requests (uniting their ever
larger key sets) a thousand times.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, NamedTuple, TypeVar

from pilothouse.push.clock import Clock, LoopClock
from pilothouse.push.request import PushRequest

ConnT = TypeVar("ConnT", bound=Hashable)


class _Waiting(NamedTuple):
    request: PushRequest
    enqueued_at: float


_MERGES_KEPT = 64
"""Distinct (waiting, arriving) request pairs whose merge is remembered (see ``_merge``)."""


class QueuedPush(NamedTuple, Generic[ConnT]):
    """A dequeued push: the connection, its merged request, and seconds spent waiting."""

    conn: ConnT
    request: PushRequest
    queue_time: float


class PushQueue(Generic[ConnT]):
    """Per-connection push queue (istiod's ``PushQueue``), for use inside one event loop."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._pending: OrderedDict[ConnT, _Waiting] = OrderedDict()
        # In flight; the value holds requests that arrived meanwhile (None if there were none).
        self._processing: dict[ConnT, _Waiting | None] = {}
        self._ready = asyncio.Event()
        self._shut = False
        self._merged: dict[tuple[int, int], tuple[PushRequest, PushRequest, PushRequest]] = {}
        """(id(waiting), id(arriving)) → both requests (kept, so the ids stay theirs) and
        their merge."""

    def enqueue(self, conn: ConnT, request: PushRequest) -> None:
        """Queue ``request`` for ``conn``, merging with what is already waiting for it."""
        if self._shut:
            return
        if conn in self._processing:
            after = self._processing[conn]
            self._processing[conn] = (
                _Waiting(request, self._clock.now())
                if after is None
                else _Waiting(self._merge(after.request, request), after.enqueued_at)
            )
            return
        waiting = self._pending.get(conn)
        if waiting is not None:
            # keeps its place in the FIFO
            self._pending[conn] = _Waiting(
                self._merge(waiting.request, request), waiting.enqueued_at
            )
            return
        self._pending[conn] = _Waiting(request, self._clock.now())
        self._ready.set()

    def _merge(self, waiting: PushRequest, arriving: PushRequest) -> PushRequest:
        """``waiting.merge(arriving)``, made once per distinct pair (requests are immutable)."""
        key = (id(waiting), id(arriving))
        known = self._merged.get(key)
        if known is not None and known[0] is waiting and known[1] is arriving:
            return known[2]
        merged = waiting.merge(arriving)
        if len(self._merged) >= _MERGES_KEPT:
            self._merged.clear()
        self._merged[key] = (waiting, arriving, merged)
        return merged

    def try_dequeue(self) -> QueuedPush[ConnT] | None:
        """The head of the FIFO, now in flight; None if nothing is pending."""
        if not self._pending:
            return None
        conn, waiting = self._pending.popitem(last=False)
        self._processing[conn] = None
        return QueuedPush(conn, waiting.request, self._clock.now() - waiting.enqueued_at)

    async def dequeue(self) -> QueuedPush[ConnT] | None:
        """Wait for the next push and mark its connection in flight; None after shutdown."""
        while True:
            if self._shut:
                return None
            item = self.try_dequeue()
            if item is not None:
                return item
            self._ready.clear()
            await self._ready.wait()

    def mark_done(self, conn: ConnT) -> None:
        """The push for ``conn`` is finished; requests that came meanwhile go to the FIFO's end."""
        if conn not in self._processing:
            return
        after = self._processing.pop(conn)
        if after is not None and not self._shut:
            self._pending[conn] = after
            self._ready.set()

    def remove(self, conn: ConnT) -> None:
        """Forget ``conn`` entirely (its stream closed); a later ``mark_done`` does nothing."""
        self._pending.pop(conn, None)
        self._processing.pop(conn, None)

    def shutdown(self) -> None:
        """Drop everything pending and wake every ``dequeue`` waiter with None."""
        self._shut = True
        self._pending.clear()
        self._merged.clear()
        self._ready.set()

    @property
    def is_shut_down(self) -> bool:
        return self._shut

    def pending(self) -> int:
        """Connections waiting in the FIFO."""
        return len(self._pending)

    def in_flight(self) -> int:
        """Connections dequeued and not yet marked done."""
        return len(self._processing)

    def is_pending(self, conn: ConnT) -> bool:
        return conn in self._pending

    def is_in_flight(self, conn: ConnT) -> bool:
        return conn in self._processing

    def __contains__(self, conn: object) -> bool:
        return conn in self._pending or conn in self._processing
