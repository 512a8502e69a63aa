"""Deterministic versions and nonces, and the versions-only-go-forward guard."""

from __future__ import annotations

import pytest

from pilothouse.xds.protocol.versions import (
    NonceSequence,
    VersionRegression,
    VersionSequence,
    check_version_advance,
    version_ordinal,
)


def test_version_sequence_is_deterministic_and_increasing() -> None:
    first, seq = VersionSequence().next(0.0)
    second, seq = seq.next(0.0)
    assert first == "1970-01-01T00:00:00Z/1"
    assert second == "1970-01-01T00:00:00Z/2"
    assert VersionSequence().next(0.0)[0] == first
    assert seq == VersionSequence(2)


def test_nonce_sequence() -> None:
    seq = NonceSequence("s7-")
    nonces = []
    for _ in range(3):
        nonce, seq = seq.next()
        nonces.append(nonce)
    assert nonces == ["s7-1", "s7-2", "s7-3"]


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
