"""pilothouse as an MCP sink that sources dial: the ``ResourceSink`` service (reverse mode).

A source (Galley with ``--sinkAddress``, or a pilothouse with ``--mcp-sink-address``)
connects, opens with ``Resources{collection: "$triggerCollection"}``, which this sink NACKs
with UNIMPLEMENTED like any collection it does not know, and then serves the collections
this sink asks for. What arrives is validated and kept in one :class:`MemoryStore`
(``.store``); invalid objects are NACKed with their reasons while the valid ones apply.
The gRPC metadata the source sent (``--sinkMeta``) is kept per stream, for debug output.

One source at a time is the expected setup (Galley's): concurrent sources share the store,
and the one that pushes last wins each collection.

Faults stop at their boundary: an exception handling one message NACKs that message
(:mod:`pilothouse.mcp.sink_stream`); bytes that are not a ``Resources`` end the stream with
``INVALID_ARGUMENT``; any other exception of ours ends it with ``INTERNAL`` and no Python
text, the traceback going to the log. The store keeps what it held.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import grpc

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.config.schema import SchemaSet
from pilothouse.kinds.table import SCHEMAS
from pilothouse.mcp.messages import (
    EMPTY,
    ReceivedResources,
    SinkRequest,
    received_from_proto,
    request_to_proto,
)
from pilothouse.mcp.sink_session import SinkOptions
from pilothouse.mcp.sink_store import SinkStore
from pilothouse.mcp.sink_stream import run_sink_stream
from pilothouse.protocol.request_bytes import Undecodable, request_parser
from pilothouse.sources.memory import MemoryStore

log = logging.getLogger("pilothouse.mcp")

RESOURCE_SINK_SERVICE = "istio.mcp.v1alpha1.ResourceSink"
ESTABLISH = "EstablishResourceStream"


@dataclass(frozen=True, slots=True)
class SourceConnection:
    """A source that dialled in."""

    id: str
    peer: str
    metadata: Mapping[str, str] = field(default_factory=lambda: EMPTY)


INTERNAL_ERROR = "internal error in pilothouse; this stream was closed (details in its log)"


class _UndecodableMessage(Exception):
    pass


async def _received(
    stream: AsyncIterator[mcp_pb2.Resources | Undecodable],
) -> AsyncIterator[ReceivedResources]:
    async for message in stream:
        if isinstance(message, Undecodable):
            raise _UndecodableMessage(message.reason)
        yield received_from_proto(message)


class McpSinkServer:
    """The ``ResourceSink`` servicer; received configs go into ``.store``."""

    def __init__(
        self,
        *,
        schemas: SchemaSet | None = None,
        collections: tuple[str, ...] | None = None,
        incremental: bool = False,
        sink_id: str = "",
        name: str = "mcp-sink",
    ) -> None:
        table = schemas if schemas is not None else SCHEMAS
        wanted = collections if collections is not None else tuple(s.collection for s in table)
        options = SinkOptions(
            collections=wanted,
            incremental=frozenset(wanted) if incremental else frozenset(),
            sink_id=sink_id,
            source=name,
        )
        self.sink = SinkStore(options, table, name)
        self._ids = itertools.count(1)
        self._connections: dict[str, SourceConnection] = {}
        self._closed = asyncio.Event()

    @property
    def store(self) -> MemoryStore:
        return self.sink.store

    @property
    def name(self) -> str:
        return self.sink.store.name

    def has_synced(self) -> bool:
        return self.sink.has_synced()

    def connections(self) -> list[SourceConnection]:
        return list(self._connections.values())

    async def run(self) -> None:
        """Nothing to drive between connections; returns once closed."""
        await self._closed.wait()

    def close(self) -> None:
        self._closed.set()

    def add_to(self, server: grpc.aio.Server) -> None:
        handler = grpc.stream_stream_rpc_method_handler(
            self.serve,
            request_deserializer=request_parser(mcp_pb2.Resources),
            response_serializer=mcp_pb2.RequestResources.SerializeToString,
        )
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(RESOURCE_SINK_SERVICE, {ESTABLISH: handler})]
        )

    async def serve(
        self,
        incoming: AsyncIterator[mcp_pb2.Resources | Undecodable],
        context: grpc.aio.ServicerContext[Any, mcp_pb2.RequestResources],
    ) -> None:
        metadata = {
            str(k): str(v)
            for k, v in (context.invocation_metadata() or ())
            if isinstance(v, str) and not str(k).startswith(":")
        }
        connection = SourceConnection(
            f"mcp-sink-{next(self._ids)}", context.peer(), MappingProxyType(metadata)
        )
        self._connections[connection.id] = connection

        async def send(request: SinkRequest) -> None:
            await context.write(request_to_proto(request))

        try:
            await run_sink_stream(self.sink, self.sink.new_session(), _received(incoming), send)
        except _UndecodableMessage as problem:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(problem))
        except Exception:
            log.exception("MCP sink stream from %s failed", connection.peer)
            await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_ERROR)
        finally:
            self._connections.pop(connection.id, None)
