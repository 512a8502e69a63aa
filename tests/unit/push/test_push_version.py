"""Push versions only increase, whatever the wall clock does; nonces carry their version."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.push.version import (
    NonceSource,
    PushVersions,
    format_version,
    nonce_version,
    version_time,
)

VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z/\d+$")
JUNE_1 = datetime(2025, 6, 1, 12, 34, 56, 123456, tzinfo=UTC).timestamp()


class Wall:
    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def __call__(self) -> float:
        return self.readings.pop(0)


def test_format_is_rfc3339_utc_with_counter() -> None:
    versions = PushVersions(Wall(JUNE_1))
    assert versions.last is None
    version = versions.next()
    assert version == "2025-06-01T12:34:56.123456Z/1"
    assert VERSION.match(version)
    assert versions.last == version
    assert version_time(version) == datetime(2025, 6, 1, 12, 34, 56, 123456, tzinfo=UTC)
    assert format_version(0, 3) == "1970-01-01T00:00:00.000000Z/3"


def test_clock_standing_still_or_going_back_still_increases() -> None:
    versions = PushVersions(Wall(JUNE_1, JUNE_1, JUNE_1 - 3600, JUNE_1 + 1))
    issued = [versions.next() for _ in range(4)]
    assert issued == [
        "2025-06-01T12:34:56.123456Z/1",
        "2025-06-01T12:34:56.123457Z/2",  # same reading: one microsecond later
        "2025-06-01T12:34:56.123458Z/3",  # an hour back: still later
        "2025-06-01T12:34:57.123456Z/4",  # the wall clock is ahead again
    ]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=4e9, allow_nan=False), min_size=2, max_size=30))
def test_versions_strictly_increase_as_strings(readings: list[float]) -> None:
    versions = PushVersions(Wall(*readings))
    issued = [versions.next() for _ in readings]
    assert all(VERSION.match(v) for v in issued)
    assert all(a < b for a, b in itertools.pairwise(issued))
    assert len(set(issued)) == len(issued)


def test_nonces_are_unique_per_stream_and_carry_the_version() -> None:
    stream = NonceSource(token="ab12")
    version = "2025-06-01T12:34:56.123456Z/1"
    nonces = [stream.next(version) for _ in range(3)]
    assert nonces == [f"{version}/ab12-1", f"{version}/ab12-2", f"{version}/ab12-3"]
    assert {nonce_version(n) for n in nonces} == {version}


def test_streams_get_different_random_tokens() -> None:
    version = "2025-06-01T12:34:56.123456Z/1"
    a, b = NonceSource(), NonceSource()
    assert a.token != b.token
    assert a.next(version) != b.next(version)


def test_bad_tokens_and_nonces_are_rejected() -> None:
    with pytest.raises(ValueError):
        NonceSource(token="")
    with pytest.raises(ValueError):
        NonceSource(token="a/b")
    with pytest.raises(ValueError):
        nonce_version("no-slash")
