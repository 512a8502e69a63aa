"""Push versions only increase, whatever the wall clock does; nonces carry their version;
the versions-only-go-forward guard."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.xds.protocol.versions import (
    NonceSource,
    PushVersions,
    VersionRegression,
    check_version_advance,
    format_version,
    nonce_version,
    version_ordinal,
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


@pytest.mark.parametrize(
    ("version", "ordinal"),
    [
        ("2026-01-01T00:00:00Z/12", 12),
        ("x/0", 0),
        ("abcdef", None),
        ("a/b", None),
        ("", None),
    ],
)
def test_version_ordinal(version: str, ordinal: int | None) -> None:
    assert version_ordinal(version) == ordinal


def test_check_version_advance() -> None:
    check_version_advance("t", "", "t0/1")
    check_version_advance("t", "t0/1", "t0/1")
    check_version_advance("t", "t0/1", "t0/2")
    check_version_advance("t", "hash-a", "hash-b")
    with pytest.raises(VersionRegression):
        check_version_advance("t", "t0/3", "t0/2")


def test_push_versions_carry_their_count_as_ordinal_and_advance() -> None:
    versions = PushVersions(Wall(JUNE_1, JUNE_1 - 10, JUNE_1 + 5))
    issued = [versions.next() for _ in range(3)]
    assert [version_ordinal(v) for v in issued] == [1, 2, 3]
    for before, after in itertools.pairwise(issued):
        check_version_advance("t", before, after)
    with pytest.raises(VersionRegression):
        check_version_advance("t", issued[2], issued[0])
