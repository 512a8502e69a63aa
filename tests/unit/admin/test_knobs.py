"""The runtime knob registry: lookup with the nearest name, parse, write, read back, log."""

from __future__ import annotations

import logging

import pytest

from pilothouse.admin import knob_values
from pilothouse.admin.knobs import BadKnobValue, Knob, KnobRegistry, UnknownKnob


class Box:
    """A value behind a knob, with a writer that refuses 13."""

    def __init__(self, value: float) -> None:
        self.value = value
        self.writes = 0

    def write(self, value: float) -> None:
        self.writes += 1
        if value == 13:
            raise ValueError("13 is unlucky")
        self.value = value


def registry(box: Box) -> KnobRegistry:
    knobs = KnobRegistry()
    knobs.register(
        Knob(
            "debounce.after",
            "quiet time",
            read=lambda: box.value,
            parse=knob_values.seconds,
            write=box.write,
            kind="seconds",
            setting="PILOTHOUSE_DEBOUNCE_AFTER",
        )
    )
    knobs.register(
        Knob("push.throttle", "pushes", lambda: 25, knob_values.count, lambda v: None, "int")
    )
    return knobs


def test_a_change_is_parsed_written_read_back_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    box = Box(0.1)
    knobs = registry(box)
    with caplog.at_level(logging.INFO, logger="pilothouse.admin"):
        change = knobs.change("debounce.after", "250ms", who="127.0.0.1", via="admin-api")
    assert change.as_json() == {"name": "debounce.after", "old": 0.1, "new": 0.25}
    assert box.value == 0.25
    (record,) = [r for r in caplog.records if r.getMessage() == "knob changed"]
    fields = {k: getattr(record, k) for k in ("knob", "old", "new", "by", "via")}
    assert fields == {
        "knob": "debounce.after", "old": 0.1, "new": 0.25, "by": "127.0.0.1", "via": "admin-api"
    }  # fmt: skip


def test_a_value_the_parser_refuses_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    box = Box(0.1)
    knobs = registry(box)
    with (
        caplog.at_level(logging.INFO, logger="pilothouse.admin"),
        pytest.raises(BadKnobValue) as caught,
    ):
        knobs.change("debounce.after", -1, who="127.0.0.1", via="admin-api")
    assert caught.value.message == (
        "debounce.after: expected seconds: a number of 0 or more (0.5) or a duration "
        "(100ms, 2s, 1m); got -1"
    )
    assert box.writes == 0 and box.value == 0.1
    assert not [r for r in caplog.records if r.getMessage() == "knob changed"]


def test_a_value_the_writer_refuses_is_a_bad_value() -> None:
    box = Box(0.1)
    with pytest.raises(BadKnobValue, match=r"debounce\.after: 13 is unlucky"):
        registry(box).change("debounce.after", 13, who="x", via="y")
    assert box.value == 0.1


def test_an_unknown_name_names_the_nearest_knob() -> None:
    knobs = registry(Box(0.1))
    with pytest.raises(UnknownKnob) as caught:
        knobs.get("debounce.aftr")
    assert caught.value.nearest == "debounce.after"
    assert caught.value.message == "unknown knob 'debounce.aftr': did you mean 'debounce.after'?"
    with pytest.raises(UnknownKnob) as far:
        knobs.change("zzz", 1, who="x", via="y")
    assert far.value.nearest is None
    assert far.value.message == "unknown knob 'zzz'; the knobs are: debounce.after, push.throttle"


def test_names_are_unique_and_described_in_order() -> None:
    knobs = registry(Box(0.1))
    with pytest.raises(ValueError, match="registered already"):
        knobs.register(Knob("push.throttle", "", lambda: 1, knob_values.count, print, "int"))
    assert knobs.names() == ["debounce.after", "push.throttle"]
    assert knobs.describe()[0] == {
        "name": "debounce.after",
        "value": 0.1,
        "type": "seconds",
        "description": "quiet time",
        "setting": "PILOTHOUSE_DEBOUNCE_AFTER",
    }
