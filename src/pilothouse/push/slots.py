"""Slots: a counting semaphore for one event loop whose size can change while it is used.

The push workers take a slot before each push (``push_throttle`` of them). The admin API
changes the throttle at run time, which ``asyncio.Semaphore`` cannot do. Here:

- :meth:`Slots.acquire` takes a free slot at once (without yielding to the loop, as
  ``asyncio.Semaphore`` does) or waits, first come first served;
- :meth:`Slots.release` gives one back and hands it to the longest waiter;
- :meth:`Slots.resize` takes effect at once for the waiters: growing wakes as many as
  now fit; shrinking takes no slot away from its holder, new takers wait until fewer
  than the new size are taken.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


class Slots:
    """``size`` slots (at least 1), taken and given back on one event loop."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"slots: the size must be 1 or more, got {size}")
        self._size = size
        self._taken = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def size(self) -> int:
        return self._size

    @property
    def taken(self) -> int:
        """Slots held right now (may exceed :attr:`size` just after a shrink)."""
        return self._taken

    def waiting(self) -> int:
        return sum(1 for waiter in self._waiters if not waiter.done())

    def try_acquire(self) -> bool:
        """Take a free slot if there is one and nobody waits for it (no coroutine: the
        push workers take one per push)."""
        if self._taken < self._size and (not self._waiters or not self.waiting()):
            self._taken += 1
            return True
        return False

    async def acquire(self) -> None:
        """Take a slot, waiting for one if none is free."""
        if self.try_acquire():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot in the same step as the cancellation
            raise
        finally:
            if not waiter.done() or waiter.cancelled():
                with contextlib.suppress(ValueError):  # already taken off by _hand_out
                    self._waiters.remove(waiter)

    def release(self) -> None:
        """Give a slot back; the longest waiter (if any fits) takes it."""
        if self._taken <= 0:
            raise RuntimeError("slots: released more often than acquired")
        self._taken -= 1
        self._hand_out()

    def resize(self, size: int) -> None:
        """Make the size ``size`` (at least 1) from now on."""
        if size < 1:
            raise ValueError(f"slots: the size must be 1 or more, got {size}")
        self._size = size
        self._hand_out()

    def _hand_out(self) -> None:
        while self._waiters and self._taken < self._size:
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            self._taken += 1
            waiter.set_result(None)
