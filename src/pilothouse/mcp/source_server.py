"""pilothouse as an MCP source that sinks dial: the ``ResourceSource`` service (Galley's role).

Serves the collections of a config store (normally the aggregate store), one snapshot per
collection, published by snapshot group (:mod:`pilothouse.mcp.publisher`). Each stream runs
a :class:`SourceStream`; a request for a collection that is not served ends the stream
with ``INVALID_ARGUMENT``, and so do bytes that are not a ``RequestResources``; an exception
of ours ends it with ``INTERNAL`` and no Python text (the traceback is logged). Streams are
refused with ``UNAVAILABLE`` until the store has synced; the first stream accepted has the
snapshots published (they are made on demand). Given the xDS port's admission control
(a :class:`StreamAdmission`: :class:`~pilothouse.xds.server.admission.Admission` is one,
handed in by whoever wires both), every stream passes it as xDS streams do (a circuit
breaker and a rate limit) and counts in its figures; mcp/ imports nothing of the xDS server.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import grpc

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.mcp.messages import SinkRequest, request_from_proto
from pilothouse.mcp.publisher import SnapshotPublisher
from pilothouse.mcp.source_stream import (
    BadRequest,
    SourceStream,
    StreamInfo,
    UnsupportedCollection,
)
from pilothouse.protocol.request_bytes import Undecodable, request_parser

log = logging.getLogger("pilothouse.mcp")
INTERNAL_ERROR = "internal error in pilothouse; this stream was closed (details in its log)"

RESOURCE_SOURCE_SERVICE = "istio.mcp.v1alpha1.ResourceSource"
ESTABLISH = "EstablishResourceStream"


class StreamAdmission(Protocol):
    """The door every stream on the xDS port passes, as the ResourceSource server uses it."""

    def refuse_not_ready(self) -> None:
        """Count a stream refused because config has not synced yet."""
        ...

    def admit(
        self, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AbstractAsyncContextManager[None]:
        """Hold the stream's place while the block runs; a stream that may not come in is
        ended (``context.abort``) with the refusal's status code and message."""
        ...


NOT_SYNCED = "pilothouse is not ready: config has not synced yet"


@contextlib.asynccontextmanager
async def admitted(
    admission: StreamAdmission | None,
    context: grpc.aio.ServicerContext[Any, Any],
    synced: bool,
) -> AsyncIterator[None]:
    """One servicer stream through the xDS port's door: ended UNAVAILABLE (and counted)
    while config has not synced, else held by ``admission`` (None: no admission
    control) while the block runs."""
    if not synced:
        if admission is not None:
            admission.refuse_not_ready()
        await context.abort(grpc.StatusCode.UNAVAILABLE, NOT_SYNCED)
    if admission is None:
        yield
        return
    async with admission.admit(context):
        yield


def _identity(body: bytes) -> bytes:
    return body


async def requests_of(
    stream: AsyncIterator[mcp_pb2.RequestResources | Undecodable],
) -> AsyncIterator[SinkRequest]:
    async for message in stream:
        if isinstance(message, Undecodable):
            raise BadRequest(message.reason)
        yield request_from_proto(message)


class McpSourceServer:
    """The ``ResourceSource`` servicer over a :class:`SnapshotPublisher`.

    ``run()`` runs the publisher when this server owns it (``owns_publisher``); a publisher
    shared with a dial-out source is run by whoever created it.
    """

    def __init__(
        self,
        publisher: SnapshotPublisher,
        *,
        owns_publisher: bool = True,
        admission: StreamAdmission | None = None,
    ) -> None:
        self.publisher = publisher
        self._owns_publisher = owns_publisher
        self._admission = admission
        self._ids = itertools.count(1)
        self._streams: dict[str, SourceStream] = {}

    def has_synced(self) -> bool:
        return self.publisher.has_synced()

    async def run(self) -> None:
        if self._owns_publisher:
            await self.publisher.run()

    def close(self) -> None:
        if self._owns_publisher:
            self.publisher.close()

    def streams(self) -> list[StreamInfo]:
        return [stream.info() for stream in self._streams.values()]

    def add_to(self, server: grpc.aio.Server) -> None:
        handler = grpc.stream_stream_rpc_method_handler(
            self.serve,
            request_deserializer=request_parser(mcp_pb2.RequestResources),
            response_serializer=_identity,
        )
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(RESOURCE_SOURCE_SERVICE, {ESTABLISH: handler})]
        )

    async def serve(
        self,
        requests: AsyncIterator[mcp_pb2.RequestResources | Undecodable],
        context: grpc.aio.ServicerContext[Any, bytes],
    ) -> None:
        async with admitted(self._admission, context, self.publisher.demand()):
            await self._serve(requests, context)

    async def _serve(
        self,
        requests: AsyncIterator[mcp_pb2.RequestResources | Undecodable],
        context: grpc.aio.ServicerContext[Any, bytes],
    ) -> None:
        publisher = self.publisher
        stream = SourceStream(
            f"mcp-source-{next(self._ids)}",
            publisher.cache,
            publisher.table.names,
            incremental=publisher.options.incremental,
            peer=context.peer(),
        )
        self._streams[stream.id] = stream
        try:
            await stream.run(requests_of(requests), context.write)
        except UnsupportedCollection as problem:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(problem))
        except Exception:
            log.exception("MCP source stream %s failed", stream.id)
            await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_ERROR)
        finally:
            self._streams.pop(stream.id, None)
