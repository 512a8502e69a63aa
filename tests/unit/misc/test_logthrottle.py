"""The log throttle: a few lines per key per interval, and the rest counted into the
next line, never lost."""

from __future__ import annotations

import pytest

from pilothouse.logthrottle import LogThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_lines_of_an_interval_are_written_and_the_rest_counted() -> None:
    clock = Clock()
    throttle = LogThrottle(10.0, 3, clock=clock)
    answers = [throttle.admit("unauthenticated") for _ in range(50)]
    assert answers[:3] == [0, 0, 0]
    assert answers[3:] == [None] * 47
    clock.now += 10.0
    assert throttle.admit("unauthenticated") == 47  # the held-back ones, reported once
    assert throttle.admit("unauthenticated") == 0


def test_keys_are_throttled_apart() -> None:
    throttle = LogThrottle(10.0, 1, clock=Clock())
    assert throttle.admit("a") == 0
    assert throttle.admit("a") is None
    assert throttle.admit("b") == 0


def test_one_line_per_interval_under_a_steady_flood() -> None:
    clock = Clock()
    throttle = LogThrottle(1.0, 1, clock=clock)
    written = []
    for _ in range(1000):  # 100 s of ten events a second
        clock.now += 0.1
        answer = throttle.admit("EMFILE")
        if answer is not None:
            written.append(answer)
    assert 80 <= len(written) <= 101  # about one a second, never more
    clock.now += 1.0
    last = throttle.admit("EMFILE")
    assert last is not None
    # every event is a line or counted in a later one
    assert sum(written) + len(written) + last + 1 == 1001


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        LogThrottle(1.0, 0)
