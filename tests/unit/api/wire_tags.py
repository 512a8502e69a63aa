"""A minimal protobuf wire reader: the (field number, wire type) of each top-level record.

Written for the tests so that field numbers are checked on the encoded bytes
rather than through the protobuf library's own view of the descriptors; varints are
read by pilothouse's own reader (checked against protobuf in tests/unit/misc).
"""

from __future__ import annotations

from pilothouse.protowire import read_varint

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5


def read_tags(data: bytes) -> list[tuple[int, int]]:
    """(field number, wire type) of every record in data, in order; payloads skipped."""
    tags: list[tuple[int, int]] = []
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 0x7
        if number == 0:
            raise ValueError("field number 0 is invalid")
        if wire_type == VARINT:
            _, pos = read_varint(data, pos)
        elif wire_type == FIXED64:
            pos += 8
        elif wire_type == LENGTH_DELIMITED:
            length, pos = read_varint(data, pos)
            pos += length
        elif wire_type == FIXED32:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire_type} for field {number}")
        if pos > len(data):
            raise ValueError(f"truncated payload of field {number}")
        tags.append((number, wire_type))
    return tags
