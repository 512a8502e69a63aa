"""The two fields of a ``DiscoveryResponse`` the proxy routes by, read off its bytes.

A response (a whole mesh's clusters, megabytes) passes through the agent as bytes; only
``type_url`` (field 4) and ``nonce`` (field 5) are read, by walking the top-level fields
without decoding the resources.
"""

from __future__ import annotations

from typing import NamedTuple

from pilothouse.protowire import WireError, read_varint

TYPE_URL_FIELD = 4
NONCE_FIELD = 5


class ResponseFields(NamedTuple):
    type_url: str
    nonce: str


def response_fields(data: bytes) -> ResponseFields:
    """``type_url`` and ``nonce`` of a serialised DiscoveryResponse; WireError if bad."""
    found: dict[int, str] = {}
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, pos = read_varint(data, pos)
        elif wire_type == 2:
            size, pos = read_varint(data, pos)
            if pos + size > len(data):
                raise WireError("truncated field")
            if number in (TYPE_URL_FIELD, NONCE_FIELD):
                found[number] = data[pos : pos + size].decode("utf-8", "replace")
            pos += size
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        else:
            raise WireError(f"unexpected wire type {wire_type}")
    return ResponseFields(found.get(TYPE_URL_FIELD, ""), found.get(NONCE_FIELD, ""))
