"""A TCP relay on a fixed loopback port that a test can cut and restore: one client's
path to a server goes away (connections reset, new ones refused) while the server and
its other clients carry on, then comes back on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib

from tests.e2e.harness.ports import LOOPBACK, free_port


class CutRelay:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target``; :meth:`cut` / :meth:`restore`."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def endpoint(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    async def restore(self) -> CutRelay:
        """Listen (again) on the relay's port."""
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, LOOPBACK, self.port)
        return self

    async def cut(self) -> None:
        """Stop listening and reset every relayed connection."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(LOOPBACK, self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while chunk := await source.read(65536):
                sink.write(chunk)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(sink)
            sink.transport.abort()
