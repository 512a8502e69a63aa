"""The server's knobs: each one reads and changes the part it names."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pilothouse.admin.knobs import BadKnobValue, KnobRegistry
from pilothouse.admin.server_knobs import (
    register_admission_knobs,
    register_log_knobs,
    register_push_knobs,
)
from pilothouse.push.workers import default_push_throttle
from pilothouse.settings import DebounceSettings, XdsSettings
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView


def change(knobs: KnobRegistry, name: str, value: object) -> object:
    return knobs.change(name, value, who="127.0.0.1", via="test").new


def test_debounce_and_throttle_knobs_reach_the_discovery_server() -> None:
    settings = XdsSettings(debounce=DebounceSettings(debounce_after=0.1), push_throttle=7)
    discovery = DiscoveryServer(MemoryStore("test"), settings=settings)
    knobs = KnobRegistry()
    register_push_knobs(knobs, DiscoveryDebugView(discovery))
    described = {k["name"]: k for k in knobs.describe()}
    assert {n: k["value"] for n, k in described.items()} == {
        "debounce.after": 0.1, "debounce.max": 10.0, "debounce.eds": True, "push.throttle": 7,
    }  # fmt: skip
    assert described["debounce.after"]["setting"] == "PILOTHOUSE_DEBOUNCE_AFTER"
    assert described["push.throttle"]["setting"] == "PILOTHOUSE_PUSH_THROTTLE"
    assert change(knobs, "debounce.after", "2s") == 2.0
    assert change(knobs, "debounce.max", 4) == 4.0
    assert change(knobs, "debounce.eds", False) is False
    expected = DebounceSettings(debounce_after=2.0, debounce_max=4.0, eds_debounce=False)
    assert discovery.settings.debounce == expected
    assert discovery.pushes.debouncer.settings == expected  # the running debouncer's own
    assert change(knobs, "push.throttle", 3) == 3
    assert discovery.push_throttle == 3 and discovery.settings.push_throttle == 3
    assert change(knobs, "push.throttle", 0) == default_push_throttle()
    with pytest.raises(BadKnobValue, match=r"push\.throttle: expected a whole number"):
        change(knobs, "push.throttle", -2)
    discovery.close()


@pytest.fixture
def xds_level() -> Iterator[None]:
    logger = logging.getLogger("pilothouse.xds")
    saved = logger.level
    yield
    logger.setLevel(saved)


def test_each_logging_scope_has_a_level_knob(xds_level: None) -> None:
    logging.getLogger("pilothouse.xds")
    knobs = KnobRegistry()
    register_log_knobs(knobs)
    assert "log.default" in knobs and "log.xds" in knobs
    assert change(knobs, "log.xds", "DEBUG") == "debug"
    assert logging.getLogger("pilothouse.xds").getEffectiveLevel() == logging.DEBUG
    with pytest.raises(BadKnobValue, match=r"log\.xds: expected a log level"):
        change(knobs, "log.xds", "chatty")


class FakeAdmission:
    """The admission controller's interface (xds/server/admission.py), for these knobs."""

    def __init__(self) -> None:
        self._rate, self._burst, self._max = 25.0, 1, 0

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def burst(self) -> int:
        return self._burst

    @property
    def max_connections(self) -> int:
        return self._max

    def configure(
        self,
        *,
        rate: float | None = None,
        burst: int | None = None,
        max_connections: int | None = None,
    ) -> None:
        if burst is not None and burst < 1:
            raise ValueError("burst must be 1 or more")
        self._rate = self._rate if rate is None else rate
        self._burst = self._burst if burst is None else burst
        self._max = self._max if max_connections is None else max_connections


def test_admission_knobs_configure_the_controller() -> None:
    admission = FakeAdmission()
    knobs = KnobRegistry()
    register_admission_knobs(knobs, admission)
    assert change(knobs, "admission.rate", 2.5) == 2.5
    assert change(knobs, "admission.burst", 10) == 10
    assert change(knobs, "admission.max_connections", "5000") == 5000
    assert (admission.rate, admission.burst, admission.max_connections) == (2.5, 10, 5000)
    with pytest.raises(BadKnobValue, match=r"admission\.burst: burst must be 1 or more"):
        change(knobs, "admission.burst", 0)
    assert admission.burst == 10
