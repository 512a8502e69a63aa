"""Just enough HTTP/1.1 framing over asyncio streams for the harness's client and upstreams.

Messages are read as a head (request or status line plus headers) and a body framed by
``content-length``, by ``transfer-encoding: chunked``, or (responses only) by the end of
the connection.  Header names are kept in lower case.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_BODY = 64 * 1024 * 1024

Headers = tuple[tuple[str, str], ...]


class HttpProtocolError(Exception):
    """The peer sent something that is not HTTP/1.1 as this harness understands it."""


def header_value(headers: Headers, name: str) -> str | None:
    """The first value of header ``name`` (case-insensitive), or None."""
    wanted = name.lower()
    for key, value in headers:
        if key == wanted:
            return value
    return None


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A request as an upstream received it."""

    method: str
    target: str
    version: str
    headers: Headers
    body: bytes

    def header(self, name: str) -> str | None:
        return header_value(self.headers, name)

    @property
    def keep_alive(self) -> bool:
        connection = (self.header("connection") or "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A response as the client received it."""

    status: int
    reason: str
    headers: Headers
    body: bytes

    def header(self, name: str) -> str | None:
        return header_value(self.headers, name)

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def keep_alive(self) -> bool:
        return "close" not in (self.header("connection") or "").lower()


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """The next request on the connection, or None if it closed cleanly before one."""
    head = await _read_head(reader)
    if head is None:
        return None
    start, headers = head
    parts = start.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpProtocolError(f"bad request line {start!r}")
    method, target, version = parts
    body = await _read_body(reader, headers, until_eof=False)
    return HttpRequest(method, target, version, headers, body)


async def read_response(reader: asyncio.StreamReader, *, method: str = "GET") -> HttpResponse:
    """The next response on the connection; ``EOFError`` if it closed before one."""
    head = await _read_head(reader)
    if head is None:
        raise EOFError("connection closed before a response")
    start, headers = head
    version, _, rest = start.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise HttpProtocolError(f"bad status line {start!r}")
    status = int(code)
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        body = b""
    else:
        body = await _read_body(reader, headers, until_eof=True)
    return HttpResponse(status, reason, headers, body)


def encode_request(
    method: str,
    target: str,
    authority: str,
    headers: Iterable[tuple[str, str]] = (),
    body: bytes = b"",
    *,
    keep_alive: bool = True,
) -> bytes:
    """A request with ``host``, ``content-length`` (when there is a body) and ``connection``."""
    lines = [f"{method} {target} HTTP/1.1", f"host: {authority}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"content-length: {len(body)}")
    lines.append(f"connection: {'keep-alive' if keep_alive else 'close'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def encode_response(
    status: int,
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    body: bytes,
    *,
    reason: str = "",
    keep_alive: bool = True,
) -> bytes:
    """A response with ``content-length`` and ``connection`` set from the arguments."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    lines = [f"HTTP/1.1 {status} {reason or _REASONS.get(status, 'Status')}"]
    lines += [f"{name}: {value}" for name, value in items]
    lines.append(f"content-length: {len(body)}")
    lines.append(f"connection: {'keep-alive' if keep_alive else 'close'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, Headers] | None:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise HttpProtocolError("connection closed inside a message head") from exc
    except asyncio.LimitOverrunError as exc:
        raise HttpProtocolError("message head too large") from exc
    lines = raw.decode("latin-1").split("\r\n")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise HttpProtocolError(f"bad header line {line!r}")
        headers.append((name.strip().lower(), value.strip()))
    return lines[0], tuple(headers)


async def _read_body(reader: asyncio.StreamReader, headers: Headers, *, until_eof: bool) -> bytes:
    encoding = (header_value(headers, "transfer-encoding") or "").lower()
    if "chunked" in encoding:
        return await _read_chunked(reader)
    length = header_value(headers, "content-length")
    if length is not None:
        if not length.isdigit() or int(length) > MAX_BODY:
            raise HttpProtocolError(f"bad content-length {length!r}")
        return await reader.readexactly(int(length))
    if until_eof:
        return await reader.read(MAX_BODY)
    return b""


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError as exc:
            raise HttpProtocolError(f"bad chunk size {size_line!r}") from exc
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers are read and dropped
            return b"".join(chunks)
        total += size
        if total > MAX_BODY:
            raise HttpProtocolError("chunked body too large")
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)


_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    301: "Moved Permanently",
    302: "Found",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
