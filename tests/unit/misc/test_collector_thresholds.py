"""The collector thresholds ``serve`` sets: ``PILOTHOUSE_GC_THRESHOLD0``..``2`` reach
``gc.set_threshold`` in the serving process; 0 or unset keeps CPython's own value."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

from pilothouse.environment import SettingsError, from_environment
from pilothouse.heap import CPYTHON_THRESHOLDS, collector_thresholds, set_collector_thresholds
from pilothouse.settings import GcSettings, Settings


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    """This process's thresholds are handed back as they were."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_zero_or_unset_means_cpythons_defaults_even_after_other_values() -> None:
    assert CPYTHON_THRESHOLDS == (700, 10, 10)  # CPython 3.11's, as gc documents them
    for settings in (GcSettings(0, 0, 0), Settings().gc):
        gc.set_threshold(12345, 6, 7)
        assert set_collector_thresholds(settings) == CPYTHON_THRESHOLDS
        assert gc.get_threshold() == CPYTHON_THRESHOLDS
        assert gc.isenabled()


def test_each_field_replaces_its_generations_value_and_zero_keeps_cpythons() -> None:
    assert collector_thresholds(GcSettings(threshold0=50000)) == (50000, 10, 10)
    assert collector_thresholds(GcSettings(0, 20, 0)) == (700, 20, 10)
    assert collector_thresholds(GcSettings(0, 0, 100)) == (700, 10, 100)


def test_the_environment_reaches_the_collector_and_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    overrides = from_environment(
        {"PILOTHOUSE_GC_THRESHOLD0": "40000", "PILOTHOUSE_GC_THRESHOLD2": "0"}
    )
    settings = Settings().with_overrides(overrides)
    with caplog.at_level(logging.INFO, logger="pilothouse.heap"):
        assert set_collector_thresholds(settings.gc) == (40000, 10, 10)
    assert gc.get_threshold() == (40000, 10, 10)
    [record] = [r for r in caplog.records if r.getMessage() == "garbage collector"]
    assert record.__dict__["thresholds"] == "40000,10,10"


def test_a_negative_threshold_is_refused_with_its_variable() -> None:
    with pytest.raises(SettingsError, match=r"^PILOTHOUSE_GC_THRESHOLD1='-1': expected an int"):
        from_environment({"PILOTHOUSE_GC_THRESHOLD1": "-1"})
    with pytest.raises(ValueError, match="PILOTHOUSE_GC_THRESHOLD2 must not be negative"):
        GcSettings(threshold2=-5)
