"""Envoy's ADS stream, proxied by the agent to pilothouse over its own authenticated
connection (SotW ``StreamAggregatedResources`` and delta ``DeltaAggregatedResources``
on the agent's Unix socket; each goes up as it came, :mod:`.relay_flavour`).

Each Envoy stream gets a :class:`ProxiedStream`, which opens an ADS call on the agent's
:class:`~pilothouse.agent.upstream.Upstream` and relays both ways: requests from Envoy
go up, responses come down as bytes (only their type and nonce are read). SDS is the
agent's own: Envoy's SDS requests are answered from the agent's certificates
(:class:`~pilothouse.agent.secret_stream.SecretStream`) and never reach pilothouse.

Unlike istio-agent (which ends Envoy's stream when istiod's ends), a broken upstream is
hidden from Envoy: the relay dials the next replica and sends again what Envoy
subscribes to now, one request per type in push order with the version and nonce
cleared (a new stream's first request, which the server answers in full) and the node
on the first. A later request of Envoy's whose nonce the old server sent carries
instead the new server's last nonce for that type (or none), so the new server does
not drop it as stale. Envoy keeps its stream and its config throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError

from pilothouse.agent.relay_flavour import DeltaFlavour, Flavour, SotwFlavour
from pilothouse.agent.response_fields import response_fields
from pilothouse.agent.upstream import Upstream
from pilothouse.agent.workload_identity import WorkloadIdentity
from pilothouse.protocol.type_urls import SDS
from pilothouse.protowire import WireError
from pilothouse.security.identity import SpiffeId

log = logging.getLogger("pilothouse.agent.xds")

SERVICE: Final = "envoy.service.discovery.v3.AggregatedDiscoveryService"
REMEMBERED_NONCES: Final = 4096
"""Nonces of the current upstream call kept to tell them from an old call's."""


class XdsProxy:
    """The ADS servicer on the agent's xDS socket."""

    def __init__(self, upstream: Upstream, identity: WorkloadIdentity) -> None:
        self._upstream = upstream
        self._identity = identity
        self.first_response = asyncio.Event()
        """Set once a response from pilothouse reached Envoy (readiness)."""
        self.responses = 0
        """Responses from pilothouse relayed to Envoy so far."""
        self.streams: list[ProxiedStream] = []

    def add_to(self, server: grpc.aio.Server) -> None:
        sotw = grpc.stream_stream_rpc_method_handler(
            self.stream, request_deserializer=_raw, response_serializer=_raw
        )
        delta = grpc.stream_stream_rpc_method_handler(
            self.delta_stream, request_deserializer=_raw, response_serializer=_raw
        )
        methods = {"StreamAggregatedResources": sotw, "DeltaAggregatedResources": delta}
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(SERVICE, methods)])

    def _responded(self) -> None:
        self.responses += 1
        self.first_response.set()

    async def stream(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        await self._relay(SotwFlavour(), requests, context)

    async def delta_stream(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        await self._relay(DeltaFlavour(), requests, context)

    async def _relay(
        self,
        flavour: Flavour,
        requests: AsyncIterator[bytes],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> None:
        relay = ProxiedStream(self._upstream, self._identity, self._identity.primary, flavour)
        relay.on_response = self._responded
        self.streams.append(relay)
        try:
            await relay.run(requests, context.write)
        finally:
            self.streams.remove(relay)


class ProxiedStream:
    """One Envoy ADS stream and the upstream calls that carry it."""

    def __init__(
        self,
        upstream: Upstream,
        identity: WorkloadIdentity,
        caller: SpiffeId,
        flavour: Flavour | None = None,
    ) -> None:
        self._upstream = upstream
        self._identity = identity
        self.flavour: Flavour = flavour if flavour is not None else SotwFlavour()
        """The messages, and what Envoy subscribes to now, by type."""
        self.secrets = self.flavour.secrets(caller, identity.secret)
        self.node: Any = None
        self._nonces: set[str] = set()
        """Nonces the current upstream call sent."""
        self._latest: dict[str, str] = {}
        self._queue: asyncio.Queue[bytes] | None = None
        self._node_sent = False
        self._write_lock = asyncio.Lock()
        self._write: Callable[[bytes], Any] = _discard
        self._sds_due = asyncio.Event()
        self.on_response: Callable[[], None] = lambda: None
        self.upstream_calls = 0

    async def run(self, requests: AsyncIterator[bytes], write: Callable[[bytes], Any]) -> None:
        self._write = write
        stop = self._identity.on_change(self._secret_changed)
        try:
            async with asyncio.TaskGroup() as tasks:
                reader = tasks.create_task(self._read_envoy(requests))
                relay = tasks.create_task(self._relay())
                secrets = tasks.create_task(self._send_secrets())
                await reader
                relay.cancel()
                secrets.cancel()
        finally:
            stop()

    # -- Envoy → agent ----------------------------------------------------------------

    async def _read_envoy(self, requests: AsyncIterator[bytes]) -> None:
        async for body in requests:
            try:
                request = self.flavour.parse(body)
            except DecodeError:
                log.warning("a request from Envoy does not decode; ignored")
                continue
            if self.node is None and request.HasField("node"):
                self.node = request.node
            if request.type_url == SDS:
                if self.secrets.request(request):
                    self._sds_due.set()
                continue
            self.flavour.record(request)
            queue = self._queue
            if queue is None:
                continue  # resent from the subscriptions once connected
            changed = False
            if request.response_nonce and request.response_nonce not in self._nonces:
                request.response_nonce = self._latest.get(request.type_url, "")
                changed = True
            if not self._node_sent and self.node is not None and not request.HasField("node"):
                request.node.CopyFrom(self.node)
                changed = True
            self._node_sent = True
            queue.put_nowait(request.SerializeToString() if changed else body)

    def resend(self) -> list[bytes]:
        """What a new upstream call is sent first: every subscription, version and nonce
        cleared, the node on the first (push order: CDS, EDS, LDS, RDS, others)."""
        return self.flavour.resend(self.node)

    # -- agent ↔ pilothouse -----------------------------------------------------------

    async def _relay(self) -> None:
        while True:
            channel = await self._upstream.channel()
            try:
                reason = await self._one_call(channel)
            except (grpc.aio.UsageError, asyncio.InvalidStateError, OSError) as problem:
                reason = f"{type(problem).__name__}: {problem}"  # never Envoy's stream's end
            await self._upstream.failed(channel, reason)

    async def _one_call(self, channel: grpc.aio.Channel) -> str:
        """Carry the stream over one upstream call; why it ended."""
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._nonces, self._latest = set(), {}
        first = self.resend()
        self._node_sent = bool(first)
        for body in first:
            queue.put_nowait(body)
        self._queue = queue
        self.upstream_calls += 1
        call = channel.stream_stream(
            self.flavour.method, request_serializer=_raw, response_deserializer=_raw
        )()
        sender = asyncio.create_task(self._send_up(call, queue))
        try:
            while True:
                answer: Any = await call.read()
                if answer is grpc.aio.EOF:
                    return "the server ended the stream"
                await self._response(answer)
        except grpc.aio.AioRpcError as error:
            return f"{error.code().name}: {error.details()}"
        except grpc.aio.UsageError as error:  # the channel was closed under the call
            return str(error)
        finally:
            self._queue = None
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender  # its failure shows on the read side, which says why
            call.cancel()

    async def _send_up(self, call: Any, queue: asyncio.Queue[bytes]) -> None:
        while True:
            await call.write(await queue.get())

    async def _response(self, body: bytes) -> None:
        try:
            type_url, nonce = response_fields(body)
        except WireError:
            log.warning("a response from pilothouse does not decode; dropped")
            return
        self._upstream.succeeded()
        if type_url == SDS:
            return  # secrets are the agent's; never from the server
        if len(self._nonces) >= REMEMBERED_NONCES:  # only the latest ones still matter
            self._nonces = set(self._latest.values())
        self._nonces.add(nonce)
        self._latest[type_url] = nonce
        await self._down(body)
        self.on_response()

    # -- agent → Envoy ----------------------------------------------------------------

    async def _down(self, body: bytes) -> None:
        async with self._write_lock:
            await self._write(body)

    def _secret_changed(self, which: SpiffeId | None) -> None:
        if which is None or which == self.secrets.identity:
            self._sds_due.set()

    async def _send_secrets(self) -> None:
        while True:
            await self._sds_due.wait()
            self._sds_due.clear()
            response = self.secrets.response()
            if response is not None:
                await self._down(response)


async def _discard(body: bytes) -> None:
    return None


def _raw(body: bytes) -> bytes:
    return body
