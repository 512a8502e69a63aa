"""The client engine's requests as wire bytes: ``DiscoveryRequest`` and ``DeltaDiscoveryRequest``.

A simulated proxy sends a request for every response it gets, and a SotW ACK
repeats the type's whole ``resource_names`` (a hundred EDS names, say) every
time.  Building a protobuf message for that costs more than the rest of the
client's work, so requests are encoded here straight from the frozen values
(``client_requests``), field by field, and the encoded names list is
remembered per list: a thousand proxies watching the same clusters encode it
once.  The node (a protobuf message, on a stream's first request only) is
serialised by protobuf.

Field numbers (envoy/service/discovery/v3/discovery.proto):
``DiscoveryRequest`` version_info 1, node 2, resource_names 3, type_url 4,
response_nonce 5, error_detail 6; ``DeltaDiscoveryRequest`` node 1, type_url 2,
resource_names_subscribe 3, resource_names_unsubscribe 4,
initial_resource_versions 5 (map entries: key 1, value 2), response_nonce 6,
error_detail 7; ``google.rpc.Status`` code 1, message 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from pilothouse.xds.protocol.client_requests import (
    NO_NODE,
    NO_STATUS,
    ClientRequest,
    DeltaClientRequest,
    RequestStatus,
    SotwClientRequest,
)

LENGTH_DELIMITED: Final = 2
VARINT: Final = 0


def varint(value: int) -> bytes:
    """``value`` (non-negative, or an int32 sign-extended to 64 bits) as a protobuf varint."""
    if value < 0:
        value += 1 << 64
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int, wire_type: int = LENGTH_DELIMITED) -> bytes:
    return varint(number << 3 | wire_type)


def length_delimited(number: int, data: bytes) -> bytes:
    """One length-delimited field: a string, bytes or an embedded message."""
    return tag(number) + varint(len(data)) + data


def string_field(number: int, value: str) -> bytes:
    """A string field, or nothing for ``""`` (proto3 leaves defaults out)."""
    if not value:
        return b""
    return length_delimited(number, value.encode())


def repeated_strings(number: int, values: Iterable[str]) -> bytes:
    prefix = tag(number)
    return b"".join(prefix + varint(len(data)) + data for data in (v.encode() for v in values))


def status_message(status: RequestStatus) -> bytes:
    code = tag(1, VARINT) + varint(status.code) if status.code else b""
    return code + string_field(2, status.message)


def string_map(number: int, entries: Mapping[str, str]) -> bytes:
    """A ``map<string, string>`` field: one entry message per key, sorted for stable bytes."""
    return b"".join(
        length_delimited(number, string_field(1, key) + string_field(2, entries[key]))
        for key in sorted(entries)
    )


def node_bytes(node: object) -> bytes:
    """The node message's encoding (a protobuf ``envoy.config.core.v3.Node``)."""
    serialize = getattr(node, "SerializeToString", None)
    if serialize is None:
        raise TypeError(f"cannot encode node {node!r}: not a protobuf message")
    return bytes(serialize())


class RequestEncoder:
    """Encodes client requests, remembering encoded name lists (bounded).

    One encoder may be shared by many clients in one event loop.
    """

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._names: dict[tuple[int, tuple[str, ...]], bytes] = {}
        self._type_urls: dict[tuple[int, str], bytes] = {}

    def encode(self, request: ClientRequest) -> bytes:
        if isinstance(request, SotwClientRequest):
            return self._sotw(request)
        return self._delta(request)

    __call__ = encode

    def _names_field(self, number: int, names: tuple[str, ...]) -> bytes:
        if not names:
            return b""
        key = (number, names)
        known = self._names.get(key)
        if known is None:
            known = repeated_strings(number, names)
            if len(self._names) >= self._capacity:
                self._names.clear()
            self._names[key] = known
        return known

    def _type_url_field(self, number: int, type_url: str) -> bytes:
        key = (number, type_url)
        known = self._type_urls.get(key)
        if known is None:
            known = self._type_urls[key] = string_field(number, type_url)
        return known

    def _sotw(self, request: SotwClientRequest) -> bytes:
        parts = [
            string_field(1, request.version_info),
            self._names_field(3, request.resource_names),
            self._type_url_field(4, request.type_url),
            string_field(5, request.response_nonce),
        ]
        if request.node is not NO_NODE:
            parts.append(length_delimited(2, node_bytes(request.node)))
        if request.error_detail is not NO_STATUS:
            parts.append(length_delimited(6, status_message(request.error_detail)))
        return b"".join(parts)

    def _delta(self, request: DeltaClientRequest) -> bytes:
        parts = [
            self._type_url_field(2, request.type_url),
            self._names_field(3, request.resource_names_subscribe),
            self._names_field(4, request.resource_names_unsubscribe),
            string_field(6, request.response_nonce),
        ]
        if request.initial_resource_versions:
            parts.append(string_map(5, request.initial_resource_versions))
        if request.node is not NO_NODE:
            parts.append(length_delimited(1, node_bytes(request.node)))
        if request.error_detail is not NO_STATUS:
            parts.append(length_delimited(7, status_message(request.error_detail)))
        return b"".join(parts)

