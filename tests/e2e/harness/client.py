"""An async HTTP/1.1 client for driving traffic through Envoy listeners and reading its admin API.

``fetch`` sends one request on a fresh connection.  ``send_requests`` sends a bounded number
of requests within a bounded time, over keep-alive connections or one connection per
request, and reports every status code, the ``x-upstream`` header that the harness's
upstreams set, and every error.  HTTPS gateways are reached by passing an
``ssl.SSLContext`` that trusts the test CA and the ``server_hostname`` to verify.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tests.e2e.harness.http1 import (
    Headers,
    HttpProtocolError,
    HttpResponse,
    encode_request,
    read_response,
)

UPSTREAM_HEADER = "x-upstream"


@dataclass(frozen=True, slots=True)
class RequestResult:
    """What happened to one request: a status (and upstream) or an error."""

    status: int | None
    upstream: str | None
    headers: Headers
    body: bytes
    error: str | None
    elapsed: float


@dataclass(frozen=True, slots=True)
class TrafficReport:
    """Everything ``send_requests`` saw, in the order the requests completed."""

    results: tuple[RequestResult, ...]
    unsent: int
    """Requests not sent because the time budget ran out."""
    elapsed: float

    @property
    def statuses(self) -> Counter[int | None]:
        """How many requests got each status (None for errors)."""
        return Counter(result.status for result in self.results)

    @property
    def upstreams(self) -> Counter[str]:
        """How many responses each upstream (by ``x-upstream``) gave."""
        return Counter(result.upstream for result in self.results if result.upstream)

    @property
    def errors(self) -> list[str]:
        return [result.error for result in self.results if result.error is not None]

    @property
    def ok(self) -> int:
        """How many requests got a 2xx."""
        return sum(
            1 for result in self.results if result.status is not None and result.status < 300
        )

    def summary(self) -> str:
        """A one-line description for assertion messages."""
        errors = Counter(self.errors).most_common(3)
        return (
            f"{len(self.results)} done, {self.unsent} unsent in {self.elapsed:.2f}s; "
            f"statuses {dict(self.statuses)}; upstreams {dict(self.upstreams)}; errors {errors}"
        )


@dataclass(slots=True)
class _Connection:
    host: str
    port: int
    ssl_context: ssl.SSLContext | None
    server_hostname: str | None
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None

    async def exchange(self, request: bytes, method: str) -> HttpResponse:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(
                self.host,
                self.port,
                ssl=self.ssl_context,
                server_hostname=self.server_hostname if self.ssl_context else None,
            )
        assert self.reader is not None
        self.writer.write(request)
        await self.writer.drain()
        return await read_response(self.reader, method=method)

    async def close(self) -> None:
        writer, self.reader, self.writer = self.writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError, asyncio.TimeoutError):
                await asyncio.wait_for(writer.wait_closed(), timeout=1.0)


async def fetch(
    host: str,
    port: int,
    path: str = "/",
    *,
    method: str = "GET",
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    body: bytes = b"",
    authority: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
    timeout: float = 5.0,
) -> HttpResponse:
    """One request on a fresh connection; raises on connection errors and on timeout."""
    items = tuple(headers.items() if isinstance(headers, Mapping) else headers)
    request = encode_request(
        method, path, authority or f"{host}:{port}", items, body, keep_alive=False
    )
    connection = _Connection(host, port, ssl_context, server_hostname)
    try:
        return await asyncio.wait_for(connection.exchange(request, method), timeout)
    finally:
        await connection.close()


@dataclass(slots=True)
class _Budget:
    remaining: int
    deadline: float
    unsent: int = 0
    results: list[RequestResult] = field(default_factory=list)

    def take(self) -> bool:
        if self.remaining <= 0:
            return False
        if time.monotonic() >= self.deadline:
            self.unsent += self.remaining
            self.remaining = 0
            return False
        self.remaining -= 1
        return True


async def send_requests(
    host: str,
    port: int,
    count: int,
    *,
    path: str = "/",
    method: str = "GET",
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    body: bytes = b"",
    authority: str | None = None,
    keep_alive: bool = True,
    concurrency: int = 1,
    request_timeout: float = 2.0,
    total_timeout: float = 10.0,
    ssl_context: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
) -> TrafficReport:
    """Send ``count`` requests from ``concurrency`` workers, stopping at ``total_timeout``.

    A keep-alive worker reuses its connection until an error or ``connection: close``.
    """
    if count < 0 or concurrency < 1:
        raise ValueError("count must be >= 0 and concurrency >= 1")
    items = tuple(headers.items() if isinstance(headers, Mapping) else headers)
    request = encode_request(
        method, path, authority or f"{host}:{port}", items, body, keep_alive=keep_alive
    )
    started = time.monotonic()
    budget = _Budget(remaining=count, deadline=started + total_timeout)

    async def worker() -> None:
        connection = _Connection(host, port, ssl_context, server_hostname)
        try:
            while budget.take():
                budget.results.append(
                    await _one(connection, request, method, request_timeout, keep_alive)
                )
        finally:
            await connection.close()

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, max(count, 1))):
            group.create_task(worker())
    return TrafficReport(tuple(budget.results), budget.unsent, time.monotonic() - started)


async def _one(
    connection: _Connection, request: bytes, method: str, timeout: float, keep_alive: bool
) -> RequestResult:
    begun = time.monotonic()
    try:
        response = await asyncio.wait_for(connection.exchange(request, method), timeout)
    except (
        TimeoutError,
        OSError,
        EOFError,
        asyncio.IncompleteReadError,
        HttpProtocolError,
        ssl.SSLError,
    ) as exc:
        await connection.close()
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return RequestResult(None, None, (), b"", error, time.monotonic() - begun)
    if not (keep_alive and response.keep_alive):
        await connection.close()
    return RequestResult(
        response.status,
        response.header(UPSTREAM_HEADER),
        response.headers,
        response.body,
        None,
        time.monotonic() - begun,
    )
