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

from pilothouse.protocol.client_requests import (
    NO_NODE,
    NO_STATUS,
    ClientRequest,
    DeltaClientRequest,
    RequestStatus,
    SotwClientRequest,
)
from pilothouse.protowire import LENGTH_DELIMITED, VARINT, length_delimited, varint
from pilothouse.protowire import tag as wire_tag
from pilothouse.protowire import text_field as string_field


def tag(number: int, wire_type: int = LENGTH_DELIMITED) -> bytes:
    return wire_tag(number, wire_type)


def repeated_strings(number: int, values: Iterable[str]) -> bytes:
    prefix = tag(number)
    return b"".join(prefix + varint(len(data)) + data for data in (v.encode() for v in values))


def status_message(status: RequestStatus) -> bytes:
    # int32 on the wire: a negative code is sign-extended to 64 bits.
    code = tag(1, VARINT) + varint(status.code % (1 << 64)) if status.code else b""
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


# Tags of the fields written on every request, made once.
_SOTW_VERSION: Final = tag(1)
_SOTW_NODE: Final = tag(2)
_SOTW_NAMES: Final = 3
"""The same number as ``_DELTA_SUBSCRIBE``: the two share one memory of name lists."""
_SOTW_TYPE_URL: Final = 4
_SOTW_NONCE: Final = tag(5)
_SOTW_ERROR: Final = tag(6)
_DELTA_NODE: Final = tag(1)
_DELTA_TYPE_URL: Final = 2
_DELTA_SUBSCRIBE: Final = 3
_DELTA_UNSUBSCRIBE: Final = 4
_DELTA_INITIAL: Final = 5
_DELTA_NONCE: Final = tag(6)
_DELTA_ERROR: Final = tag(7)


def _text(field_tag: bytes, value: str) -> bytes:
    """A string field whose tag is already encoded; nothing for ``""``."""
    if not value:
        return b""
    data = value.encode()
    return field_tag + varint(len(data)) + data  # protowire's varint is a table lookup


class RequestEncoder:
    """Encodes client requests, remembering encoded name lists (bounded).

    One encoder may be shared by many clients in one event loop.
    """

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._names: dict[tuple[str, ...], bytes] = {}
        self._unsubscribe: dict[tuple[str, ...], bytes] = {}
        self._sotw_type_urls: dict[str, bytes] = {}
        self._delta_type_urls: dict[str, bytes] = {}

    def encode(self, request: ClientRequest) -> bytes:
        if isinstance(request, SotwClientRequest):
            return self._sotw(request)
        return self._delta(request)

    __call__ = encode

    def _names_field(
        self, memory: dict[tuple[str, ...], bytes], number: int, names: tuple[str, ...]
    ) -> bytes:
        known = memory.get(names)
        if known is None:
            known = repeated_strings(number, names)
            if len(memory) >= self._capacity:
                memory.clear()
            memory[names] = known
        return known

    def _sotw(self, request: SotwClientRequest) -> bytes:
        type_url = request.type_url
        type_url_field = self._sotw_type_urls.get(type_url)
        if type_url_field is None:
            type_url_field = string_field(_SOTW_TYPE_URL, type_url)
            self._sotw_type_urls[type_url] = type_url_field
        names = request.resource_names
        encoded = b"".join(
            (
                _text(_SOTW_VERSION, request.version_info),
                self._names_field(self._names, _SOTW_NAMES, names) if names else b"",
                type_url_field,
                _text(_SOTW_NONCE, request.response_nonce),
            )
        )
        if request.node is not NO_NODE:
            encoded += _field(_SOTW_NODE, node_bytes(request.node))
        if request.error_detail is not NO_STATUS:
            encoded += _field(_SOTW_ERROR, status_message(request.error_detail))
        return encoded

    def _delta(self, request: DeltaClientRequest) -> bytes:
        type_url = request.type_url
        type_url_field = self._delta_type_urls.get(type_url)
        if type_url_field is None:
            type_url_field = string_field(_DELTA_TYPE_URL, type_url)
            self._delta_type_urls[type_url] = type_url_field
        encoded = type_url_field + _text(_DELTA_NONCE, request.response_nonce)
        subscribe = request.resource_names_subscribe
        if subscribe:
            encoded += self._names_field(self._names, _DELTA_SUBSCRIBE, subscribe)
        unsubscribe = request.resource_names_unsubscribe
        if unsubscribe:
            encoded += self._names_field(self._unsubscribe, _DELTA_UNSUBSCRIBE, unsubscribe)
        if request.initial_resource_versions:
            encoded += string_map(_DELTA_INITIAL, request.initial_resource_versions)
        if request.node is not NO_NODE:
            encoded += _field(_DELTA_NODE, node_bytes(request.node))
        if request.error_detail is not NO_STATUS:
            encoded += _field(_DELTA_ERROR, status_message(request.error_detail))
        return encoded


def _field(field_tag: bytes, payload: bytes) -> bytes:
    return field_tag + varint(len(payload)) + payload
