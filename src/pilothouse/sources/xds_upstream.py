"""The MCP-over-xDS config source (``xds://host:port``): Istio config from an upstream server.

It dials the upstream's ADS (SotW) as istiod does: a node
``sidecar~<ip>~<name>.<ns>~<ns>.svc.cluster.local`` with metadata ``GENERATOR=api``,
then one request for ``core/v1alpha1/MeshConfig`` and one per kind of the schema table
(the ``v1`` spellings), each with an empty nonce and, after a reconnect, the last
version accepted.

The protocol (what to ask on a new stream, ACK and NACK, versions and nonces) is the
SotW client engine's (``xds/protocol/client_sotw``) with every kind a wildcard
subscription; this module reads and applies what arrives. Every response is the **full
state** of its kind and replaces what the source held of that kind in its own
:class:`MemoryStore` (``replace_kind``), which the aggregate store unions with other
sources. Entries that do not decode or validate are skipped, and the response is NACKed
(``INVALID_ARGUMENT``, a message listing ``ns/name: reason``); valid entries are kept,
and so is the last good version of an object that turned invalid. Otherwise the
response is ACKed with its version and nonce.

The cyclic garbage collector is paused while a response is applied (a response may
carry 100,000 objects, none of them garbage).

The stream is redialled with exponential backoff and jitter; meanwhile the store keeps
serving the last state received. The source has synced once every kind (MeshConfig
aside: some servers never answer it) has been answered at least once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import grpc
from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.rpc import code_pb2

from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.backoff import Backoff
from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import Rejection, split_name
from pilothouse.config.model import ConfigKey
from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.client import Delivery
from pilothouse.protocol.client_policy import StaticSubscriptions
from pilothouse.protocol.client_requests import ClientRequest
from pilothouse.protocol.client_sotw import SotwClientEngine
from pilothouse.protocol.client_wire import RequestEncoder
from pilothouse.sources.gc_pause import collector_paused
from pilothouse.sources.memory import MemoryStore
from pilothouse.sources.upstream_resources import (
    MESH_CONFIG_GVK,
    DecodedKind,
    KindDecoder,
    decode_mesh_config,
)

log = logging.getLogger("pilothouse.sources.xds")

ADS_METHOD: Final = (
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
)
MAX_NACK_ENTRIES: Final = 50
"""A NACK message lists at most this many rejected entries (then "… and N more")."""


@dataclass(frozen=True, slots=True)
class UpstreamSettings:
    """Who the source says it is, and how it dials."""

    node_ip: str = "127.0.0.1"
    node_name: str = "pilothouse"
    namespace: str = "istio-system"
    revision: str = ""
    istio_version: str = "65536.65536.65536"
    """What istiod reports when its version is unset."""
    backoff: Backoff = field(default_factory=Backoff)
    max_receive_bytes: int = 256 * 1024 * 1024

    @property
    def node_id(self) -> str:
        ns = self.namespace
        return f"sidecar~{self.node_ip}~{self.node_name}.{ns}~{ns}.svc.cluster.local"

    def node(self) -> Any:
        """The ``envoy.config.core.v3.Node`` sent on the first request of a stream."""
        node = base_pb2.Node(id=self.node_id, user_agent_name="pilothouse")
        metadata: dict[str, str] = {"GENERATOR": "api", "ISTIO_VERSION": self.istio_version}
        if self.revision:
            metadata["ISTIO_REVISION"] = self.revision
        node.metadata.update(metadata)
        return node


@dataclass(frozen=True, slots=True)
class UpstreamStatus:
    """A snapshot of the source for logs and debug endpoints."""

    address: str
    connected: bool
    synced: bool
    failures: int
    accepted_versions: Mapping[str, str]
    rejections: Mapping[str, tuple[Rejection, ...]]
    """Per type, what its latest response had that was rejected (absent when ACKed)."""
    last_error: str


def subscribed_type(schema: Schema) -> str:
    """The GVK the source asks for: the ``v1`` spelling when the kind has one."""
    return next((g for g in schema.gvks if g.split("/")[1] == "v1"), schema.gvks[0])


def nack_message(rejections: tuple[Rejection, ...]) -> str:
    """``ns/name: reason; …`` for a NACK, shortened past :data:`MAX_NACK_ENTRIES`."""
    shown = [str(r) for r in rejections[:MAX_NACK_ENTRIES]]
    if len(rejections) > MAX_NACK_ENTRIES:
        shown.append(f"… and {len(rejections) - MAX_NACK_ENTRIES} more")
    return "; ".join(shown)


class XdsUpstreamSource:
    """Mirrors an MCP-over-xDS server's config into :attr:`store`."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        schemas: SchemaSet | None = None,
        settings: UpstreamSettings | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.settings = settings if settings is not None else UpstreamSettings()
        self.store = MemoryStore(name=f"xds://{host}:{port}")
        self._target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._rng = rng if rng is not None else random.Random()
        loader = Loader(SCHEMAS, source=self.store.name)
        self._decoders = {
            subscribed_type(schema): KindDecoder(schema, self.store.name, loader)
            for schema in (schemas if schemas is not None else SCHEMAS)
        }
        self._engine = SotwClientEngine(
            StaticSubscriptions((MESH_CONFIG_GVK, *self._decoders)), self.settings.node()
        )
        self._encoder = RequestEncoder(capacity=len(self._decoders) + 1)
        self._answered: set[str] = set()
        self._rejections: dict[str, tuple[Rejection, ...]] = {}
        self._mesh_config: config_pb2.MeshConfig | None = None
        self._connected = False
        self._failures = 0
        self._last_error = ""
        self._stop = asyncio.Event()

    # -- what others read -------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.store.name

    @property
    def type_urls(self) -> tuple[str, ...]:
        """What is requested on every stream, in order: MeshConfig first, then each kind."""
        return self._engine.policy.order

    @property
    def mesh_config(self) -> config_pb2.MeshConfig | None:
        """The upstream's MeshConfig, once it sent one (kept, not applied)."""
        return self._mesh_config

    def has_synced(self) -> bool:
        return self.store.has_synced()

    def config_errors(self) -> int:
        """Objects rejected in the latest responses (the source keeps the last good ones)."""
        return sum(len(rejected) for rejected in self._rejections.values())

    def status(self) -> UpstreamStatus:
        return UpstreamStatus(
            address=self.name,
            connected=self._connected,
            synced=self.has_synced(),
            failures=self._failures,
            accepted_versions=MappingProxyType(
                {url: w.version_info for url, w in self._engine.watches.items() if w.acks}
            ),
            rejections=MappingProxyType(dict(self._rejections)),
            last_error=self._last_error,
        )

    # -- lifecycle --------------------------------------------------------------------

    async def run(self) -> None:
        """Follow the upstream until :meth:`close`, redialling after every failure."""
        while not self._stop.is_set():
            received = await self._stream_once()
            if self._stop.is_set():
                return
            self._failures = 0 if received else self._failures + 1
            delay = self.settings.backoff.delay(max(self._failures, 1), self._rng)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)

    def close(self) -> None:
        self._stop.set()

    async def _stream_once(self) -> bool:
        """One stream, until it ends or the source is closed; True if it got a response."""
        received: list[bool] = [False]
        session = asyncio.create_task(self._session(received))
        stopping = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait({session, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (session, stopping):
                task.cancel()
            await asyncio.gather(session, stopping, return_exceptions=True)
            self._connected = False
        if session.cancelled():
            return received[0]
        problem = session.exception()
        if isinstance(problem, grpc.aio.AioRpcError):
            self._note_failure(f"{problem.code().name}: {problem.details()}")
        elif problem is not None:
            log.error("upstream %s failed", self.name, exc_info=problem)
            self._note_failure(f"{type(problem).__name__}: {problem}")
        else:
            self._note_failure("the server ended the stream")
        return received[0]

    def _note_failure(self, reason: str) -> None:
        if reason != self._last_error:
            log.warning("upstream %s: %s; retrying with backoff", self.name, reason)
        self._last_error = reason

    async def _session(self, received: list[bool]) -> None:
        options = [
            ("grpc.max_receive_message_length", self.settings.max_receive_bytes),
            ("grpc.keepalive_time_ms", 30_000),
            ("grpc.keepalive_timeout_ms", 10_000),
        ]
        async with grpc.aio.insecure_channel(self._target, options=options) as channel:
            call = channel.stream_stream(
                ADS_METHOD,
                request_serializer=self._encoder.encode,
                response_deserializer=discovery_pb2.DiscoveryResponse.FromString,
            )()
            for request in self._engine.open_stream():
                await call.write(request)
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    return
                if not received[0]:
                    received[0] = True
                    self._connected = True
                    if self._last_error:
                        log.info("upstream %s: connected", self.name)
                    self._last_error = ""
                for request in self._answer(response):
                    await call.write(request)

    # -- responses --------------------------------------------------------------------

    def on_response(self, response: Any) -> ClientRequest:
        """Apply one ``DiscoveryResponse``; returns the ACK or NACK to send back.

        (Every kind is subscribed when a stream opens, so an answer is all a response
        causes.)
        """
        return self._answer(response)[0]

    def _answer(self, response: Any) -> list[ClientRequest]:
        """Apply one response; the requests to send, its ACK or NACK first.

        Faults stop at the response: the engine takes it before it is applied (its nonce
        and version are then known), and if applying it raises (a bug of ours, or input
        no check foresaw), the traceback is logged and the response is NACKed with
        ``INTERNAL``; what the store held of the type stays, and so does the stream.
        """
        delivery = self._engine.receive(response)
        try:
            return self._apply(delivery, response)
        except Exception:
            type_url = delivery.type_url
            log.exception("upstream %s: applying %s failed", self.name, type_url)
            count = len(response.resources)
            message = (
                f"pilothouse failed to apply {count} resource(s) of {type_url} "
                "(internal error; details in its log); its last good config is kept"
            )
            return self._engine.nack(delivery, message, code_pb2.INTERNAL)

    def _apply(self, delivery: Delivery, response: Any) -> list[ClientRequest]:
        type_url = delivery.type_url
        if type_url == MESH_CONFIG_GVK:
            rejections = self._apply_mesh_config(response)
        elif type_url in self._decoders:
            rejections = self._apply_kind(type_url, response)
            self._answered.add(type_url)
            if not self.store.has_synced() and self._answered >= set(self._decoders):
                self.store.mark_synced()
                log.info("upstream %s synced", self.name)
        else:
            message = f"type {type_url!r} was not requested"
            return self._engine.nack(delivery, message, code_pb2.UNIMPLEMENTED)
        if rejections:
            self._rejections[type_url] = rejections
            message = nack_message(rejections)
            log.warning("upstream %s: rejected %s: %s", self.name, type_url, message)
            return self._engine.nack(delivery, message, code_pb2.INVALID_ARGUMENT)
        self._rejections.pop(type_url, None)
        return self._engine.ack(delivery)

    def _apply_mesh_config(self, response: Any) -> tuple[Rejection, ...]:
        outcome = decode_mesh_config(response.resources)
        if isinstance(outcome, Rejection):
            return (outcome,)
        if outcome is not None:
            self._mesh_config = outcome
        return ()

    def _apply_kind(self, type_url: str, response: Any) -> tuple[Rejection, ...]:
        decoder = self._decoders[type_url]
        began = time.perf_counter()
        with collector_paused():
            decoded = decoder.decode(response.resources)
            stored = time.perf_counter()
            rejections = self._apply_decoded(decoder, decoded)
        log.debug(
            "upstream %s: applied %s: %d resources, decoded and validated in %.1f ms, "
            "stored in %.1f ms",
            self.name,
            type_url,
            len(response.resources),
            (stored - began) * 1000,
            (time.perf_counter() - stored) * 1000,
        )
        return rejections

    def _apply_decoded(self, decoder: KindDecoder, decoded: DecodedKind) -> tuple[Rejection, ...]:
        kind = decoder.schema.kind
        configs = {config.key: config for config in decoded.configs}
        for rejection in decoded.rejections:
            parts = split_name(rejection.name)
            if parts is None:
                continue
            key = ConfigKey(kind, *parts)
            held = self.store.get(key)
            if key not in configs and held is not None:
                configs[key] = held  # the last good version stays
        self.store.replace_kind(kind, configs.values())
        return decoded.rejections
