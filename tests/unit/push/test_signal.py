"""Signal: a one-shot future whose callbacks run where it is resolved, not a loop step later."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pilothouse.push.deadlines import Deadlines
from pilothouse.push.signal import Signal


def test_callbacks_run_in_order_when_resolved_and_at_once_after() -> None:
    signal = Signal()
    seen: list[str] = []
    signal.add_done_callback(lambda s: seen.append("first"))
    signal.add_done_callback(lambda s: seen.append("second"))
    assert not signal.done() and seen == []
    signal.set_result(None)
    assert signal.done() and seen == ["first", "second"], "run in the resolving call"
    signal.set_result(None)
    assert seen == ["first", "second"], "resolved once: a second resolve runs nothing"
    signal.add_done_callback(lambda s: seen.append("late"))
    assert seen == ["first", "second", "late"], "added after: runs at once"


def test_a_raising_callback_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    signal = Signal()
    seen: list[int] = []

    def broken(_: Signal) -> None:
        raise RuntimeError("bug in a waiter")

    signal.add_done_callback(broken)
    signal.add_done_callback(lambda s: seen.append(1))
    with caplog.at_level(logging.ERROR, logger="pilothouse.push.signal"):
        signal.set_result(None)
    assert seen == [1]
    assert "bug in a waiter" in caplog.text


async def test_cancel_resolves_and_an_awaiter_goes_on() -> None:
    signal = Signal()
    waiting = asyncio.ensure_future(_await(signal))
    await asyncio.sleep(0)
    assert not waiting.done()
    assert signal.cancel() is True and signal.cancel() is False
    await asyncio.wait_for(waiting, 1.0)
    await _await(signal)  # already resolved: returns at once


async def test_deadlines_give_a_signal_up() -> None:
    deadlines = Deadlines(0.01)
    signal = Signal()
    deadlines.add(signal)
    await asyncio.wait_for(_await(signal), 1.0)
    assert signal.done()
    assert deadlines.futures() == [signal], "the waiter discards it, not the deadline"


async def _await(signal: Signal) -> None:
    await signal
