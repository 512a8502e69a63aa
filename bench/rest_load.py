"""The REST discovery benchmark's client: C keep-alive connections posting one
DiscoveryRequest, every answer checked, and the server's CPU read from ``/proc``; and what
is served (N ServiceEntries with one HTTP port each) and asked for (a DiscoveryRequest
shaped like Envoy 1.40's, from a sidecar pilothouse can parse, optionally with Envoy's
long ``node.extensions`` list).

aiohttp's client spends about as much CPU on each 70 KB answer as the server under test
spends producing it, so on 2 cores it would cap the throughput being measured.
:class:`KeepAlive` does the least a correct client must: it sends one pre-built POST,
reads the head, then exactly ``Content-Length`` body bytes (none for 304), and reopens
the connection when the server closes it; anything it cannot frame (chunked answers)
raises :class:`HttpError`, counted as an error. ``client="aiohttp"`` cross-checks it.

An answer is right when it is 200 with exactly the expected number of clusters (counted
by their ``@type``: microseconds), or 304 with no body in a "not modified" round; the
first answer of a round is also parsed in full and its cluster names compared. Anything
else is counted by reason and reported, never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Collection
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol
from urllib.parse import urlsplit

import aiohttp

CLUSTER_TYPE: Final = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
_COMPACT_MARK: Final = b'"@type":"' + CLUSTER_TYPE.encode() + b'"'
_SPACED_MARK: Final = re.compile(rb'"@type"\s*:\s*"' + re.escape(CLUSTER_TYPE.encode()) + rb'"')
JSON_HEADERS: Final = {"content-type": "application/json"}
TICKS: Final = os.sysconf("SC_CLK_TCK")
NODE_ID: Final = "sidecar~10.0.0.1~client-1.shop~shop.svc.cluster.local"
NAMESPACES: Final = 10
OUTBOUND_PREFIX: Final = "outbound|8080||"
SERVICE_ENTRY: Final = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: svc-{i}, namespace: ns-{ns}}}
spec:
  hosts: [{host}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: 8080, name: http, protocol: HTTP}}]
  endpoints:
  - {{address: {first}, labels: {{version: v1}}}}
  - {{address: {second}, labels: {{version: v2}}}}
"""


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
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HttpError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    length: int | None = None
    closes = parts[0] == "HTTP/1.0"
    for line in lines[1:]:
        name, _, raw = line.partition(":")
        key, value = name.strip().lower(), raw.strip()
        if key == "content-length":
            if not value.isdigit():
                raise HttpError(f"bad content-length {value!r}")
            length = int(value)
        elif key == "transfer-encoding" and value.lower() != "identity":
            raise HttpError(f"transfer-encoding {value} is not supported")
        elif key == "connection":
            closes = value.lower() == "close"
    return int(parts[1]), length, closes


class KeepAlive:
    """One connection to ``host:port`` posting the same pre-built request again and again."""

    def __init__(self, host: str, port: int, request: bytes) -> None:
        self._address = (host, port)
        self._request = request
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self) -> tuple[int, bytes]:
        """Send the request, return (status, body)."""
        if self._streams is None:
            self._streams = await asyncio.open_connection(*self._address, limit=64 * 1024)
        reader, writer = self._streams
        try:
            writer.write(self._request)
            head = await reader.readuntil(b"\r\n\r\n")
            status, length, closes = parse_head(head[:-4])
            if status in (204, 304):
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
        streams, self._streams = self._streams, None
        if streams is not None:
            streams[1].close()
            with contextlib.suppress(OSError):
                await streams[1].wait_closed()


class AiohttpPoster:
    """The same through an aiohttp session (to cross-check the lean client)."""

    def __init__(self, session: aiohttp.ClientSession, url: str, body: bytes) -> None:
        self._session, self._url, self._body = session, url, body

    async def post(self) -> tuple[int, bytes]:
        async with self._session.post(self._url, data=self._body, headers=JSON_HEADERS) as answer:
            return answer.status, await answer.read()

    async def close(self) -> None:
        return None


class Poster(Protocol):
    async def post(self) -> tuple[int, bytes]: ...

    async def close(self) -> None: ...


def count_clusters(body: bytes) -> int:
    """Resources whose ``@type`` is Cluster (nested messages carry other ``@type``s and the
    ``type_url`` is not one); compact JSON, what both servers send, by ``bytes.count``."""
    found = body.count(_COMPACT_MARK)
    return found if found else len(_SPACED_MARK.findall(body))


@dataclass(frozen=True, slots=True)
class Expect:
    """What every answer of a round must be (``names``: checked on the first one only)."""

    status: int
    clusters: int = 0
    names: Collection[str] = ()


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
            names = sorted(str(r.get("name")) for r in json.loads(body)["resources"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return "not a DiscoveryResponse"
        if names != sorted(expect.names):
            return "other cluster names"
    return None


@dataclass
class LoadRound:
    """What one round against one server saw (latencies: seconds per good answer)."""

    server: str
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    body_bytes: int = 0
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0

    @property
    def sent(self) -> int:
        return self.ok + sum(self.errors.values())


def _posters(
    client: str, url: str, body: bytes, connections: int, stack: AsyncExitStack
) -> list[Poster]:
    if client == "aiohttp":
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections))
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
    """Each connection posts ``body`` back to back until ``seconds`` pass or ``max_requests``
    are sent; ``server_cpu`` is left for the caller to fill."""
    result = LoadRound(server)
    budget = [max_requests]
    checked_full = [False]
    async with AsyncExitStack() as stack:
        posters = _posters(client, url, body, connections, stack)
        began, cpu_began = time.perf_counter(), time.process_time()
        deadline = began + seconds

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


class StatLine(NamedTuple):
    pid: int
    pgrp: int
    ticks: int
    """utime + stime + cutime + cstime, in clock ticks."""


def parse_stat(text: str) -> StatLine:
    """One ``/proc/<pid>/stat`` line; the command name may hold spaces and parentheses."""
    head, _, rest = text.rpartition(")")
    fields = rest.split()  # state ppid pgrp … (11) utime stime cutime cstime
    return StatLine(int(head.split("(", 1)[0]), int(fields[2]), sum(map(int, fields[11:15])))


def group_cpu_seconds(pgrp: int, proc: Path = Path("/proc")) -> float:
    """CPU seconds used so far by every live process of group ``pgrp`` (sovereign's gunicorn
    master and workers), with what their reaped children left in cutime/cstime."""
    ticks = 0
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                line = parse_stat((entry / "stat").read_text(encoding="utf-8", errors="replace"))
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile, or not readable
            ticks += line.ticks if line.pgrp == pgrp else 0
    return ticks / TICKS


# -- what is served and asked for -------------------------------------------------------


def _host(i: int) -> str:
    return f"svc-{i}.ns-{i % NAMESPACES}.example.internal"


def outbound_cluster(i: int) -> str:
    """The name of the outbound cluster ServiceEntry ``i`` gives a sidecar."""
    return f"{OUTBOUND_PREFIX}{_host(i)}"


def _address(n: int) -> str:
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def write_services(directory: Path, count: int) -> Path:
    """``count`` ServiceEntries in one YAML file under ``directory``; returns the file."""
    directory.mkdir(parents=True, exist_ok=True)
    documents = (
        SERVICE_ENTRY.format(i=i, ns=i % NAMESPACES, host=_host(i),
                             first=_address(2 * i + 1), second=_address(2 * i + 2))
        for i in range(count)
    )  # fmt: skip
    path = directory / "services.yaml"
    path.write_text("---\n".join(documents), encoding="utf-8")
    return path


def discovery_request(version_info: str = "", extensions: int = 0) -> dict[str, Any]:
    """The DiscoveryRequest a sidecar's REST CDS subscription posts (proto field names)."""
    node: dict[str, Any] = {
        "id": NODE_ID,
        "cluster": "client.shop",  # sovereign requires it
        "metadata": {"NAMESPACE": "shop", "LABELS": {"app": "client", "version": "v1"},
                     "ISTIO_VERSION": "1.24.0"},
        "locality": {"region": "region-a", "zone": "zone-1"},
        "user_agent_name": "envoy",
        "user_agent_build_version": {"version": {"major_number": 1, "minor_number": 40}},
    }  # fmt: skip
    if extensions:
        node["extensions"] = [
            {"name": f"envoy.filters.http.extension_number_{i:04d}",
             "category": "envoy.filters.http",
             "type_urls": [f"envoy.extensions.filters.http.number_{i}.v3.Config"]}
            for i in range(extensions)
        ]  # fmt: skip
    request: dict[str, Any] = {"node": node, "type_url": CLUSTER_TYPE}
    if version_info:
        request["version_info"] = version_info
    return request


def request_body(version_info: str = "", extensions: int = 0) -> bytes:
    return json.dumps(discovery_request(version_info, extensions), separators=(",", ":")).encode()
