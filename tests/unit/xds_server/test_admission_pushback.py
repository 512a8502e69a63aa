"""Admission control's line and its pushback hint, on a made-up clock: streams within
the wait are held in arrival order until their token comes; one beyond it is refused
with the time to come back, and the refusals of a storm are promised successive tokens
so that they come back spread over them, not at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import pytest

from pilothouse.settings import AdmissionSettings
from pilothouse.xds.server.admission import PUSHBACK_TRAILER, Admission, Refusal, Refused


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def waiting(admission: Admission, names: list[str], order: list[str]) -> AsyncIterator[None]:
    """A stream per name, each entering admission in turn and appending its name to
    ``order`` once let in, held open until the block ends."""
    release = asyncio.Event()

    async def one(name: str) -> None:
        async with admission.stream(peer=name):
            order.append(name)
            await release.wait()

    tasks = []
    for name in names:
        tasks.append(asyncio.create_task(one(name)))
        await asyncio.sleep(0)  # it has entered before the next one arrives
    try:
        yield
    finally:
        release.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def refusal(admission: Admission) -> Refused:
    with pytest.raises(Refused) as refused:
        async with admission.stream():
            pytest.fail("let in")
    return refused.value


async def until(condition: object, timeout: float = 5.0) -> None:
    assert callable(condition)
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def test_streams_within_the_wait_are_held_and_let_in_first_come_first_served() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=10, burst=1, wait=0.5), clock=clock)
    order: list[str] = []
    names = [f"s{n}" for n in range(6)]  # the burst's one, then turns 0.1 to 0.5 s away
    async with waiting(admission, names, order):
        assert order == ["s0"]
        assert admission.snapshot().waiting == 5
        for let_in in range(2, 7):
            clock.now += 0.1  # one more token is due
            await until(lambda: len(order) == let_in)  # noqa: B023
            assert order == names[:let_in]
        assert admission.snapshot().rejected["rate_limited"] == 0


async def test_a_stream_beyond_the_wait_is_told_to_come_back_at_half_a_wait_from_its_turn() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=10, burst=1, wait=0.5), clock=clock)
    async with waiting(admission, [f"s{n}" for n in range(6)], []):
        refused = await refusal(admission)  # its turn: 0.6 s away, the line holds 0.5 s
    assert refused.reason is Refusal.RATE_LIMITED
    assert refused.code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.retry_after == pytest.approx(0.6 - 0.25)
    assert refused.trailers() == ((PUSHBACK_TRAILER, "350"),)
    assert "come back in 0.350 s (grpc-retry-pushback-ms)" in refused.message


async def test_the_refusals_of_a_storm_are_promised_successive_tokens() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=10, burst=1, wait=0.5), clock=clock)
    async with waiting(admission, [f"s{n}" for n in range(6)], []):
        hints = [(await refusal(admission)).retry_after for _ in range(4)]
    assert hints == pytest.approx([0.35, 0.45, 0.55, 0.65])
    assert admission.snapshot().rejected["rate_limited"] == 4


async def test_promises_are_kept_in_time_not_in_count() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=10, burst=1, wait=0), clock=clock)
    async with admission.stream():
        pass
    hints = [(await refusal(admission)).retry_after for _ in range(4)]
    assert hints == pytest.approx([0.1, 0.2, 0.3, 0.4])
    clock.now += 0.05  # half a token in hand: the next is still refused
    assert (await refusal(admission)).retry_after == pytest.approx(0.5 - 0.05)


async def test_with_no_wait_a_refused_stream_comes_back_when_its_token_is_due() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=4, burst=1, wait=0), clock=clock)
    async with admission.stream():
        pass
    assert (await refusal(admission)).trailers() == ((PUSHBACK_TRAILER, "250"),)
    assert (await refusal(admission)).trailers() == ((PUSHBACK_TRAILER, "500"),)
    clock.now += 0.25  # the first promised token is due: a stream coming now gets it
    async with admission.stream():
        pass


async def test_a_promise_long_due_does_not_push_later_refusals_back() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=10, burst=1, wait=0), clock=clock)
    async with admission.stream():
        pass
    assert (await refusal(admission)).retry_after == pytest.approx(0.1)
    clock.now += 5.0  # the promise fell due long ago, unclaimed; the bucket is full
    async with admission.stream():
        pass
    assert (await refusal(admission)).retry_after == pytest.approx(0.1)  # not 0.2


async def test_changing_the_knobs_forgets_the_promises_made_at_the_old_rate() -> None:
    clock = Clock()
    admission = Admission(AdmissionSettings(rate=10, burst=1, wait=0), clock=clock)
    async with admission.stream():
        pass
    for _ in range(20):  # promised the tokens of the next two seconds
        await refusal(admission)
    admission.configure(rate=1)
    assert (await refusal(admission)).retry_after == pytest.approx(1.0)  # its own turn


def test_a_refusal_without_a_known_turn_has_no_pushback() -> None:
    refused = Refused(Refusal.MAX_CONNECTIONS, grpc.StatusCode.UNAVAILABLE, "full")
    assert refused.retry_after is None and refused.trailers() == ()
