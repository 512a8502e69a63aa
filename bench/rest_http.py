"""A lean HTTP/1.1 client connection for the REST discovery benchmark.

aiohttp's client spends about as much CPU on each 70 KB answer as the server
under test spends producing it, so on a 2-core machine it would cap the very
throughput being measured. :class:`KeepAlive` does the least a correct client
must: it sends one pre-built POST, reads the status line and headers, then exactly
``Content-Length`` body bytes (none for 304), on one keep-alive connection that it
reopens when the server closes it. Chunked answers and anything it cannot frame
raise :class:`HttpError`, which the benchmark counts as an error.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

HEAD_END: Final = b"\r\n\r\n"
MAX_HEAD: Final = 64 * 1024
NO_BODY: Final = frozenset({204, 304})


class HttpError(Exception):
    """An answer this client cannot read (or a connection that broke mid-answer)."""


def post_request(host: str, port: int, path: str, body: bytes) -> bytes:
    """The bytes of one keep-alive POST of a JSON ``body``."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


def parse_head(head: bytes) -> tuple[int, int | None, bool]:
    """(status, content length or None, whether the server will close) of a response head."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise HttpError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    try:
        status = int(parts[1])
    except ValueError:
        raise HttpError(f"bad status in {lines[0][:80]!r}") from None
    length: int | None = None
    closes = parts[0] == "HTTP/1.0"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        if key == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise HttpError(f"bad content-length {value.strip()!r}") from None
        elif key == "transfer-encoding" and value.strip().lower() != "identity":
            raise HttpError(f"transfer-encoding {value.strip()} is not supported")
        elif key == "connection":
            closes = value.strip().lower() == "close"
    return status, length, closes


class KeepAlive:
    """One connection to ``host:port`` posting the same pre-built request again and again."""

    def __init__(self, host: str, port: int, request: bytes) -> None:
        self._host = host
        self._port = port
        self._request = request
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post(self) -> tuple[int, bytes]:
        """Send the request, return (status, body)."""
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(
                self._host, self._port, limit=MAX_HEAD
            )
        reader, writer = self._reader, self._writer
        assert reader is not None
        try:
            writer.write(self._request)
            head = await reader.readuntil(HEAD_END)
            status, length, closes = parse_head(head[: -len(HEAD_END)])
            if status in NO_BODY:
                body = b""
            elif length is not None:
                body = await reader.readexactly(length)
            else:
                body, closes = await reader.read(), True  # framed by the close
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as broken:
            await self.close()
            raise HttpError(f"connection broke: {type(broken).__name__}") from None
        except HttpError:
            await self.close()
            raise
        if closes:
            await self.close()
        return status, body

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
