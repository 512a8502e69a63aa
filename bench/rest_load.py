"""The REST discovery benchmark's client: C connections posting one DiscoveryRequest.

:func:`load_round` opens ``connections`` keep-alive connections to one server and
has each post the same body back to back until ``seconds`` pass or ``max_requests``
have been sent, whichever comes first. The connections are the lean client of
:mod:`bench.rest_http` by default (cheap enough not to be the bottleneck), or aiohttp's
client (``client="aiohttp"``), which reads the same answers at several times the CPU.

Every answer is checked: a CDS answer must be 200 with exactly the expected number of
clusters (counted by their ``@type``, which costs microseconds); a "not modified"
round expects 304 with an empty body. The first answer of a round is also parsed in
full and its cluster names compared with the expected ones. Anything else is an
error, counted by kind and reported, never dropped.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Collection
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Final, Protocol
from urllib.parse import urlsplit

import aiohttp

from bench.rest_http import HttpError, KeepAlive, post_request

CLUSTER_TYPE: Final = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
_COMPACT_MARK: Final = b'"@type":"' + CLUSTER_TYPE.encode() + b'"'
_SPACED_MARK: Final = re.compile(rb'"@type"\s*:\s*"' + re.escape(CLUSTER_TYPE.encode()) + rb'"')
JSON_HEADERS: Final = {"content-type": "application/json"}


def count_clusters(body: bytes) -> int:
    """Clusters in a DiscoveryResponse's JSON: resources whose ``@type`` is Cluster.

    Nested messages carry other ``@type``s, and the top-level ``type_url`` is not an
    ``@type``, so this counts the resources themselves. Compact JSON (what both
    servers send) is counted with ``bytes.count``, ten times cheaper than the regular
    expression that also allows spaces.
    """
    found = body.count(_COMPACT_MARK)
    return found if found else len(_SPACED_MARK.findall(body))


@dataclass(frozen=True, slots=True)
class Expect:
    """What every answer of a round must be."""

    status: int
    clusters: int = 0
    names: Collection[str] = ()
    """Checked on the first answer only (a full JSON parse); empty: not checked."""


def problem(status: int, body: bytes, expect: Expect, *, full: bool = False) -> str | None:
    """Why an answer is wrong (a short, countable reason), or None when it is right."""
    if status != expect.status:
        return f"status {status}"
    if expect.status == 304:
        return "304 with a body" if body else None
    found = count_clusters(body)
    if found != expect.clusters:
        return f"{found} clusters, not {expect.clusters}"
    if full and expect.names:
        try:
            resources = json.loads(body)["resources"]
            names = sorted(str(r.get("name")) for r in resources)
        except (ValueError, KeyError, TypeError, AttributeError):
            return "not a DiscoveryResponse"
        if names != sorted(expect.names):
            return "other cluster names"
    return None


@dataclass
class LoadRound:
    """What one round against one server saw."""

    server: str
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    body_bytes: int = 0
    """Response body bytes of the good answers."""
    latencies: list[float] = field(default_factory=list)
    """Seconds per good answer, request sent to body read."""
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0

    @property
    def sent(self) -> int:
        return self.ok + sum(self.errors.values())


class Poster(Protocol):
    """One client connection posting the round's request."""

    async def post(self) -> tuple[int, bytes]: ...

    async def close(self) -> None: ...


class AiohttpPoster:
    """The same, through an aiohttp session (to cross-check the lean client)."""

    def __init__(self, session: aiohttp.ClientSession, url: str, body: bytes) -> None:
        self._session = session
        self._url = url
        self._body = body

    async def post(self) -> tuple[int, bytes]:
        async with self._session.post(self._url, data=self._body, headers=JSON_HEADERS) as answer:
            return answer.status, await answer.read()

    async def close(self) -> None:
        return None


def _posters(
    client: str, url: str, body: bytes, connections: int, stack: AsyncExitStack
) -> list[Poster]:
    if client == "aiohttp":
        connector = aiohttp.TCPConnector(limit=connections)
        session = aiohttp.ClientSession(connector=connector)
        stack.push_async_callback(session.close)
        return [AiohttpPoster(session, url, body) for _ in range(connections)]
    if client != "lean":
        raise ValueError(f"unknown client {client!r}; use lean or aiohttp")
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = post_request(host, port, parts.path, body)
    posters = [KeepAlive(host, port, request) for _ in range(connections)]
    for poster in posters:
        stack.push_async_callback(poster.close)
    return list(posters)


async def load_round(
    server: str,
    url: str,
    body: bytes,
    expect: Expect,
    *,
    connections: int,
    seconds: float,
    max_requests: int,
    client: str = "lean",
    request_timeout: float = 10.0,
) -> LoadRound:
    """One bounded round of load; ``server_cpu`` is left for the caller to fill."""
    result = LoadRound(server)
    budget = [max_requests]
    checked_full = [False]
    async with AsyncExitStack() as stack:
        posters = _posters(client, url, body, connections, stack)
        began = time.perf_counter()
        deadline = began + seconds
        cpu_began = time.process_time()

        async def worker(poster: Poster) -> None:
            while budget[0] > 0 and time.perf_counter() < deadline:
                budget[0] -= 1
                sent = time.perf_counter()
                try:
                    async with asyncio.timeout(request_timeout):
                        status, answer = await poster.post()
                except (HttpError, aiohttp.ClientError, OSError, TimeoutError) as failure:
                    result.errors[_reason(failure)] += 1
                    await poster.close()
                    continue
                took = time.perf_counter() - sent
                full = not checked_full[0] and status == expect.status
                checked_full[0] = checked_full[0] or full
                wrong = problem(status, answer, expect, full=full)
                if wrong is None:
                    result.ok += 1
                    result.body_bytes += len(answer)
                    result.latencies.append(took)
                else:
                    result.errors[wrong] += 1

        await asyncio.gather(*(worker(poster) for poster in posters))
        result.seconds = time.perf_counter() - began
        result.client_cpu = time.process_time() - cpu_began
    return result


def _reason(failure: BaseException) -> str:
    if isinstance(failure, TimeoutError):
        return "timeout"
    if isinstance(failure, HttpError):
        return f"HttpError: {failure}"
    return type(failure).__name__


async def fetch(url: str, body: bytes, timeout: float = 30.0) -> tuple[int, bytes]:
    """One request, for setting up (the server's clusters, its current version)."""
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
        session.post(url, data=body, headers=JSON_HEADERS) as response,
    ):
        return response.status, await response.read()
