"""The token bucket for new streams, on made-up instants: a burst, then one token per
interval; nothing piles up beyond the burst; no second over the rate; waits for takers
in line; the window bounds."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pilothouse.xds.server.token_bucket import TokenBucket


def test_a_full_bucket_gives_its_burst_at_once_then_one_token_per_interval() -> None:
    bucket = TokenBucket(rate=10, burst=3, now=100.0)
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]
    assert not bucket.take(100.09)
    assert bucket.take(100.1)
    assert not bucket.take(100.15)
    assert bucket.take(100.2)


def test_tokens_accrue_at_the_rate_up_to_the_burst_and_no_further() -> None:
    bucket = TokenBucket(rate=4, burst=5, now=0.0)
    for _ in range(5):
        assert bucket.take(0.0)
    assert bucket.tokens(0.0) == 0
    assert bucket.tokens(0.5) == pytest.approx(2)
    assert bucket.tokens(3600.0) == 5  # an hour of quiet still buys only the burst
    # a token not taken when due is lost once the bucket is full: a late taker finds
    # the burst, not everything that came due meanwhile
    assert sum(bucket.take(3600.0) for _ in range(100)) == 5


def test_a_refused_take_keeps_the_fraction_towards_the_next_token() -> None:
    bucket = TokenBucket(rate=2, burst=1, now=0.0)
    assert bucket.take(0.0)
    assert not bucket.take(0.3)
    assert not bucket.take(0.45)
    assert bucket.take(0.5)


def test_the_wait_counts_the_takers_ahead() -> None:
    bucket = TokenBucket(rate=4, burst=2, now=0.0)
    assert bucket.wait(0.0) == 0.0
    assert bucket.wait(0.0, ahead=1) == 0.0
    assert bucket.wait(0.0, ahead=2) == pytest.approx(0.25)
    assert bucket.take(0.0) and bucket.take(0.0)
    assert bucket.wait(0.0) == pytest.approx(0.25)
    assert bucket.wait(0.0, ahead=3) == pytest.approx(1.0)
    assert bucket.wait(0.1, ahead=3) == pytest.approx(0.9)


def test_a_clock_that_steps_back_buys_nothing() -> None:
    bucket = TokenBucket(rate=1, burst=1, now=10.0)
    assert bucket.take(10.0)
    assert not bucket.take(9.0)
    assert bucket.tokens(10.5) == pytest.approx(0.5)


def test_reconfiguring_keeps_the_tokens_in_hand_up_to_the_new_burst() -> None:
    bucket = TokenBucket(rate=10, burst=10, now=0.0)
    bucket.reconfigure(rate=1, burst=2, now=0.0)
    assert (bucket.rate, bucket.burst) == (1, 2)
    assert [bucket.take(0.0) for _ in range(3)] == [True, True, False]
    assert bucket.take(1.0)
    bucket.reconfigure(rate=100, burst=2, now=1.0)
    assert not bucket.take(1.005)
    assert bucket.take(1.01)


@pytest.mark.parametrize(("rate", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_a_bucket_needs_a_positive_rate_and_a_burst_of_one_or_more(
    rate: float, burst: int
) -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate, burst, 0.0)
    with pytest.raises(ValueError):
        TokenBucket(1, 1, 0.0).reconfigure(rate, burst, 0.0)


@settings(max_examples=300, deadline=None)
@given(
    rate=st.sampled_from([1.0, 7.0, 50.0, 250.0]),
    burst=st.integers(min_value=1, max_value=20),
    tries=st.lists(
        st.tuples(st.floats(min_value=0, max_value=0.3), st.integers(min_value=1, max_value=50)),
        min_size=1,
        max_size=200,
    ),
)
# a take 0.9999999999999999 s after the one before it: the same second to the float, the
# next one to the bucket's rounding (a window counts as a second within 1e-9)
@example(rate=1.0, burst=1, tries=[(0.0100167292026089, 1)] + [(0.25, 1)] * 4)
def test_no_span_sees_more_tokens_taken_than_the_burst_plus_the_rate_times_its_length(
    rate: float, burst: int, tries: list[tuple[float, int]]
) -> None:
    """Takers come in bunches at random instants (a busy loop serves them late); however
    they come, the tokens taken in any closed span of length T are at most
    ``burst + rate * T``, and in any second at most the rate."""
    bucket = TokenBucket(rate, burst, now=0.0)
    now = 0.0
    taken: list[float] = []
    for gap, bunch in tries:
        now += gap
        taken += [now] * sum(bucket.take(now) for _ in range(bunch))
    for length in (0.0, 0.01, 0.5, 1.0, 2.0):
        most, first = 0, 0
        for last, at in enumerate(taken):
            while taken[first] < at - length - 1e-9:
                first += 1
            most = max(most, last - first + 1)
        assert most <= burst + rate * length + 1e-6
    # and in any half-open second [t, t + 1), at most the rate (or the burst if larger);
    # "one second later" within the bucket's rounding (1e-9) starts the next second
    most, first = 0, 0
    for last, at in enumerate(taken):
        while taken[first] <= at - 1.0 + 1e-9:
            first += 1
        most = max(most, last - first + 1)
    assert most <= max(burst, math.ceil(rate))


def test_a_steady_taker_gets_the_rate() -> None:
    bucket = TokenBucket(rate=250, burst=1, now=0.0)
    # asking every millisecond for ten seconds: one token every 4 ms, 2,501 in all
    taken = sum(bucket.take(step / 1000) for step in range(10_001))
    assert taken == 2501


def test_no_second_sees_more_than_the_rate_even_with_a_larger_burst_in_hand() -> None:
    bucket = TokenBucket(rate=10, burst=4, now=0.0)
    assert bucket.per_second == 10
    taken = []
    for step in range(200):  # asking for all it can get, every 10 ms, for two seconds
        while bucket.take(step / 100):
            taken.append(step / 100)
    # the burst at once, then one every 0.1 s: 4 + 6 by 0.6 s, and the window of the
    # first second is full until the first four leave it at 1.0 s
    for start in taken:
        assert sum(start <= at < start + 1.0 for at in taken) <= 10
    assert taken[:4] == [0.0] * 4
    assert taken[4:10] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert 1.0 in taken and not any(0.6 < at < 1.0 for at in taken)


def test_a_late_taker_gets_what_came_due_up_to_the_burst_within_the_rate() -> None:
    bucket = TokenBucket(rate=100, burst=10, now=0.0)
    assert sum(bucket.take(0.0) for _ in range(10)) == 10
    assert sum(bucket.take(0.5) for _ in range(100)) == 10  # 50 came due, 10 kept
    assert sum(bucket.take(0.6) for _ in range(100)) == 10
    # 80 taken in the second since 0.0; the window has room for 20 more
    assert sum(bucket.take(0.95) for _ in range(100)) == 10
    assert bucket.wait(0.95) == pytest.approx(0.01)


def test_the_wait_counts_the_window_as_well() -> None:
    bucket = TokenBucket(rate=2, burst=2, now=0.0)
    assert bucket.take(0.0) and bucket.take(0.0)
    assert bucket.wait(0.0) == pytest.approx(1.0)  # a token by 0.5 s, room only at 1.0 s
    assert bucket.wait(0.0, ahead=1) == pytest.approx(1.0)
    assert not bucket.take(0.9)  # two tokens in hand by now, but the second is full
    assert bucket.wait(0.9) == pytest.approx(0.1)
    assert bucket.take(1.0) and bucket.take(1.0)


def test_a_rate_below_one_a_second_still_lets_one_in() -> None:
    bucket = TokenBucket(rate=0.5, burst=1, now=0.0)
    assert bucket.per_second == 1
    assert bucket.take(0.0) and not bucket.take(1.5) and bucket.take(2.0)


def test_a_batch_is_the_whole_tokens_of_a_span_at_least_one_at_most_the_burst() -> None:
    assert TokenBucket(250, 25, 0.0).batch(0.04) == 10
    assert TokenBucket(250, 4, 0.0).batch(0.04) == 4
    assert TokenBucket(10, 25, 0.0).batch(0.04) == 1
    assert TokenBucket(50, 25, 0.0).batch(0.04) == 2
