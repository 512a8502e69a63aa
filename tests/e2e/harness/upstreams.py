"""Local HTTP/1.1 upstreams inside the test process that say who they are.

Every response carries the upstream's name in the ``x-upstream`` header and a JSON body:
``{"upstream", "method", "path", "headers", "body_bytes", "request"}`` (``headers`` holds
the echoed request headers, all of them unless ``echo_headers`` narrows it).  A request
for ``/status/<code>`` is answered with that status.  Variants: ``delay`` answers every
request late (slow upstream); ``fail_first`` fails the first N requests with a 503 or a
TCP reset (flaky upstream).  Each upstream counts the requests it received.
Upstreams bind 127.0.0.1 on a port the kernel picks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType

from tests.e2e.harness.client import UPSTREAM_HEADER
from tests.e2e.harness.http1 import HttpProtocolError, HttpRequest, encode_response, read_request
from tests.e2e.harness.ports import LOOPBACK


class Failure(StrEnum):
    """How a flaky upstream fails a request."""

    STATUS_503 = "503"
    RESET = "reset"


@dataclass(frozen=True, slots=True)
class UpstreamBehaviour:
    """How an upstream answers."""

    delay: float = 0.0
    """Seconds to wait before answering each request."""
    fail_first: int = 0
    """How many of the first requests fail."""
    failure: Failure = Failure.STATUS_503
    echo_headers: tuple[str, ...] | None = None
    """Request headers echoed in the body; None echoes all of them."""


class Upstream:
    """One running upstream: its name, address and what it received."""

    def __init__(self, name: str, behaviour: UpstreamBehaviour | None = None) -> None:
        self.name = name
        self.behaviour = behaviour or UpstreamBehaviour()
        self.requests = 0
        """Requests received, failed ones included."""
        self.failures = 0
        """Requests failed on purpose (``fail_first``)."""
        self.paths: Counter[str] = Counter()
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.host = LOOPBACK
        self.port = 0

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    async def start(self) -> Upstream:
        self._server = await asyncio.start_server(self._serve, LOOPBACK, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._writers):
            writer.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.wait_closed(), timeout=2.0)

    async def __aenter__(self) -> Upstream:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            while True:
                request = await read_request(reader)
                if request is None:
                    break
                if not await self._answer(request, writer):
                    break
        except (OSError, asyncio.IncompleteReadError, HttpProtocolError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, request: HttpRequest, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection must end."""
        self.requests += 1
        number = self.requests
        self.paths[request.target] += 1
        behaviour = self.behaviour
        if behaviour.delay > 0:
            await asyncio.sleep(behaviour.delay)
        if number <= behaviour.fail_first:
            self.failures += 1
            if behaviour.failure is Failure.RESET:
                _reset(writer)
                return False
            status = 503
        else:
            status = _requested_status(request.target) or 200
        body = json.dumps(
            {
                "upstream": self.name,
                "method": request.method,
                "path": request.target,
                "headers": self._echoed(request),
                "body_bytes": len(request.body),
                "request": number,
            }
        ).encode()
        headers = {UPSTREAM_HEADER: self.name, "content-type": "application/json"}
        keep_alive = request.keep_alive
        writer.write(encode_response(status, headers, body, keep_alive=keep_alive))
        await writer.drain()
        return keep_alive

    def _echoed(self, request: HttpRequest) -> dict[str, str]:
        wanted = self.behaviour.echo_headers
        if wanted is None:
            return dict(request.headers)
        names = {name.lower() for name in wanted}
        return {name: value for name, value in request.headers if name in names}


def _requested_status(target: str) -> int | None:
    path = target.split("?", 1)[0]
    prefix = "/status/"
    if path.startswith(prefix) and path[len(prefix) :].isdigit():
        code = int(path[len(prefix) :])
        if 200 <= code < 600:
            return code
    return None


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST instead of a FIN (SO_LINGER with a zero timeout)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class UpstreamPool:
    """Starts upstreams on demand and closes all of them at the end."""

    def __init__(self) -> None:
        self.upstreams: list[Upstream] = []

    async def start(self, name: str, behaviour: UpstreamBehaviour | None = None) -> Upstream:
        upstream = await Upstream(name, behaviour).start()
        self.upstreams.append(upstream)
        return upstream

    __call__ = start

    async def close_all(self) -> None:
        upstreams, self.upstreams = self.upstreams, []
        for upstream in upstreams:
            await upstream.close()
