"""Futures given up on at a deadline, with one timer for all of them.

The push workers wait for two kinds of futures with a limit: a push's write (at most
``send_timeout``) and, once written, its proxy's answer (at most ``answer_wait``). A timer
per future would cost a timer per push; :class:`Deadlines` keeps the futures in the
order they were added (each set wants the same wait, so that is deadline order) and
one timer armed for the oldest: when it fires, every future past its deadline is
resolved with None (its waiter then goes on as if it had come) and the timer is armed
again for the oldest left.
"""

from __future__ import annotations

import asyncio

from pilothouse.push.signal import Waited


class Deadlines:
    """Futures resolved with None once ``seconds`` have passed since each was added."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._due: dict[Waited, float] = {}
        """Futures → when they are given up on (oldest first)."""
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the timer runs on, looked up once (each lookup costs a getpid)."""

    def add(self, future: Waited) -> None:
        """Give ``future`` up at ``seconds`` from now (once: adding it again changes nothing)."""
        if future in self._due:
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        self._due[future] = due = loop.time() + self.seconds
        if self._timer is None:
            self._timer = loop.call_at(due, self._expire)

    def discard(self, future: Waited) -> None:
        """``future`` came (or is no longer waited for)."""
        self._due.pop(future, None)

    def futures(self) -> list[Waited]:
        return list(self._due)

    def clear(self) -> None:
        """Forget every future and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due.clear()

    def _expire(self) -> None:
        """Give up on the futures past their deadline; re-arm for the oldest left."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        for future, due in list(self._due.items()):
            if due > now:
                self._timer = loop.call_at(due, self._expire)
                return
            if not future.done():
                future.set_result(None)
