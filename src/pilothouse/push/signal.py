"""A one-shot signal: what a future's done-callbacks give, without the event loop's hop.

Every push waits for two things of its connection: its responses written (which frees
the worker's slot) and its proxy's answer (which lets the next push go). An
``asyncio.Future`` for each costs a future and, when it resolves, a callback handle
scheduled on the loop and run one step later (about a microsecond each, twice per
push). A :class:`Signal` is resolved where the event happens (the writer loop, the
request that answers) and runs its callbacks there and then, in the order they were
added; one that raises is logged and the others still run.

It answers what the push workers and their deadlines ask of a future (``done``,
``add_done_callback``, ``set_result``, ``cancel``), and can be awaited (a future is
made then, only for whoever awaits: a shutdown, a test).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import Any

_log = logging.getLogger(__name__)


class Signal:
    """Resolved once (``set_result`` or ``cancel``); callbacks run when it is."""

    __slots__ = ("_callbacks", "_done")

    def __init__(self) -> None:
        self._done = False
        self._callbacks: list[Callable[[Signal], object]] = []

    def __repr__(self) -> str:
        return f"Signal({'done' if self._done else 'pending'})"

    def done(self) -> bool:
        return self._done

    def add_done_callback(self, callback: Callable[[Signal], object]) -> None:
        """Run ``callback(self)`` once resolved (at once, if it already is)."""
        if self._done:
            _run(callback, self)
        else:
            self._callbacks.append(callback)

    def set_result(self, _result: None = None) -> None:
        """Resolve it (again: nothing happens) and run its callbacks."""
        if self._done:
            return
        self._done = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _run(callback, self)

    def cancel(self) -> bool:
        """Resolve it (whoever waits goes on as if it had come)."""
        pending = not self._done
        self.set_result(None)
        return pending

    def __await__(self) -> Generator[Any, None, None]:
        if self._done:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def resolve(_: Signal) -> None:
            if not future.done():
                future.set_result(None)

        self.add_done_callback(resolve)
        yield from future.__await__()


Waited = asyncio.Future[None] | Signal
"""What a push or an answer is waited for with: a future, or a signal (no loop hop)."""


def _run(callback: Callable[[Signal], object], signal: Signal) -> None:
    try:
        callback(signal)
    except Exception:  # as the event loop does: one callback's bug stays its own
        _log.exception("a signal's callback %r raised", callback)
