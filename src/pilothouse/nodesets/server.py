"""The node-set service on the xDS port: delta MCP-over-xDS, one node's set per stream.

gRPC service ``pilothouse.nodeset.v1.NodeSetDiscoveryService``, method
``DeltaNodeSets``: Envoy's ``DeltaDiscoveryRequest`` in, ``DeltaDiscoveryResponse`` out,
resources wrapped as the ``api`` generator wraps them (``istio.mcp.v1alpha1.Resource``
named ``ns/name``; versions are content hashes). The first request names the node in
its node metadata, ``INSTANCE_IPS`` (comma-separated addresses); a stream without one,
or asking for a type that is not a kind of the node set, ends with
``INVALID_ARGUMENT``. Streams are refused with ``UNAVAILABLE`` until the store (and
the Kubernetes informers, when the server reads a cluster) has synced, and pass the xDS
port's admission as other streams do. On the TLS port (:meth:`NodeSetServer.add_to`
with the port's guard) a stream is authenticated first and may have only the set of a
node its caller runs on (:mod:`~pilothouse.nodesets.node_access`): ``UNAUTHENTICATED``
or ``PERMISSION_DENIED`` otherwise.

:class:`NodeSetServer` follows the store's events into its
:class:`~pilothouse.nodesets.membership.NodeSetIndex`; each event wakes only the
streams of the nodes it touches, and each woken stream sends only its differences
(:mod:`~pilothouse.nodesets.session`). One encoding per object revision is shared by
every stream, and one computed set by every stream of the same node addresses (until
the next change that touches a node).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.config.model import Config, ConfigKey
from pilothouse.mcp.source_server import StreamAdmission, admitted
from pilothouse.nodesets.kubernetes import KubeNodeObjects
from pilothouse.nodesets.membership import NODE_SET_KINDS, NodeSetIndex
from pilothouse.nodesets.node_access import CallerGuard, NodeSetDenied, node_denial
from pilothouse.nodesets.service import DELTA_NODE_SETS, NODE_ADDRESSES_KEY, NODE_SET_SERVICE
from pilothouse.nodesets.session import NodeSetSession, UnknownType
from pilothouse.protocol.request_bytes import Undecodable, request_parser
from pilothouse.push.cache import Resource
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.security.authn import Unauthenticated
from pilothouse.security.identity import Caller
from pilothouse.sources.events import ConfigEvent, ConfigStore
from pilothouse.xds.generators.api import encode_api_resource, wall_clock_now
from pilothouse.xds.protocol.wire import delta_response

log = logging.getLogger("pilothouse.nodesets")


class BadNodeSetRequest(ValueError):
    """A request the node-set service cannot serve; the message says why."""


def node_addresses(request: Any) -> frozenset[str]:
    """The addresses the first request's node metadata names; BadNodeSetRequest if none."""
    if not request.HasField("node"):
        raise BadNodeSetRequest("the first request must carry the node (its metadata names it)")
    fields = request.node.metadata.fields
    value = fields.get(NODE_ADDRESSES_KEY)
    raw = value.string_value if value is not None else ""
    found = frozenset(part.strip() for part in raw.split(",") if part.strip())
    if not found:
        raise BadNodeSetRequest(
            f"node {request.node.id!r}: metadata {NODE_ADDRESSES_KEY} must name the node's "
            "addresses (comma-separated)"
        )
    return found


def _identity(body: bytes) -> bytes:
    return body


@dataclass(slots=True)
class NodeSetFigures:
    """What the service sent, for its tests and the benchmark."""

    responses: int = 0
    bytes: int = 0
    wakes: int = 0


class NodeSetServer:
    """Serves each node agent its node's set; ``run()`` follows the store."""

    def __init__(
        self,
        store: ConfigStore,
        *,
        root_namespace: str = "istio-system",
        admission: StreamAdmission | None = None,
        clock: Callable[[], datetime.datetime] = wall_clock_now,
        kube: KubeFeeds | None = None,
    ) -> None:
        """``kube``: the registry's informers, when the server reads a Kubernetes
        cluster (their Pods and Services join the sets; subscribed here, so build the
        server before they list)."""
        self._store = store
        self._admission = admission
        self._clock = clock
        self.index = NodeSetIndex(root_namespace)
        self.figures = NodeSetFigures()
        self._encoded: dict[ConfigKey, tuple[Config, Resource]] = {}
        self._first_seen: dict[ConfigKey, datetime.datetime] = {}
        self._streams: dict[str, set[NodeSetStream]] = {}
        self._sets: dict[frozenset[str], dict[str, dict[str, Resource]]] = {}
        """Encoded sets by node addresses, shared by the streams of equal addresses until
        the next change that touches a node (then all are dropped)."""
        self._ids = itertools.count(1)
        self._following = False
        self._unsubscribe: Callable[[], None] | None = None
        self._stop = asyncio.Event()
        self._kube = KubeNodeObjects(kube, self._on_event) if kube is not None else None

    def has_synced(self) -> bool:
        kube_synced = self._kube is None or self._kube.has_synced()
        return self._following and self._store.has_synced() and kube_synced

    def follow(self) -> None:
        """Load the store and follow its events (``run`` does this first: while the
        store is still loading, its events keep the index up to date; streams wait for
        the store's sync all the same)."""
        if self._following:
            return
        self._unsubscribe = self._store.subscribe(self._on_event)
        for kind in NODE_SET_KINDS:
            self.index.load(self._store.configs(kind))
        self._sets.clear()
        self._following = True

    async def run(self) -> None:
        if not self._stop.is_set():
            self.follow()
        await self._stop.wait()

    def close(self) -> None:
        self._stop.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._kube is not None:
            self._kube.close()

    def add_to(self, server: grpc.aio.Server, guard: CallerGuard | None = None) -> None:
        """Serve on ``server``; with ``guard`` (the TLS port's), authenticated callers
        only, each for its own node's set."""

        async def serve(
            requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, bytes]
        ) -> None:
            await self.serve(requests, context, guard)

        handler = grpc.stream_stream_rpc_method_handler(
            serve,
            request_deserializer=request_parser(discovery_pb2.DeltaDiscoveryRequest),
            response_serializer=_identity,
        )
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(NODE_SET_SERVICE, {DELTA_NODE_SETS: handler})]
        )

    def streams_at(self, address: str) -> int:
        """How many streams serve the node at ``address``."""
        return len(self._streams.get(address, ()))

    def _on_event(self, event: ConfigEvent) -> None:
        touched = self.index.apply(event)
        if touched:
            self._sets.clear()
        if event.new is None:
            self._encoded.pop(event.key, None)
            self._first_seen.pop(event.key, None)
        for address in touched:
            for stream in self._streams.get(address, ()):
                stream.wake.set()
                self.figures.wakes += 1

    def resource(self, config: Config) -> Resource:
        """``config``'s MCP resource, encoded once per revision for every stream."""
        held = self._encoded.get(config.key)
        if held is not None and held[0] is config:
            return held[1]
        first = config.creation_time or self._first_seen.setdefault(config.key, self._clock())
        made = encode_api_resource(config, first)
        self._encoded[config.key] = (config, made)
        return made

    async def serve(
        self,
        requests: AsyncIterator[Any],
        context: grpc.aio.ServicerContext[Any, bytes],
        guard: CallerGuard | None = None,
    ) -> None:
        caller: Caller | None = None
        if guard is not None:
            try:
                caller = guard.caller(context)
            except Unauthenticated as problem:
                guard.refused("unauthenticated", context, str(problem))
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(problem))
        async with admitted(self._admission, context, self.has_synced()):
            stream = NodeSetStream(f"node-set-{next(self._ids)}", self, caller)
            try:
                await stream.run(requests, context.write)
            except BadNodeSetRequest as problem:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(problem))
            except NodeSetDenied as problem:
                assert guard is not None  # only a caller is denied
                guard.refused("permission_denied", context, str(problem))
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(problem))

    def authorise(self, addresses: frozenset[str], caller: Caller | None) -> None:
        """NodeSetDenied unless ``caller`` (None: the plaintext port) may have the set of
        the node at ``addresses``."""
        if caller is None:
            return
        denial = node_denial(self.index, addresses, caller)
        if denial is not None:
            raise NodeSetDenied(denial)

    def attach(self, stream: NodeSetStream) -> None:
        for address in stream.addresses:
            self._streams.setdefault(address, set()).add(stream)

    def detach(self, stream: NodeSetStream) -> None:
        for address in stream.addresses:
            held = self._streams.get(address)
            if held is not None:
                held.discard(stream)
                if not held:
                    del self._streams[address]

    def current(self, addresses: frozenset[str]) -> dict[str, dict[str, Resource]]:
        """The node's set now, encoded: per kind, resources by name (computed once for
        every stream naming the same addresses, until a change touches a node; nobody
        may change it)."""
        found = self._sets.get(addresses)
        if found is None:
            found = self._sets[addresses] = {
                kind: {name: self.resource(config) for name, config in objects.items()}
                for kind, objects in self.index.members(addresses).items()
            }
        return found


class NodeSetStream:
    """One agent's stream: a reader taking requests and a writer sending differences."""

    def __init__(self, stream_id: str, server: NodeSetServer, caller: Caller | None = None) -> None:
        self.id = stream_id
        self.server = server
        self.caller = caller
        self.addresses: frozenset[str] = frozenset()
        self.session = NodeSetSession()
        self.wake = asyncio.Event()
        self._first: set[str] = set()

    async def run(
        self, requests: AsyncIterator[Any], write: Callable[[bytes], Awaitable[None]]
    ) -> None:
        writer: asyncio.Task[None] | None = None
        try:
            async for request in requests:
                if isinstance(request, Undecodable):
                    raise BadNodeSetRequest(request.reason)
                if not self.addresses:
                    addresses = node_addresses(request)
                    self.server.authorise(addresses, self.caller)
                    self.addresses = addresses
                    self.server.attach(self)
                    writer = asyncio.create_task(self._write(write))
                self._take(request)
                if writer is not None and writer.done():
                    writer.result()  # the writer's failure ends the stream
        finally:
            self.server.detach(self)
            if writer is not None:
                writer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await writer

    def _take(self, request: Any) -> None:
        try:
            fresh = self.session.request(
                request.type_url,
                nonce=request.response_nonce,
                error=request.error_detail.message if request.HasField("error_detail") else "",
                initial_versions=dict(request.initial_resource_versions),
                unsubscribe=tuple(request.resource_names_unsubscribe),
            )
        except UnknownType as problem:
            raise BadNodeSetRequest(str(problem)) from None
        if fresh:
            self._first.add(request.type_url)
            self.wake.set()

    async def _write(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        server, session = self.server, self.session
        while True:
            await self.wake.wait()
            self.wake.clear()
            first, self._first = self._first, set()
            current = server.current(self.addresses)
            for type_url, kind in list(session.subscribed.items()):
                out = session.delta(type_url, current[kind], answer=type_url in first)
                if out is None:
                    continue
                body = delta_response("", type_url, session.nonce(), out.resources, out.removed)
                server.figures.responses += 1
                server.figures.bytes += len(body)
                await write(body)
