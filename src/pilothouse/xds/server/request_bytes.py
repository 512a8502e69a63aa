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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def _reason(error: DecodeError) -> str:
    """protobuf's own words after its ``Error parsing message with type '…':`` prefix."""
    text = str(error)
    reason = text.rsplit(": ", 1)[-1] if ": " in text else text
    return (reason[:1].lower() + reason[1:]) if reason else "malformed bytes"
