"""The ``mcp://host:port`` config source: pilothouse as a sink dialling a ``ResourceSource``.

Subscribes to every collection of the schema table (or those given) and keeps what
arrives in its own :class:`MemoryStore` (``.store``), validated; invalid objects are
NACKed and the rest applied. When the stream breaks the store keeps its last good state
and the client dials again after a fixed delay (1 s, as Istio's MCP clients did); the new
stream announces, for incremental collections, the versions already held.
``has_synced()`` turns true once every collection got a first response.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import grpc

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.config.schema import SchemaSet
from pilothouse.kinds.table import SCHEMAS
from pilothouse.mcp.messages import EMPTY, ReceivedResources, SinkRequest, received_from_proto
from pilothouse.mcp.messages import request_to_proto as _to_proto
from pilothouse.mcp.sink_session import SinkOptions
from pilothouse.mcp.sink_store import SinkStore
from pilothouse.mcp.sink_stream import run_sink_stream
from pilothouse.sources.memory import MemoryStore

log = logging.getLogger("pilothouse.mcp")

RESOURCE_SOURCE_METHOD = "/istio.mcp.v1alpha1.ResourceSource/EstablishResourceStream"


def parse_mcp_url(url: str) -> str:
    """``mcp://host:port`` → ``host:port`` (raises ValueError on anything else)."""
    parts = urlsplit(url)
    if parts.scheme != "mcp" or not parts.hostname or parts.port is None:
        raise ValueError(f"expected mcp://host:port, got {url!r}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{parts.port}"


class McpSinkClient:
    """A config source fed by an upstream MCP ``ResourceSource``."""

    def __init__(
        self,
        address: str,
        *,
        schemas: SchemaSet | None = None,
        collections: tuple[str, ...] | None = None,
        incremental: bool = False,
        sink_id: str = "",
        annotations: Mapping[str, str] = EMPTY,
        reconnect_delay: float = 1.0,
        name: str | None = None,
    ) -> None:
        self.address = address
        table = schemas if schemas is not None else SCHEMAS
        wanted = collections if collections is not None else tuple(s.collection for s in table)
        label = name if name is not None else f"mcp://{address}"
        options = SinkOptions(
            collections=wanted,
            incremental=frozenset(wanted) if incremental else frozenset(),
            sink_id=sink_id,
            annotations=annotations,
            source=label,
        )
        self.sink = SinkStore(options, table, label)
        self.reconnect_delay = reconnect_delay
        self.connected = False
        self._closed = asyncio.Event()
        self._call: (
            grpc.aio.StreamStreamCall[mcp_pb2.RequestResources, mcp_pb2.Resources] | None
        ) = None

    @classmethod
    def from_url(cls, url: str, **options: Any) -> McpSinkClient:
        """A client for ``mcp://host:port``; ``options`` as for the constructor."""
        return cls(parse_mcp_url(url), name=url, **options)

    @property
    def store(self) -> MemoryStore:
        return self.sink.store

    @property
    def name(self) -> str:
        return self.sink.store.name

    def has_synced(self) -> bool:
        return self.sink.has_synced()

    def close(self) -> None:
        self._closed.set()
        if self._call is not None:
            self._call.cancel()

    async def run(self) -> None:
        """Dial, follow the stream, dial again after each break, until :meth:`close`."""
        while not self._closed.is_set():
            try:
                await self._stream_once()
            except asyncio.CancelledError:
                if self._closed.is_set():
                    return
                raise
            except grpc.aio.AioRpcError as error:
                log.warning(
                    "MCP stream to %s ended: %s %s",
                    self.address,
                    error.code().name,
                    error.details(),
                )
            except Exception:
                log.exception("MCP stream to %s failed", self.address)
            self.connected = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), self.reconnect_delay)

    async def _stream_once(self) -> None:
        async with grpc.aio.insecure_channel(
            self.address, options=[("grpc.enable_retries", 0)]
        ) as channel:
            method = channel.stream_stream(
                RESOURCE_SOURCE_METHOD,
                request_serializer=mcp_pb2.RequestResources.SerializeToString,
                response_deserializer=mcp_pb2.Resources.FromString,
            )
            call: Any = method()
            self._call = call
            if self._closed.is_set():
                call.cancel()
                return

            async def send(request: SinkRequest) -> None:
                await call.write(_to_proto(request))

            async def incoming() -> AsyncIterator[ReceivedResources]:
                while True:
                    message = await call.read()
                    if message is grpc.aio.EOF:
                        return
                    self.connected = True
                    yield received_from_proto(message)

            try:
                await run_sink_stream(self.sink, self.sink.new_session(), incoming(), send)
                code = await call.code()
                if code is not grpc.StatusCode.OK:
                    log.warning(
                        "MCP stream to %s ended: %s %s",
                        self.address,
                        code.name,
                        await call.details(),
                    )
            finally:
                self._call = None
                call.cancel()
