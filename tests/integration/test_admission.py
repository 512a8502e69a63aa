"""Admission control without a server: the circuit breaker, the rate limit's waits and
refusals, run-time changes, and the counters' snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import grpc
import pytest

from pilothouse.settings import AdmissionSettings
from pilothouse.xds.server.admission import ADMIT_EVERY, Admission, Refusal, Refused

NO_RATE = AdmissionSettings(rate=0)


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def held(admission: Admission, count: int) -> AsyncIterator[None]:
    """``count`` streams admitted and kept open for the block."""
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(count):
            await stack.enter_async_context(admission.stream())
        yield


async def test_beyond_max_connections_a_stream_is_refused_at_once_with_unavailable() -> None:
    admission = Admission(AdmissionSettings(rate=0, max_connections=2))
    async with held(admission, 2):
        assert admission.connections == 2
        started = time.monotonic()
        with pytest.raises(Refused) as refused:
            async with admission.stream():
                pytest.fail("a third stream was let in")
        assert time.monotonic() - started < 0.05
        assert refused.value.code is grpc.StatusCode.UNAVAILABLE
        assert refused.value.reason is Refusal.MAX_CONNECTIONS
        assert "limit of 2 xDS connections" in refused.value.message
        assert "circuit breaker" in refused.value.message
    assert admission.connections == 0
    async with admission.stream():  # room again once the others ended
        pass
    counts = admission.snapshot()
    assert (counts.admitted, counts.rejected["max_connections"]) == (3, 1)


async def test_a_stream_whose_turn_is_beyond_the_wait_is_refused_with_resource_exhausted() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=4, burst=1, wait=0.2), clock=clock)
    async with admission.stream():  # the burst
        pass
    started = time.monotonic()
    with pytest.raises(Refused) as refused:  # the next turn is 0.25 s away
        async with admission.stream():
            pytest.fail("let in beyond the wait")
    assert time.monotonic() - started < 0.05  # told at once, not after the wait
    assert refused.value.code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.value.reason is Refusal.RATE_LIMITED
    assert "rate limit exceeded" in refused.value.message
    assert "4 new xDS streams a second (burst 1)" in refused.value.message
    assert admission.snapshot().rejected["rate_limited"] == 1
    assert admission.connections == 0  # the refused stream's place was given back


async def test_a_stream_waits_for_its_turn_then_comes_in() -> None:
    admission = Admission(AdmissionSettings(rate=10, burst=1, wait=1.0))
    opened: list[float] = []

    async def one() -> None:
        async with admission.stream():
            opened.append(time.monotonic())

    started = time.monotonic()
    await asyncio.gather(*(one() for _ in range(4)))
    offsets = [at - started for at in sorted(opened)]
    # turns at 0, 0.1, 0.2 and 0.3 s; sleeps end late, never early
    for expected, offset in zip([0.0, 0.1, 0.2, 0.3], offsets, strict=True):
        assert expected - 0.005 <= offset <= expected + 0.1, offsets
    assert admission.snapshot().admitted == 4


async def test_a_stalled_loop_lets_in_no_catch_up_burst() -> None:
    admission = Admission(AdmissionSettings(rate=100, burst=2, wait=5.0))
    opened: list[float] = []

    async def one() -> None:
        async with admission.stream():
            opened.append(time.monotonic())

    streams = [asyncio.create_task(one()) for _ in range(40)]
    await asyncio.sleep(0.05)
    time.sleep(0.3)  # the loop is blocked: 30 tokens come due, only the burst keeps
    stalled = time.monotonic()
    await asyncio.gather(*streams)
    after = sorted(at - stalled for at in opened if at >= stalled)
    # let in at once after the stall: the burst, not the 30 that came due meanwhile
    # (plus the batch whose tokens came just before the stall and which resumed after
    # it: waiting streams are let in ADMIT_EVERY's worth of tokens at a time, at most
    # the burst)
    batch = min(2, int(100 * ADMIT_EVERY))
    assert sum(offset < 0.005 for offset in after) <= 2 + batch, after[:10]
    # and no span of 100 ms holds more than that plus rate x 0.1 s
    for index, start in enumerate(after):
        assert sum(start <= at < start + 0.1 for at in after[index:]) <= 2 + batch + 10


async def test_waiting_streams_count_as_open_and_a_cancelled_one_leaves() -> None:
    admission = Admission(AdmissionSettings(rate=1, burst=1, wait=5, max_connections=2))
    async with admission.stream():
        waiter = asyncio.create_task(_enter(admission))
        await asyncio.sleep(0.05)
        counts = admission.snapshot()
        assert (counts.connections, counts.waiting) == (2, 1)
        with pytest.raises(Refused):  # the waiting one holds the second place
            async with admission.stream():
                pass
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
        counts = admission.snapshot()
        assert (counts.connections, counts.waiting) == (1, 0)
    assert admission.snapshot().admitted == 1


async def _enter(admission: Admission) -> None:
    async with admission.stream():
        await asyncio.sleep(10)


async def test_a_rate_of_zero_lets_every_stream_in_at_once() -> None:
    admission = Admission(NO_RATE)
    async with held(admission, 500):
        assert admission.snapshot().admitted == 500


async def test_configure_takes_effect_for_the_next_stream() -> None:
    clock = Clock()
    admission = Admission(NO_RATE, clock=clock)
    async with held(admission, 3):
        pass
    settings = admission.configure(rate=2, burst=1, max_connections=1)
    assert (admission.rate, admission.burst, admission.max_connections) == (2, 1, 1)
    assert admission.wait == NO_RATE.wait and settings == admission.settings  # kept
    async with admission.stream():
        with pytest.raises(Refused) as over:
            async with admission.stream():
                pass
        assert over.value.reason is Refusal.MAX_CONNECTIONS
    admission.configure(max_connections=0, wait=0)
    with pytest.raises(Refused) as limited:  # the burst is spent and no waiting allowed
        async with admission.stream():
            pass
    assert limited.value.reason is Refusal.RATE_LIMITED
    clock.now += 0.5  # one turn later
    async with admission.stream():
        pass
    admission.configure(rate=0)
    async with held(admission, 10):
        pass
    assert admission.snapshot().admitted == 3 + 1 + 1 + 10


def test_configure_refuses_values_out_of_range_and_changes_nothing() -> None:
    admission = Admission()
    before = admission.settings
    for bad in ({"burst": 0}, {"rate": -1.0}, {"max_connections": -1}, {"wait": -0.5}):
        with pytest.raises(ValueError):
            admission.configure(**bad)  # type: ignore[arg-type]
    assert admission.settings == before


def test_the_default_is_250_a_second_in_bursts_of_25_with_ten_seconds_to_wait() -> None:
    admission = Admission()
    assert (admission.rate, admission.burst, admission.wait) == (250.0, 25, 10.0)
    assert admission.max_connections == 0


async def test_the_snapshot_is_plain_read_only_and_names_every_reason() -> None:
    admission = Admission(NO_RATE)
    admission.refuse(Refusal.NOT_READY)
    admission.refuse(Refusal.BAD_NODE)
    admission.refuse(Refusal.BAD_NODE)
    async with admission.stream():
        counts = admission.snapshot()
    assert counts.admitted == 1 and counts.connections == 1
    assert dict(counts.rejected) == {
        "rate_limited": 0,
        "max_connections": 0,
        "not_ready": 1,
        "bad_node": 2,
        "bad_request": 0,
        "unauthenticated": 0,
        "permission_denied": 0,
    }
    assert all(type(value) is int for value in counts.rejected.values())
    with pytest.raises(TypeError):
        counts.rejected["bad_node"] = 0  # type: ignore[index]
    admission.refuse(Refusal.NOT_READY)
    assert counts.rejected["not_ready"] == 1  # a copy: later refusals do not show in it


async def test_logged_admissions_keep_to_the_rate_in_every_second(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each admission is logged with the moment its token was taken; read back, those
    moments never put more than the rate in a second (what the storm test and the
    benchmark measure)."""
    admission = Admission(AdmissionSettings(rate=50, burst=10, wait=5.0))

    async def one() -> None:
        async with admission.stream():
            pass

    with caplog.at_level(logging.DEBUG, logger="pilothouse.xds.admission"):
        await asyncio.gather(*(one() for _ in range(120)))
    moments = sorted(
        float(record.__dict__["at"])
        for record in caplog.records
        if record.getMessage() == "xds stream admitted"
    )
    assert len(moments) == 120
    for first, start in enumerate(moments):  # every half-open second [start, start + 1)
        assert sum(1 for at in moments[first:] if at < start + 1.0) <= 50
    assert moments[-1] - moments[0] >= (120 - 10) / 50 - 0.01
