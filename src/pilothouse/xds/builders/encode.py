"""Encode a built resource once: its ``google.protobuf.Any`` bytes and a content hash.

:func:`to_any_bytes` writes the wire form of
``Any{type_url: "type.googleapis.com/<full name>", value: <message bytes>}``
directly, without creating an ``Any`` object: tag ``0x0a`` + length + type URL,
then tag ``0x12`` + length + the message's deterministic serialisation.  The
bytes are exactly those of ``Any.Pack`` followed by ``SerializeToString`` (tests
check this), so a response can embed them as they are: each element of a
``DiscoveryResponse``'s repeated ``resources`` field is the field's tag, a
length, and these bytes.

Measured here (protobuf 7.36 upb, Python 3.11, a loaded 2-core VM, best of 15
runs in one process) on an outbound GRPC cluster with a full traffic policy and
ISTIO_MUTUAL (681 bytes): serialising the message took 1.5-2.6 µs;
:func:`to_any_bytes` 2.8-3.6 µs; ``Any()`` + ``Pack`` + ``SerializeToString``
4.3-5.8 µs, so the direct path is 1.2-2.1x faster per resource (the ratio
moved with machine load between runs).  The message itself took ~90 µs to
build (~23 µs for a plain EDS cluster), so encoding is a small share either
way.  The larger gain is downstream: a cached ``bytes`` value is reused by
every response that carries it, where a packed ``Any`` object would be
re-serialised each time (DESIGN.md §2).

:func:`content_hash` is a 16-hex-digit BLAKE2b digest, used as a resource
version: equal content gives an equal version across processes and restarts.
"""

from __future__ import annotations

import hashlib
from typing import Final

from google.protobuf.message import Message

from pilothouse.protowire import varint

TYPE_URL_PREFIX: Final = "type.googleapis.com/"

_TYPE_URL_TAG: Final = b"\x0a"  # field 1, wire type 2 (length-delimited)
_VALUE_TAG: Final = b"\x12"  # field 2, wire type 2


def type_url(message: Message) -> str:
    """``type.googleapis.com/<full message name>``."""
    return TYPE_URL_PREFIX + message.DESCRIPTOR.full_name


def to_any_bytes(message: Message) -> bytes:
    """The serialised ``Any`` that wraps ``message`` (deterministic encoding)."""
    return any_bytes(type_url(message), message.SerializeToString(deterministic=True))


def any_bytes(type_url: str, value: bytes) -> bytes:
    """The serialised ``Any{type_url, value}`` for a message already serialised."""
    url = type_url.encode()
    if not value:  # proto3 omits an empty bytes field, and so does Any
        return b"".join((_TYPE_URL_TAG, varint(len(url)), url))
    return b"".join((_TYPE_URL_TAG, varint(len(url)), url, _VALUE_TAG, varint(len(value)), value))


def content_hash(data: bytes) -> str:
    """A short, stable digest of ``data`` (16 hex digits, 64 bits)."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()
