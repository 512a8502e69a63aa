"""SDS on the agent's Unix socket: ``SecretDiscoveryService/StreamSecrets`` (SotW).

Each stream is a :class:`~pilothouse.agent.secret_stream.SecretStream` for the identity
of its caller (:data:`Identify`: in sidecar mode the agent's one identity). A stream is
answered when Envoy asks and again whenever its identity's certificate or the root
changes (a rotation reaches Envoy without it asking).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError

from pilothouse.agent.secret_stream import SecretStream
from pilothouse.agent.workload_identity import WorkloadIdentity
from pilothouse.security.identity import SpiffeId

log = logging.getLogger("pilothouse.agent.sds")

SERVICE: Final = "envoy.service.secret.v3.SecretDiscoveryService"
Identify = Callable[[grpc.aio.ServicerContext[Any, Any]], SpiffeId | None]
"""Who a stream's caller is; None refuses the stream (PERMISSION_DENIED)."""


class SdsSocket:
    """The SDS servicer (add it to a Unix socket server)."""

    def __init__(self, identity: WorkloadIdentity, identify: Identify) -> None:
        self._identity = identity
        self._identify = identify
        self.streams = 0

    def add_to(self, server: grpc.aio.Server) -> None:
        handler = grpc.stream_stream_rpc_method_handler(
            self.stream_secrets, request_deserializer=_raw, response_serializer=_raw
        )
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(SERVICE, {"StreamSecrets": handler})]
        )

    async def stream_secrets(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        caller = self._identify(context)
        if caller is None:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "no identity for this caller")
            return
        self.streams += 1
        await serve_secrets(
            SecretStream(caller, self._identity.secret), self._identity, requests, context.write
        )


async def serve_secrets(
    stream: SecretStream,
    identity: WorkloadIdentity,
    requests: AsyncIterator[bytes],
    write: Callable[[bytes], Any],
) -> None:
    """Answer ``requests`` and certificate changes on one stream until it ends."""
    due = asyncio.Event()

    def changed(which: SpiffeId | None) -> None:
        if which is None or which == stream.identity:
            due.set()

    async def read() -> None:
        async for body in requests:
            try:
                request = discovery_pb2.DiscoveryRequest.FromString(body)
            except DecodeError:
                log.warning("an SDS request does not decode; ignored")
                continue
            if stream.request(request):
                due.set()

    stop = identity.on_change(changed)
    reader = asyncio.create_task(read())
    try:
        while not reader.done():
            waiting = asyncio.create_task(due.wait())
            await asyncio.wait((waiting, reader), return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            if due.is_set():
                due.clear()
                response = stream.response()
                if response is not None:
                    await write(response)
        reader.result()
    finally:
        stop()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader


def _raw(body: bytes) -> bytes:
    return body
