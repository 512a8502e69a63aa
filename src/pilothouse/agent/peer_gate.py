"""A workload's socket in node mode: only the workload's own processes get through.

gRPC does not tell a servicer who is at the other end of a Unix socket, so each public
socket is a gate: it accepts a connection, reads the peer's credentials from the kernel
(``SO_PEERCRED``: pid, uid, gid, which the peer cannot forge), and lets it through to
that workload's private gRPC socket only when the uid is one the agent's config gives
that workload. Anyone else is logged and disconnected before a byte is read, so no
caller can reach another workload's certificate. Bytes are then copied both ways
until either side closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pilothouse.agent.unix_socket import prepare

log = logging.getLogger("pilothouse.agent.gate")

_CREDENTIALS: Final = struct.Struct("3i")
CHUNK: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class PeerCredentials:
    pid: int
    uid: int
    gid: int


def peer_credentials(connection: socket.socket) -> PeerCredentials:
    """The kernel's word on who is at the other end of a Unix socket."""
    raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size)
    return PeerCredentials(*_CREDENTIALS.unpack(raw))


class PeerGate:
    """``public`` (mode 0666: the gate decides) in front of ``private``, for ``uids``."""

    def __init__(self, name: str, public: Path, private: Path, uids: frozenset[int]) -> None:
        self.name = name
        self.public = public
        self.private = private
        self.uids = uids
        self.refused = 0
        self.admitted = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        prepare(self.public)
        self._server = await asyncio.start_unix_server(self._connected, path=str(self.public))
        self.public.chmod(0o666)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(OSError):
            self.public.unlink()

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = writer.get_extra_info("socket")
        try:
            peer = peer_credentials(connection)
        except OSError as problem:
            log.warning("no peer credentials on %s: %s", self.public, problem)
            writer.close()
            return
        if peer.uid not in self.uids:
            self.refused += 1
            log.warning(
                "refused a caller on another workload's socket",
                extra={"workload": self.name, "uid": peer.uid, "pid": peer.pid},
            )
            writer.close()
            return
        self.admitted += 1
        try:
            inner_reader, inner_writer = await asyncio.open_unix_connection(str(self.private))
        except OSError as problem:
            log.warning("workload %s's socket is not serving: %s", self.name, problem)
            writer.close()
            return
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(_copy(reader, inner_writer))
            tasks.create_task(_copy(inner_reader, writer))


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()
