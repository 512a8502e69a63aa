"""The token bucket for new streams, on made-up instants: turns first come first served at
the rate, bursts up to the burst, refusals that take nothing, and the window bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.xds.server.token_bucket import TokenBucket


def test_a_full_bucket_serves_its_burst_at_once_then_one_turn_per_interval() -> None:
    bucket = TokenBucket(rate=10, burst=3, now=100.0)
    waits = [bucket.reserve(100.0, longest_wait=10) for _ in range(6)]
    assert waits == pytest.approx([0, 0, 0, 0.1, 0.2, 0.3])


def test_a_turn_too_far_away_is_refused_and_takes_nothing() -> None:
    bucket = TokenBucket(rate=2, burst=1, now=0.0)
    assert bucket.reserve(0.0, longest_wait=1.0) == 0.0
    assert bucket.reserve(0.0, longest_wait=1.0) == pytest.approx(0.5)
    assert bucket.reserve(0.0, longest_wait=1.0) == pytest.approx(1.0)  # exactly the wait: in
    assert bucket.reserve(0.0, longest_wait=1.0) is None
    assert bucket.reserve(0.0, longest_wait=1.0) is None  # still none: nothing was taken
    assert bucket.tokens(0.0) == pytest.approx(-2)
    assert bucket.reserve(0.2, longest_wait=1.0) is None  # the next turn, at 1.5 s, is 1.3 s away
    assert bucket.reserve(0.5, longest_wait=1.0) == pytest.approx(1.0)


def test_a_zero_wait_takes_only_a_token_in_hand() -> None:
    bucket = TokenBucket(rate=100, burst=2, now=0.0)
    assert [bucket.reserve(0.0, 0.0) for _ in range(3)] == [0.0, 0.0, None]
    assert bucket.reserve(0.01, 0.0) == 0.0


def test_tokens_accrue_at_the_rate_up_to_the_burst() -> None:
    bucket = TokenBucket(rate=4, burst=5, now=0.0)
    for _ in range(5):
        bucket.reserve(0.0, 0.0)
    assert bucket.tokens(0.0) == 0
    assert bucket.tokens(0.5) == pytest.approx(2)
    assert bucket.tokens(60.0) == 5  # an hour of quiet still buys only the burst


def test_a_clock_that_steps_back_changes_nothing() -> None:
    bucket = TokenBucket(rate=1, burst=1, now=10.0)
    assert bucket.reserve(10.0, 5) == 0.0
    assert bucket.reserve(9.0, 5) == pytest.approx(1.0)  # measured from the later instant


def test_a_higher_rate_shortens_the_next_turns_and_keeps_those_handed_out() -> None:
    bucket = TokenBucket(rate=1, burst=1, now=0.0)
    assert [bucket.reserve(0.0, 10) for _ in range(3)] == [0, 1, 2]  # turns at 0, 1 and 2 s
    bucket.reconfigure(rate=10, burst=1, now=0.0)
    # the last turn handed out is at 2 s; the next comes 0.1 s after it
    assert bucket.reserve(0.0, 10) == pytest.approx(2.1)
    assert bucket.reserve(0.0, 10) == pytest.approx(2.2)


def test_a_lower_rate_spaces_the_next_turns_and_a_smaller_burst_drops_tokens() -> None:
    bucket = TokenBucket(rate=10, burst=10, now=0.0)
    bucket.reconfigure(rate=1, burst=2, now=0.0)
    assert bucket.tokens(0.0) == 2
    assert [bucket.reserve(0.0, 10) for _ in range(4)] == pytest.approx([0, 0, 1, 2])
    assert (bucket.rate, bucket.burst) == (1, 2)


@pytest.mark.parametrize(("rate", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_a_bucket_needs_a_positive_rate_and_a_burst_of_one_or_more(
    rate: float, burst: int
) -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate, burst, 0.0)
    with pytest.raises(ValueError):
        TokenBucket(1, 1, 0.0).reconfigure(rate, burst, 0.0)


@settings(max_examples=200, deadline=None)
@given(
    rate=st.sampled_from([1.0, 7.0, 50.0, 250.0]),
    burst=st.integers(min_value=1, max_value=20),
    wait=st.sampled_from([0.0, 0.1, 1.0, 3.0]),
    gaps=st.lists(st.floats(min_value=0, max_value=0.5), min_size=1, max_size=400),
)
def test_no_window_holds_more_turns_than_the_burst_plus_the_rate_times_its_length(
    rate: float, burst: int, wait: float, gaps: list[float]
) -> None:
    bucket = TokenBucket(rate, burst, now=0.0)
    now = 0.0
    turns: list[float] = []
    for gap in gaps:
        now += gap
        delay = bucket.reserve(now, wait)
        if delay is not None:
            assert 0 <= delay <= wait
            turns.append(now + delay)
    turns.sort()
    for length in (0.0, 0.5, 1.0, 2.0):
        # two pointers: the most turns falling in any closed window of this length
        most, first = 0, 0
        for last, at in enumerate(turns):
            while turns[first] < at - length - 1e-9:
                first += 1
            most = max(most, last - first + 1)
        assert most <= burst + rate * length + 1e-6


@settings(max_examples=100, deadline=None)
@given(
    rate=st.sampled_from([2.0, 25.0, 300.0]),
    arrivals=st.integers(min_value=1, max_value=2000),
)
def test_a_storm_at_one_instant_gets_exactly_the_turns_the_wait_allows(
    rate: float, arrivals: int
) -> None:
    bucket = TokenBucket(rate, burst=1, now=0.0)
    admitted = sum(bucket.reserve(5.0, 1.0) is not None for _ in range(arrivals))
    assert admitted == min(arrivals, 1 + int(rate * 1.0 + 1e-9))
