"""A client that is not on loopback, on one machine: a TCP relay from a non-loopback address.

Servers in tests listen on 127.0.0.1 only. Linux still accepts a connection to
127.0.0.1 whose *source* is another address of the same host (one of its interfaces),
and the server then sees that address as the peer. :class:`RemoteRelay` listens on
127.0.0.1 and forwards each connection to a target from such a source, so any client
(HTTP, gRPC) pointed at the relay reaches the target as a non-loopback peer; nothing
leaves the machine. :func:`non_loopback_address` finds a source address, or None when
the host has no interface but loopback (tests then skip).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import socket
import struct

from tests.e2e.harness.ports import LOOPBACK

_SIOCGIFADDR = 0x8915


def non_loopback_address() -> str | None:
    """An IPv4 address of one of this host's interfaces other than loopback."""
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
            except OSError:
                continue
        address = socket.inet_ntoa(answer[20:24])
        if not address.startswith("127."):
            return address
    return None


class RemoteRelay:
    """Listens on 127.0.0.1 and relays to ``target_port`` from ``source`` (not loopback)."""

    def __init__(self, source: str, target_port: int) -> None:
        self.source = source
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._relay, LOOPBACK, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        """Stop listening and close every relayed connection (both sides)."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        if self._server is not None:
            await self._server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(
                LOOPBACK, self.target_port, local_addr=(self.source, 0)
            )
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        self._writers.update((writer, up_writer))
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for side in (writer, up_writer):
                side.close()
                self._writers.discard(side)
            self._tasks.discard(task)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()
