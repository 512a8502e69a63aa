"""Turning a stream's request bytes into messages, where bad bytes are the client's error.

grpc.aio answers a request deserializer that raises with ``UNKNOWN`` and a Python
exception text. So the servicers register :func:`request_parser` instead: it parses
exactly as ``FromString`` does, and bytes that do not parse become an
:class:`Undecodable` value carrying a short reason, which the stream ends with
``INVALID_ARGUMENT``. Well-formed requests pay one more Python call and a ``try`` that
never fires: measured with timeit on this (busy, 2-core) machine, 0.1-0.3 µs on top of
the 1-3 µs ``FromString`` takes for a CDS or 20-name EDS ACK, against tens of µs for the
rest of a request's handling. Parsing in the deserializer, not in the stream loop, keeps
the parse where it was (no extra async generator per message, which costs more).

The discovery services' parser (:func:`discovery_request_parser`) also hands over a
fingerprint of the bytes that carry a SotW request's resource names
(:func:`names_fingerprint`). Most requests are ACKs naming exactly what the request
before named, and the session needs to know only that: with a hundred names, reading
them out of the message costs 10-25 µs (protobuf makes a Python string of each),
the fingerprint about 1 µs, and for names a parser saw lately (:class:`KnownNames`:
the proxies of a scope send the same bytes) a comparison in place, about half that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from google.protobuf.message import DecodeError


class Undecodable:
    """Request bytes that are not the expected message; ``reason`` says so, for the client."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Undecodable({self.reason!r})"


def request_parser(message_type: Any) -> Callable[[bytes], Any]:
    """A request deserializer for ``message_type`` that never raises.

    Returns the parsed message, or an :class:`Undecodable` naming the message type and
    what protobuf found wrong (``wire format was corrupt``), with no Python internals.
    """
    parse = message_type.FromString
    full_name = str(message_type.DESCRIPTOR.full_name)

    def parse_request(body: bytes) -> Any:
        try:
            return parse(body)
        except DecodeError as error:
            return Undecodable(f"the request is not a valid {full_name}: {_reason(error)}")
        except Exception:  # anything else protobuf raises on bytes is still bad bytes
            return Undecodable(f"the request is not a valid {full_name}")

    return parse_request


class Arrival(NamedTuple):
    """A parsed discovery request and the fingerprint of its names (None: not taken)."""

    request: Any
    names: int | None


def discovery_request_parser(
    message_type: Any, *, fingerprint: bool
) -> Callable[[bytes], Arrival | Undecodable]:
    """:func:`request_parser` for the discovery services: an :class:`Arrival`, with the
    names' fingerprint when ``fingerprint`` (SotW ``DiscoveryRequest``).

    One function per request, not the plain parser wrapped (every request of every
    stream comes through here: a call saved is saved on each)."""
    parse = message_type.FromString
    full_name = str(message_type.DESCRIPTOR.full_name)
    needles: dict[str, bytes] = {}
    known = KnownNames()
    arrival = tuple.__new__  # Arrival(…) without its Python-level __new__: per request

    def parse_arrival(body: bytes) -> Arrival | Undecodable:
        try:
            request = parse(body)
        except DecodeError as error:
            return Undecodable(f"the request is not a valid {full_name}: {_reason(error)}")
        except Exception:  # anything else protobuf raises on bytes is still bad bytes
            return Undecodable(f"the request is not a valid {full_name}")
        if not fingerprint:
            return arrival(Arrival, (request, None))
        type_url = request.type_url
        needle = needles.get(type_url)
        if needle is None:
            needle = type_url_field(type_url)
            if len(needles) < _KEPT_NEEDLES:
                needles[type_url] = needle
        return arrival(Arrival, (request, known.fingerprint(body, needle)))

    return parse_arrival


_KEPT_NEEDLES = 32
"""Type URLs whose encoded field a parser keeps (the client chooses them: bounded)."""
_KEPT_PER_TYPE = 4
"""Names regions :class:`KnownNames` keeps per type URL (the latest first)."""
KEPT_BYTES = 2 * 1024 * 1024
"""Bytes of names regions :class:`KnownNames` keeps at most."""

_VERSION_INFO = 0x0A  # field 1, length-delimited
_NODE = 0x12  # field 2
_RESOURCE_NAMES = 0x1A  # field 3
_TYPE_URL = 0x22  # field 4
_RESPONSE_NONCE = 0x2A  # field 5


def type_url_field(type_url: str) -> bytes:
    """``type_url`` as a DiscoveryRequest carries it: the field's tag, length and bytes."""
    encoded = type_url.encode()
    return bytes([_TYPE_URL]) + _varint(len(encoded)) + encoded


def names_fingerprint(body: bytes, type_url_field: bytes) -> int | None:
    """A fingerprint of the resource names a SotW ``DiscoveryRequest`` carries: equal
    for two requests naming the same names in the same order, whatever their
    version, nonce or node. None when the bytes are not laid out as every protobuf
    serializer writes them (fields in number order; ``type_url`` present).

    The names are the bytes between the node (field 2) and the type URL (field 4).
    The fingerprint is their hash (Python's keyed, per-process random bytes hash):
    two different name lists share it with a chance of about 2^-64 per comparison,
    and a client cannot aim for a collision without the process's hash key. Names
    written after the type URL (legal protobuf that no serializer produces) give no
    fingerprint; anything else written among them only makes equal names look
    different (the session then compares the names themselves).
    """
    at = _names_start(body)
    if at is None:
        return None
    end = _names_end(body, at, type_url_field)
    if end is None:
        return None
    return hash(body[at:end])


class KnownNames:
    """The names regions of the requests a parser saw lately, per type URL, with their
    :func:`names_fingerprint`.

    The proxies of one scope name the same clusters in the same bytes, request after
    request (a hundred names are about 5 KB). A request whose names are bytes for bytes
    a region seen lately gets that region's fingerprint by a comparison in place,
    without copying and hashing the region again (about a third of what parsing a
    hundred-name ACK costs). The bytes are compared, never trusted by their hash, so a
    client cannot make its names pass for another's. Bounded: a few regions per type
    URL, for at most ``_KEPT_NEEDLES`` type URLs, ``KEPT_BYTES`` in all (a client
    chooses how long its names are: a region longer than an eighth of that is not kept,
    and going over forgets every region kept).
    """

    __slots__ = ("_bytes", "_kept")

    def __init__(self) -> None:
        self._kept: dict[bytes, list[tuple[bytes, int]]] = {}
        self._bytes = 0
        """The length of every region kept."""

    @property
    def kept_bytes(self) -> int:
        """How many bytes of names regions are kept."""
        return self._bytes

    def fingerprint(self, body: bytes, type_url_field: bytes) -> int | None:
        """:func:`names_fingerprint` of ``body`` (for a request whose nonce repeats the
        type URL's bytes, which that reads as the end of the names: the fingerprint of
        the names themselves)."""
        at = _names_start(body)
        if at is None:
            return None
        known = self._kept.get(type_url_field)
        if known is not None:
            size = len(body)
            for names, fingerprint in known:
                end = at + len(names)
                if body.startswith(names, at) and body.startswith(type_url_field, end):
                    after = end + len(type_url_field)
                    if (  # the usual tail, the nonce alone, is read here
                        after + 1 < size
                        and body[after] == _RESPONSE_NONCE
                        and after + 2 + body[after + 1] == size
                        and body[after + 1] < 0x80
                    ) or _no_names_from(body, after):
                        return fingerprint
        last = _names_end(body, at, type_url_field)
        if last is None:
            return None
        names = body[at:last]
        fingerprint = hash(names)
        size = len(names)
        if size > KEPT_BYTES // 8:
            return fingerprint
        if self._bytes + size > KEPT_BYTES:
            self._kept.clear()
            self._bytes = 0
            known = None
        if known is None:
            if len(self._kept) >= _KEPT_NEEDLES:
                return fingerprint
            known = self._kept[type_url_field] = []
        known.insert(0, (names, fingerprint))
        self._bytes += size
        for dropped, _ in known[_KEPT_PER_TYPE:]:
            self._bytes -= len(dropped)
        del known[_KEPT_PER_TYPE:]
        return fingerprint


# Written for speed (every SotW request comes through here): one-byte lengths and the
# usual tail (the nonce alone) are read inline, anything else by the walk.


def _names_start(body: bytes) -> int | None:
    """Where the names start: after the version (field 1) and the node (field 2); None
    when what follows is neither a name nor the type URL."""
    at = 0
    size = len(body)
    tag = body[0] if size else 0
    while tag in (_VERSION_INFO, _NODE):
        length = body[at + 1] if at + 1 < size else 0
        if length < 0x80:
            at += 2 + length
        else:
            length, at = _read_varint(body, at + 1)
            at += length
        tag = body[at] if at < size else 0
    if tag not in (_RESOURCE_NAMES, _TYPE_URL):
        return None
    return at


def _names_end(body: bytes, at: int, type_url_field: bytes) -> int | None:
    """Where the names starting at ``at`` end: at the last ``type_url`` field, if no
    name follows it; else None."""
    end = body.rfind(type_url_field, at)
    if end < 0 or not _no_names_from(body, end + len(type_url_field)):
        return None
    return end


def _no_names_from(body: bytes, at: int) -> bool:
    """:func:`_no_names_after`, with the usual tail (the nonce, field 5, alone and
    shorter than 128 bytes) recognised inline."""
    size = len(body)
    if at == size:
        return True
    if body[at] == _RESPONSE_NONCE and at + 1 < size:
        length = body[at + 1]
        if length < 0x80 and at + 2 + length == size:
            return True
    return _no_names_after(body, at)


def _no_names_after(body: bytes, at: int) -> bool:
    """Whether the fields from ``at`` on (after the type URL: the nonce, an error) hold
    no resource name. False also for bytes that do not walk as fields."""
    size = len(body)
    while at < size:
        tag, at = _read_varint(body, at)
        if tag >> 3 == 3:
            return False
        kind = tag & 7
        if kind == 2:
            length, at = _read_varint(body, at)
            at += length
        elif kind == 0:
            _, at = _read_varint(body, at)
        elif kind == 1:
            at += 8
        elif kind == 5:
            at += 4
        else:
            return False
    return at == size


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(body: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and the offset after it (past the end: an empty field)."""
    value = shift = 0
    while at < len(body):
        byte = body[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return value, at


def _reason(error: DecodeError) -> str:
    """protobuf's own words after its ``Error parsing message with type '…':`` prefix."""
    text = str(error)
    reason = text.rsplit(": ", 1)[-1] if ": " in text else text
    return (reason[:1].lower() + reason[1:]) if reason else "malformed bytes"
