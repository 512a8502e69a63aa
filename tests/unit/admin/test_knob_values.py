"""Knob value parsers: what each accepts, and the message for what it does not."""

from __future__ import annotations

import pytest

from pilothouse.admin import knob_values


@pytest.mark.parametrize(
    ("given", "expected"),
    [(0, 0.0), (1.5, 1.5), ("0.25", 0.25), ("100ms", 0.1), ("2s", 2.0), ("1m", 60.0),
     (" 1.5s ", 1.5), ("1h", 3600.0), (86400, 86400.0)],
)  # fmt: skip
def test_seconds(given: object, expected: float) -> None:
    assert knob_values.seconds(given) == expected


@pytest.mark.parametrize(
    "given", [-1, True, None, "fast", "1d", [], {}, float("nan"), float("inf"), "-2s"]
)
def test_seconds_refused(given: object) -> None:
    with pytest.raises(ValueError, match="expected seconds: a number of 0 or more"):
        knob_values.seconds(given)


def test_seconds_above_a_day_are_refused() -> None:
    with pytest.raises(ValueError, match=r"at most 86400 seconds \(a day\); got 86401"):
        knob_values.seconds(86401)


@pytest.mark.parametrize(("given", "expected"), [(0, 0), (25, 25), (3.0, 3), ("7", 7)])
def test_count(given: object, expected: int) -> None:
    assert knob_values.count(given) == expected


@pytest.mark.parametrize("given", [-1, 2.5, True, False, "x", "-3", None, "1e3"])
def test_count_refused(given: object) -> None:
    with pytest.raises(ValueError, match="expected a whole number of 0 or more; got "):
        knob_values.count(given)


def test_refusals_quote_the_value_as_json() -> None:
    with pytest.raises(ValueError, match=r"got true$"):
        knob_values.count(True)
    with pytest.raises(ValueError, match=r'got "fast"$'):
        knob_values.seconds("fast")


@pytest.mark.parametrize(
    ("given", "expected"),
    [(True, True), (False, False), ("true", True), ("OFF", False), ("1", True)],
)
def test_flag(given: object, expected: bool) -> None:
    assert knob_values.flag(given) is expected


@pytest.mark.parametrize("given", [1, 0, "maybe", None])
def test_flag_refused(given: object) -> None:
    with pytest.raises(ValueError, match="expected true or false"):
        knob_values.flag(given)


def test_level_and_rate() -> None:
    assert knob_values.level("DEBUG") == "debug"
    assert knob_values.level("warning") == "warn"
    with pytest.raises(ValueError, match='one of debug, info, warn, error, none; got "loud"'):
        knob_values.level("loud")
    assert knob_values.rate("2.5") == 2.5
    with pytest.raises(ValueError, match="expected a rate"):
        knob_values.rate(-1)
