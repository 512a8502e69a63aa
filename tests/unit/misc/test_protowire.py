"""The one hand-written protobuf writer agrees with protobuf's own serialisation; the reader
reads back what it wrote."""

from __future__ import annotations

import pytest
from google.protobuf import wrappers_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.protowire import (
    LENGTH_DELIMITED,
    VARINT,
    WireError,
    length_delimited,
    read_varint,
    tag,
    text_field,
    varint,
)

BOUNDARIES = [0, 1, 127, 128, 300, 16_383, 16_384, 2**21 - 1, 2**21, 2**35, 2**64 - 1]


def protobuf_varint(value: int) -> bytes:
    """What protobuf writes for ``value`` (UInt64Value field 1 is a varint: drop its tag)."""
    encoded = wrappers_pb2.UInt64Value(value=value).SerializeToString()
    return encoded[1:] if value else b"\x00"


@pytest.mark.parametrize("value", BOUNDARIES)
def test_varint_at_the_boundaries(value: int) -> None:
    assert varint(value) == protobuf_varint(value)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_varint_matches_protobuf(value: int) -> None:
    assert varint(value) == protobuf_varint(value)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=20_000))
def test_length_delimited_matches_protobuf(payload: bytes) -> None:
    expected = wrappers_pb2.BytesValue(value=payload).SerializeToString()
    assert (length_delimited(1, payload) if payload else b"") == expected


def test_text_field_is_omitted_when_empty_as_proto3_does() -> None:
    assert text_field(1, "") == wrappers_pb2.StringValue(value="").SerializeToString() == b""
    assert text_field(1, "ü") == wrappers_pb2.StringValue(value="ü").SerializeToString()


def test_tags() -> None:
    assert tag(1, LENGTH_DELIMITED) == b"\x0a"
    assert tag(6, VARINT) == b"\x30"
    assert tag(16, LENGTH_DELIMITED) == b"\x82\x01"


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=4))
def test_read_varint_reads_back_what_was_written(value: int, prefix: bytes) -> None:
    data = prefix + varint(value) + b"\x07"
    assert read_varint(data, len(prefix)) == (value, len(data) - 1)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff" * 10 + b"\x01"])
def test_read_varint_refuses_truncated_or_overlong(data: bytes) -> None:
    with pytest.raises(WireError):
        read_varint(data, 0)
