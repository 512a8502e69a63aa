"""The dial-out MCP source (``--mcp-sink-address``): pilothouse dials a ``ResourceSink``.

Galley's ``--sinkAddress`` mode. A gRPC client must send first, so the stream opens with
``Resources{collection: "$triggerCollection"}``; the sink NACKs it with UNIMPLEMENTED, and
the source session ignores exactly that NACK. From then on the sink subscribes and this
side serves its collections from the shared snapshots, as the ``ResourceSource`` server
does. ``--sink-meta k=v`` pairs go out as gRPC metadata on the call. A broken stream is
dialled again after a fixed delay (1 s, as Galley did).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

import grpc

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.mcp.messages import SinkRequest, encode_push, request_from_proto, trigger_push
from pilothouse.mcp.publisher import SnapshotPublisher
from pilothouse.mcp.source_stream import SourceStream, StreamInfo, UnsupportedCollection

log = logging.getLogger("pilothouse.mcp")

RESOURCE_SINK_METHOD = "/istio.mcp.v1alpha1.ResourceSink/EstablishResourceStream"


def _identity(body: bytes) -> bytes:
    return body


def parse_sink_meta(pairs: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``["k=v", "a=b,c=d"]`` → metadata pairs; keys are lowercased as gRPC requires."""
    out: list[tuple[str, str]] = []
    for text in pairs:
        for item in text.split(","):
            if not item.strip():
                continue
            key, equals, value = item.partition("=")
            if not equals or not key.strip():
                raise ValueError(f"sink metadata must be key=value, got {item!r}")
            out.append((key.strip().lower(), value.strip()))
    return tuple(out)


class McpDialOutSource:
    """Serves the publisher's collections to the ``ResourceSink`` at ``address``."""

    def __init__(
        self,
        address: str,
        publisher: SnapshotPublisher,
        *,
        metadata: Iterable[tuple[str, str]] = (),
        reconnect_delay: float = 1.0,
        owns_publisher: bool = True,
    ) -> None:
        self.address = address
        self.publisher = publisher
        self.metadata = tuple(metadata)
        self.reconnect_delay = reconnect_delay
        self._owns_publisher = owns_publisher
        self._closed = asyncio.Event()
        self._attempts = 0
        self._stream: SourceStream | None = None
        self._call: grpc.aio.StreamStreamCall[bytes, mcp_pb2.RequestResources] | None = None
        self.last_stream: StreamInfo | None = None

    def has_synced(self) -> bool:
        return self.publisher.has_synced()

    def stream(self) -> StreamInfo | None:
        """The live stream, or the last one when none is up."""
        return self._stream.info() if self._stream is not None else self.last_stream

    def close(self) -> None:
        self._closed.set()
        if self._call is not None:
            self._call.cancel()
        if self._owns_publisher:
            self.publisher.close()

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            if self._owns_publisher:
                tasks.create_task(self.publisher.run())
            tasks.create_task(self._dial_loop())

    async def _dial_loop(self) -> None:
        while not self._closed.is_set():
            if self.publisher.has_synced():
                try:
                    await self._stream_once()
                except asyncio.CancelledError:
                    if self._closed.is_set():
                        return
                    raise
                except grpc.aio.AioRpcError as error:
                    log.warning(
                        "MCP sink %s: stream ended: %s %s",
                        self.address,
                        error.code().name,
                        error.details(),
                    )
                except UnsupportedCollection as problem:
                    log.error("MCP sink %s asked for %s", self.address, problem)
                except Exception:
                    log.exception("MCP sink %s: stream failed", self.address)
                delay = self.reconnect_delay
            else:
                delay = self.publisher.options.sync_poll
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), delay)

    async def _stream_once(self) -> None:
        async with grpc.aio.insecure_channel(
            self.address, options=[("grpc.enable_retries", 0)]
        ) as channel:
            method = channel.stream_stream(
                RESOURCE_SINK_METHOD,
                request_serializer=_identity,
                response_deserializer=mcp_pb2.RequestResources.FromString,
            )
            call: Any = method(metadata=self.metadata or None)
            self._call = call
            if self._closed.is_set():
                call.cancel()
                return
            self._attempts += 1
            publisher = self.publisher
            publisher.demand()
            stream = SourceStream(
                f"mcp-dialout-{self._attempts}",
                publisher.cache,
                publisher.table.names,
                incremental=publisher.options.incremental,
                peer=self.address,
            )
            self._stream = stream

            async def requests() -> AsyncIterator[SinkRequest]:
                while True:
                    message = await call.read()
                    if message is grpc.aio.EOF:
                        return
                    yield request_from_proto(message)

            try:
                await stream.run(requests(), call.write, opening=[encode_push(trigger_push())])
            finally:
                self.last_stream = stream.info()
                self._stream = None
                self._call = None
                call.cancel()
