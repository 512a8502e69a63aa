"""Push workers: drain the push queue with at most ``push_throttle`` pushes running at once.

Like istiod's sender loop, a worker slot is taken *before* dequeuing, so a connection stays in
the queue (where it keeps merging) until a slot is free; every push is marked done when it
finishes, whether it succeeded or not. The throttle can change while the workers run
(:meth:`PushWorkers.set_throttle`, the admin API's ``push.throttle``): the next push
taken off the queue obeys it; pushes already running are not stopped.

One loop runs every push, without a task per push: the push function is called in the
loop and either finishes there (it returns None), or returns what to wait for: a future
or a :class:`~pilothouse.push.signal.Signal` (the server's pushes: resolved by the writer
once the connection's responses are written, without a loop step in between), whose
completion frees the slot, or a coroutine, run as a task of its own. A future waits at
most ``deadline`` seconds: one timer for all of them, re-armed for the oldest, resolves
those past their deadline (a slow or dead stream holds its slot no longer than that,
as a timeout per write would, without a timer per push).

Once written, a push frees its slot, but with ``answered`` given its connection stays in
flight in the queue until the proxy has answered (ACKed or NACKed) what it was sent, or
``answer_wait`` seconds have passed: pushes that come meanwhile merge into one, as the
queue merges them while a connection waits for a slot. Without that hold, a proxy slower
to read than the server is to write gets push after push each carrying a few changes,
and every later change waits behind them in the transport (``bench/endpoint_churn.py``
at 1,000 proxies: in loaded rounds up to four responses in five were superseded before
their ACK came back, and the event p99 reached twice the floor's, whose batches wait
for every ACK).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pilothouse.push.deadlines import Deadlines
from pilothouse.push.queue import PushQueue, QueuedPush
from pilothouse.push.request import PushRequest
from pilothouse.push.signal import Signal, Waited
from pilothouse.push.slots import Slots

_log = logging.getLogger(__name__)

ConnT = TypeVar("ConnT", bound=Hashable)

DEFAULT_PUSH_THROTTLE = 100
"""Concurrent pushes when none is configured, whatever the number of cores.

istiod sizes its throttle by cores (min(15 + 5 × cores, 100): 25 on two), because its
pushes are goroutines generating in parallel. Here every push generates on the one
event loop, so a slot bounds only the responses waiting to be written, and few slots
cost CPU: the writes of a fan-out then complete a few at a time, each completion a wake-up
of its own. Measured with bench/push_fanout.py (1,000 SotW proxies, this 2-core machine,
in-run transport floor): server CPU per EDS push floor ÷ pilothouse 0.51 with 25 slots,
0.72-0.83 with 100 or 250; CDS 0.33 → 0.42-0.45. A hundred in flight hold at most a
hundred responses (2 MB of clusters at 100 services per proxy).
"""


ANSWER_WAIT = 1.0
"""Seconds a connection's next push waits at most for the proxy to answer the last one
(a proxy that never ACKs is still pushed, at most once per this)."""


def default_push_throttle() -> int:
    """The automatic throttle (:data:`DEFAULT_PUSH_THROTTLE`)."""
    return DEFAULT_PUSH_THROTTLE


def push_throttle(configured: int = 0) -> int:
    """The throttle to use: a configured 0 (or less) means the automatic default."""
    return configured if configured > 0 else default_push_throttle()


@dataclass(frozen=True, slots=True)
class PushWorkerStats:
    """Counters for ``pilot_proxy_queue_time`` and concurrency, until metrics arrive."""

    pushes: int = 0
    failures: int = 0
    total_queue_time: float = 0.0
    max_queue_time: float = 0.0
    max_concurrent: int = 0


ConnPushFn = Callable[[ConnT, PushRequest], Awaitable[None] | Signal | None]
"""Runs one push: None when it finished in the call, else a future, a signal or a
coroutine to await."""
AnswerFn = Callable[[ConnT], Waited | None]
"""What a connection's next push waits for once its last one is written (None: nothing)."""


class PushWorkers(Generic[ConnT]):
    """Takes pushes off a :class:`PushQueue` and runs ``push(conn, request)`` concurrently.

    ``run`` returns once the queue is shut down and the pushes in flight have finished.
    ``observe_queue_time`` (optional) receives each push's queue time in seconds.
    """

    def __init__(
        self,
        queue: PushQueue[ConnT],
        push: ConnPushFn[ConnT],
        throttle: int | None = None,
        *,
        observe_queue_time: Callable[[float], None] | None = None,
        deadline: float | None = None,
        answered: AnswerFn[ConnT] | None = None,
        answer_wait: float = ANSWER_WAIT,
    ) -> None:
        """``deadline``: seconds a push's future is waited for (None: no limit);
        ``answered``: what holds a connection's next push once its last is written, at
        most ``answer_wait`` seconds (module docstring)."""
        self._queue = queue
        self._push = push
        self.throttle = push_throttle(throttle or 0)
        self._observe = observe_queue_time
        self._deadline = deadline
        self._slots = Slots(self.throttle)
        self._tasks: set[asyncio.Task[bool]] = set()
        self._waiting = Deadlines(deadline if deadline is not None else 0.0)
        """Pushes in flight, given up on after ``deadline`` (none when it is None)."""
        self._answered = answered
        self._held = Deadlines(answer_wait)
        """Answers awaited, given up on after ``answer_wait``."""
        self._active = 0
        # plain counters, read as one frozen value: a push must not rebuild a dataclass
        self._pushes = 0
        self._failures = 0
        self._total_queue_time = 0.0
        self._max_queue_time = 0.0
        self._max_concurrent = 0

    @property
    def stats(self) -> PushWorkerStats:
        return PushWorkerStats(
            self._pushes,
            self._failures,
            self._total_queue_time,
            self._max_queue_time,
            self._max_concurrent,
        )

    def set_throttle(self, configured: int) -> int:
        """Allow ``configured`` concurrent pushes from now on (0: the automatic default);
        returns the throttle now in force."""
        self.throttle = push_throttle(configured)
        self._slots.resize(self.throttle)
        return self.throttle

    def running(self) -> int:
        """Pushes running right now."""
        return self._active

    async def run(self) -> None:
        """Dequeue and push until the queue shuts down; cancel pushes in flight if cancelled."""
        started = 0
        try:
            slots, queue = self._slots, self._queue
            while True:
                # the two awaits below only when they must wait: a push per connection
                # would otherwise make three coroutines before it starts
                if not slots.try_acquire():
                    await slots.acquire()
                item = None if queue.is_shut_down else queue.try_dequeue()
                if item is None:
                    item = await self._dequeue_or_release()
                    if item is None:
                        break
                self._start(item)
                started += 1
                if started >= self.throttle:
                    # pushes that finish in the call never wait: let readers and writers run
                    started = 0
                    await asyncio.sleep(0)
            flying: list[asyncio.Future[Any] | Signal] = [*self._tasks, *self._waiting.futures()]
            if flying:
                await asyncio.gather(*flying, return_exceptions=True)
        finally:
            self._held.clear()  # the queue is shut: nothing is pushed after an answer
            leftover: list[asyncio.Future[Any] | Signal] = [*self._tasks, *self._waiting.futures()]
            self._waiting.clear()
            for waited in leftover:
                waited.cancel()
            if leftover:
                await asyncio.gather(*leftover, return_exceptions=True)

    async def _dequeue_or_release(self) -> QueuedPush[ConnT] | None:
        item: QueuedPush[ConnT] | None = None
        try:
            item = await self._queue.dequeue()
        finally:
            if item is None:
                self._slots.release()
        return item

    def _start(self, item: QueuedPush[ConnT]) -> None:
        queue_time = item.queue_time
        self._total_queue_time += queue_time
        if queue_time > self._max_queue_time:
            self._max_queue_time = queue_time
        self._active += 1
        if self._active > self._max_concurrent:
            self._max_concurrent = self._active
        conn = item.conn
        if self._observe is not None:
            try:
                self._observe(queue_time)
            except Exception:  # a metrics bug must not cost the push
                _log.exception("observing the queue time of %r failed", conn)
        try:
            pending = self._push(conn, item.request)
        except Exception:
            _log.exception("push to %r failed", conn)
            self._finish(conn, failed=True)
            return
        if pending is None:
            self._finish(conn, failed=False)
        elif type(pending) is Signal or asyncio.isfuture(pending):
            self._wait(conn, pending)
        else:
            task = asyncio.ensure_future(self._one(conn, pending))
            self._tasks.add(task)
            task.add_done_callback(lambda done: self._task_done(conn, done))

    def _wait(self, conn: ConnT, waiter: Waited) -> None:
        if self._deadline is not None:
            self._waiting.add(waiter)
        waiter.add_done_callback(lambda done: self._waited(conn, done))

    def _waited(self, conn: ConnT, waiter: Waited) -> None:
        self._waiting.discard(waiter)
        self._finish(conn, failed=False)

    async def _one(self, conn: ConnT, pending: Awaitable[None]) -> bool:
        """Await one push; True if it raised (the error is logged, never propagated)."""
        try:
            await pending
        except Exception:
            _log.exception("push to %r failed", conn)
            return True
        return False

    def _task_done(self, conn: ConnT, task: asyncio.Task[bool]) -> None:
        # A done callback rather than a finally clause: it also runs for a task cancelled
        # before it started, so the connection is always marked done and the slot freed.
        self._tasks.discard(task)
        self._finish(conn, failed=not task.cancelled() and task.result())

    def _finish(self, conn: ConnT, *, failed: bool) -> None:
        self._active -= 1
        self._slots.release()
        self._pushes += 1
        if failed:
            self._failures += 1
        elif self._answered is not None and not self._queue.is_shut_down:
            try:
                answer = self._answered(conn)
            except Exception:  # never leave the connection in flight for good
                _log.exception("asking whether %r answered failed", conn)
                answer = None
            if answer is not None and not answer.done():
                self._hold(conn, answer)
                return
        self._queue.mark_done(conn)

    def _hold(self, conn: ConnT, answer: Waited) -> None:
        """Keep ``conn`` in flight until ``answer`` resolves or ``answer_wait`` passes."""
        self._held.add(answer)
        answer.add_done_callback(lambda done: self._answer_came(conn, done))

    def _answer_came(self, conn: ConnT, answer: Waited) -> None:
        self._held.discard(answer)
        self._queue.mark_done(conn)
