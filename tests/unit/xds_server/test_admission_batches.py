"""Admission control lets waiting streams in together, a few tokens' worth at a time
(``ADMIT_EVERY``), on the real clock: a storm let in one stream per loop turn costs the
event loop a turn, a timer and gRPC's wake-ups per stream.

The clock stands still while the streams ask (a loaded machine took longer than one
token's 4 ms to start them, and a stream that found a token refilled meanwhile did not
wait), then runs as the real one."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter

import pytest

from pilothouse.settings import AdmissionSettings
from pilothouse.xds.server.admission import ADMIT_EVERY, Admission

RATE = 250.0
BURST = 25
WAITING = 60


async def test_waiting_streams_are_let_in_in_batches_of_the_tokens_due_meanwhile(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="pilothouse.xds.admission")
    still = [time.monotonic()]

    def clock() -> float:
        return still[0] if still else time.monotonic()

    admission = Admission(AdmissionSettings(rate=RATE, burst=BURST, wait=5.0), clock=clock)
    release = asyncio.Event()
    order: list[int] = []

    async def one(index: int) -> None:
        async with admission.stream(peer=f"p{index}"):
            order.append(index)
            await release.wait()

    tasks = [asyncio.create_task(one(n)) for n in range(BURST + WAITING)]
    await asyncio.sleep(0)  # every stream has asked, the clock still
    still.clear()
    try:
        async with asyncio.timeout(5.0):
            while len(order) < BURST + WAITING:
                await asyncio.sleep(0.005)
    finally:
        release.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert order == list(range(BURST + WAITING))  # first come, first served
    moments = [
        record.at  # type: ignore[attr-defined]
        for record in caplog.records
        if record.getMessage() == "xds stream admitted" and record.waited > 0  # type: ignore[attr-defined]
    ]
    assert len(moments) == WAITING
    batch = int(RATE * ADMIT_EVERY)
    sizes = list(Counter(moments).values())
    # the first to wait is let in with its own token (it waited alone), then batches of
    # at least ``batch`` (more if the loop came late), the last with what is left
    assert max(sizes) >= batch
    assert len(sizes) <= 1 + -(-(WAITING - 1) // batch)
    assert admission.snapshot().rejected["rate_limited"] == 0
