"""The one redial backoff: exponential growth, a cap, and jitter within the stated range."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.backoff import Backoff, Jitter


def test_ceiling_doubles_then_caps() -> None:
    backoff = Backoff(initial=0.5, maximum=30.0)
    assert [backoff.ceiling(n) for n in range(1, 9)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert backoff.ceiling(1000) == 30.0


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=200), st.integers(min_value=0, max_value=2**32))
def test_delay_lies_in_the_upper_half_of_the_ceiling(failures: int, seed: int) -> None:
    backoff = Backoff()
    delay = backoff.delay(failures, random.Random(seed))
    top = backoff.ceiling(failures)
    assert top / 2 <= delay <= top <= backoff.maximum


def test_delays_are_jittered() -> None:
    rng = random.Random(7)
    assert len({round(Backoff().delay(5, rng), 6) for _ in range(20)}) > 10


@pytest.mark.parametrize(("initial", "maximum"), [(0, 1), (-1, 1), (2, 1)])
def test_bad_bounds_are_refused(initial: float, maximum: float) -> None:
    with pytest.raises(ValueError):
        Backoff(initial, maximum)


def test_failures_count_from_one() -> None:
    with pytest.raises(ValueError):
        Backoff().ceiling(0)


def test_envoy_shape_grows_by_two_to_the_n_minus_one_and_caps() -> None:
    backoff = Backoff.envoy()
    assert (backoff.initial, backoff.maximum, backoff.jitter) == (0.5, 30.0, Jitter.FULL)
    assert [backoff.ceiling(n) for n in range(1, 8)] == [0.5, 1.5, 3.5, 7.5, 15.5, 30, 30]
    assert backoff.ceiling(10_000) == 30.0


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=200), st.integers(min_value=0, max_value=2**32))
def test_envoy_delay_lies_anywhere_below_the_ceiling(failures: int, seed: int) -> None:
    backoff = Backoff.envoy(initial=0.05, maximum=2.0)
    delay = backoff.delay(failures, random.Random(seed))
    assert 0 <= delay <= backoff.ceiling(failures) <= backoff.maximum


def test_envoy_delays_reach_below_half_the_ceiling() -> None:
    rng = random.Random(11)
    backoff = Backoff.envoy()
    delays = [backoff.delay(4, rng) for _ in range(200)]
    assert min(delays) < backoff.ceiling(4) / 2 < max(delays)
