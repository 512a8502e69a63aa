"""gRPC servicers for ADS (SotW and delta) and the per-type discovery services.

Every stream runs the same loop: refuse it with UNAVAILABLE until the server is
ready; read its first request and pass admission control
(:mod:`pilothouse.xds.server.admission`: a circuit breaker, UNAVAILABLE, and a rate
limit, RESOURCE_EXHAUSTED); take the node from the first request and refuse a
malformed one with INVALID_ARGUMENT; then one reader task
feeds requests to the connection while this coroutine, the writer, sends the
connection's queued responses. Responses are bytes already (the response serializer
is the identity); requests are parsed by :func:`discovery_request_parser` (with the
fingerprint of a SotW request's names), so undecodable bytes end the stream with
INVALID_ARGUMENT.
When the stream ends, for any reason, the connection is removed and leaves nothing
behind; an exception of pilothouse's own ends only that stream, with INTERNAL.

What happens to streams is counted for ``/metrics``: a stream refused before it
starts, by reason, on the admission controller (its own ``rate_limited`` and
``max_connections``, and ``not_ready``, ``bad_request``, ``bad_node`` decided here:
``pilothouse_xds_admission_rejections``), and a stream ended with INTERNAL on the
discovery server (``pilot_total_xds_internal_errors``).

ADS streams also answer the ``istio.io/debug/*`` types
(:mod:`pilothouse.xds.server.debug_types`); a peer not allowed to read them gets
PERMISSION_DENIED.

On the TLS port (a ``guard``, :mod:`pilothouse.xds.server.tls_guard`) a stream is
authenticated after its first request arrives (UNAUTHENTICATED otherwise, counted as
``unauthenticated``); the proxy it claims to be must match the caller's identity, and
``GENERATOR=api`` and the debug types need an identity in the root namespace
(PERMISSION_DENIED otherwise, counted as ``permission_denied``). The caller is kept in
``ProxyIdentity.caller``. Streams on the plaintext port have no guard and no caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.request_bytes import Arrival, Undecodable, discovery_request_parser
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.proxy import BadNode, GeneratorFamily, ProxyIdentity, parse_node
from pilothouse.security.authn import Unauthenticated
from pilothouse.security.identity import Caller
from pilothouse.settings import XdsSettings
from pilothouse.xds.server.admission import Refusal, Refused
from pilothouse.xds.server.connection import INTERNAL_ERROR, Connection, Queued
from pilothouse.xds.server.debug_types import DebugAnswers, DebugDenied, is_debug_type
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.grpc_options import grpc_server_options
from pilothouse.xds.server.node_metadata import struct_dict
from pilothouse.xds.server.tls_guard import TlsGuard
from pilothouse.xds.server.writer import write_responses

log = logging.getLogger("pilothouse.xds")

ADS_SERVICE = "envoy.service.discovery.v3.AggregatedDiscoveryService"
PER_TYPE_SERVICES = {
    "envoy.service.cluster.v3.ClusterDiscoveryService": ("Clusters", CDS),
    "envoy.service.endpoint.v3.EndpointDiscoveryService": ("Endpoints", EDS),
    "envoy.service.listener.v3.ListenerDiscoveryService": ("Listeners", LDS),
    "envoy.service.route.v3.RouteDiscoveryService": ("Routes", RDS),
}


def _identity(body: bytes) -> bytes:
    return body


def node_identity(node: Any) -> ProxyIdentity:
    """The proxy identity from an Envoy ``Node`` message (raises BadNode)."""
    try:
        metadata = struct_dict(node.metadata) if node.HasField("metadata") else {}
    except ValueError:  # a Struct protobuf parses but JSON cannot express (a NaN number)
        raise BadNode(
            f"node {node.id!r}: metadata cannot be read as JSON (a NaN or infinite number?)"
        ) from None
    if node.HasField("locality"):  # most nodes have none: no message read for it
        place = node.locality
        locality = "/".join((place.region, place.zone, place.sub_zone)).rstrip("/")
    else:
        locality = ""
    agent = f"{node.user_agent_name}/{_agent_version(node)}".strip("/")
    return parse_node(
        node.id, metadata, node_cluster=node.cluster, locality=locality, user_agent=agent
    )


def _agent_version(node: Any) -> str:
    """``user_agent_version``, or Envoy's ``user_agent_build_version`` as ``1.40.0``."""
    if node.user_agent_version or not node.HasField("user_agent_build_version"):
        return str(node.user_agent_version)
    version = node.user_agent_build_version.version
    return f"{version.major_number}.{version.minor_number}.{version.patch}"


class StreamRefused(Exception):
    """Ends a stream with ``code`` and ``message`` (the client's fault, or not ready).

    ``reason`` is set when the stream is refused before it starts (an admission
    rejection, counted and logged by that reason, with ``node_id`` when the stream
    claimed one); a stream ended later has none (one ended with PERMISSION_DENIED, for
    a debug type it may not read, is logged and recorded but not counted).
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        reason: Refusal | None = None,
        node_id: str = "",
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
        self.node_id = node_id


class StreamHandler:
    """Serves one kind of stream (SotW or delta, aggregated or one type).

    Faults stop at the stream: bad input ends it with ``INVALID_ARGUMENT`` naming the
    problem; an exception of our own (a generator, a builder, the engine) ends it with
    ``INTERNAL`` and :data:`INTERNAL_ERROR`, the traceback going to the log. Nothing
    raised here reaches the server or the other streams.
    """

    def __init__(
        self,
        discovery: DiscoveryServer,
        *,
        delta: bool,
        only_type: str = "",
        debug: DebugAnswers | None = None,
        guard: TlsGuard | None = None,
    ) -> None:
        """``debug`` answers the ``istio.io/debug/*`` types (ADS streams only);
        ``guard`` authenticates and authorises streams (the TLS port only)."""
        self._discovery = discovery
        self._delta = delta
        self._only_type = only_type
        self._debug = debug
        self._guard = guard

    async def serve(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, bytes]
    ) -> None:
        try:
            await self._serve(requests, context)
        except Refused as refused:  # admission control counted it already
            await context.abort(refused.code, refused.message, refused.trailers())
        except StreamRefused as refused:
            if refused.reason is not None:
                self._discovery.admission.refuse(
                    refused.reason, self._peer(context), refused.message, refused.node_id
                )
            elif refused.code is grpc.StatusCode.PERMISSION_DENIED:  # a debug type, later
                self._discovery.admission.refusals.note(
                    Refusal.PERMISSION_DENIED.value,
                    self._peer(context),
                    refused.message,
                    refused.node_id,
                )
            elif refused.code is grpc.StatusCode.INTERNAL:
                self._discovery.record_internal_error()
            await context.abort(refused.code, refused.message)
        except Exception:
            log.exception("xds stream failed", extra={"peer": context.peer()})
            self._discovery.record_internal_error()
            await context.abort(grpc.StatusCode.INTERNAL, INTERNAL_ERROR)

    async def _serve(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, bytes]
    ) -> None:
        discovery = self._discovery
        admission = discovery.admission
        # The first request is read before anything is refused (not ready, admission): a
        # client still sending it when its stream is refused loses the status to grpcio
        # (its write fails and the call ends INTERNAL "Internal error from Core" instead of
        # the refusal).
        try:
            first = await anext(requests)
        except StopAsyncIteration:
            return
        if not discovery.ready():
            raise StreamRefused(
                grpc.StatusCode.UNAVAILABLE,
                "pilothouse is not ready: config has not synced yet",
                Refusal.NOT_READY,
                _claimed_node(first),
            )
        caller: Caller | None = None
        peer = context.peer()
        if self._guard is not None:
            try:
                caller = self._guard.caller(context)
            except Unauthenticated as problem:
                raise StreamRefused(
                    grpc.StatusCode.UNAUTHENTICATED,
                    str(problem),
                    Refusal.UNAUTHENTICATED,
                    _claimed_node(first),
                ) from None
            peer = self._guard.peer(context)
        async with admission.stream(peer, _claimed_node(first)):
            await self._serve_admitted(first, requests, context, caller, peer)

    async def _serve_admitted(
        self,
        first: Any,
        requests: AsyncIterator[Any],
        context: grpc.aio.ServicerContext[Any, bytes],
        caller: Caller | None,
        peer: str,
    ) -> None:
        discovery = self._discovery
        if isinstance(first, Undecodable):
            raise StreamRefused(grpc.StatusCode.INVALID_ARGUMENT, first.reason, Refusal.BAD_REQUEST)
        node = first.request.node
        if not first.request.HasField("node") or not node.id:
            raise StreamRefused(
                grpc.StatusCode.INVALID_ARGUMENT,
                "the first request must carry a node with an id",
                Refusal.BAD_NODE,
            )
        try:
            proxy = node_identity(node)
        except BadNode as problem:
            raise StreamRefused(
                grpc.StatusCode.INVALID_ARGUMENT, str(problem), Refusal.BAD_NODE, node.id
            ) from None
        proxy = discovery.complete_proxy(proxy)
        if caller is not None:
            proxy = self._authorised(proxy, caller)
        connection = Connection(
            discovery.next_connection_id(proxy.id or proxy.node_id),
            peer,
            proxy,
            discovery,
            delta=self._delta,
            warming_timeout=discovery.settings.warming_timeout,
            clock=discovery.metrics.clock,
            control_plane=discovery.identity.encoded,
            responses=discovery.responses,
        )
        discovery.connect(connection)
        reader = asyncio.create_task(self._read(first, requests, connection))
        try:
            await write_responses(connection, context.write, discovery)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            discovery.disconnect(connection)
        if connection.denied:
            raise StreamRefused(
                grpc.StatusCode.PERMISSION_DENIED, connection.denied, node_id=proxy.node_id
            )
        if connection.problem:
            raise StreamRefused(grpc.StatusCode.INVALID_ARGUMENT, connection.problem)
        if connection.failure:
            raise StreamRefused(grpc.StatusCode.INTERNAL, connection.failure)

    def _authorised(self, proxy: ProxyIdentity, caller: Caller) -> ProxyIdentity:
        """``proxy`` with its caller, if the caller may be that proxy (TLS port)."""
        assert self._guard is not None
        denial = self._guard.proxy_denial(proxy, caller)
        if denial is None and proxy.generator is GeneratorFamily.API:
            denial = self._guard.root_denial(caller, "MCP-over-xDS (GENERATOR=api)")
        if denial is not None:
            raise StreamRefused(
                grpc.StatusCode.PERMISSION_DENIED,
                denial,
                Refusal.PERMISSION_DENIED,
                proxy.node_id,
            )
        return dataclasses.replace(proxy, caller=caller)

    def _peer(self, context: grpc.aio.ServicerContext[Any, bytes]) -> str:
        """The client's address (on the TLS port, the real one behind the front)."""
        return self._guard.peer(context) if self._guard is not None else context.peer()

    async def _read(self, first: Any, requests: AsyncIterator[Any], connection: Connection) -> None:
        try:
            self._handle(first, connection)
            async for request in requests:
                self._handle(request, connection)
        except _BadRequest as problem:
            connection.problem = str(problem)
        except DebugDenied as denied:
            connection.denied = str(denied)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("xds request failed", extra={"connection": connection.id})
            connection.fail(INTERNAL_ERROR)
        finally:
            connection.close()

    def _handle(self, arrival: Arrival | Undecodable, connection: Connection) -> None:
        if isinstance(arrival, Undecodable):
            raise _BadRequest(arrival.reason)
        request, names = arrival
        type_url = request.type_url  # read once: each read makes a new string
        if self._only_type:
            if not type_url:
                request.type_url = self._only_type
            elif type_url != self._only_type:
                raise _BadRequest(f"type_url {type_url!r} on the {self._only_type} stream")
        elif not type_url:
            raise _BadRequest("request without type_url on an aggregated stream")
        elif self._debug is not None and is_debug_type(type_url):
            authorised = False
            caller = connection.proxy.caller
            if self._guard is not None and caller is not None:
                denial = self._guard.root_denial(caller, "the istio.io/debug types")
                if denial is not None:
                    raise DebugDenied(denial)
                authorised = True
            answer = self._debug.answer(
                connection, request, delta=self._delta, authorised=authorised
            )
            if answer is not None:
                connection.outbound.put_nowait(
                    Queued(answer, request.type_url, 0.0, connection.clock())
                )
            return
        connection.on_request(request, time.time(), names)


class _BadRequest(Exception):
    pass


def _claimed_node(first: Arrival | Undecodable) -> str:
    """The node id a first request claims, unchecked (for the refusal log); "" if none."""
    if isinstance(first, Undecodable):
        return ""
    return str(first.request.node.id)


def _handler(behaviour: Callable[..., Any], request_type: Any) -> grpc.RpcMethodHandler[Any, bytes]:
    return grpc.stream_stream_rpc_method_handler(
        behaviour,
        request_deserializer=discovery_request_parser(
            request_type, fingerprint=request_type is discovery_pb2.DiscoveryRequest
        ),
        response_serializer=_identity,
    )


def add_discovery_services(
    server: grpc.aio.Server, discovery: DiscoveryServer, guard: TlsGuard | None = None
) -> None:
    """Register ADS and the per-type services on a grpc.aio server; ``guard`` for the TLS
    port's backend server (every stream authenticated and authorised)."""
    sotw = discovery_pb2.DiscoveryRequest
    delta = discovery_pb2.DeltaDiscoveryRequest
    debug = DebugAnswers(discovery)
    handlers = [
        grpc.method_handlers_generic_handler(
            ADS_SERVICE,
            {
                "StreamAggregatedResources": _handler(
                    StreamHandler(discovery, delta=False, debug=debug, guard=guard).serve, sotw
                ),
                "DeltaAggregatedResources": _handler(
                    StreamHandler(discovery, delta=True, debug=debug, guard=guard).serve, delta
                ),
            },
        )
    ]
    for service, (suffix, type_url) in PER_TYPE_SERVICES.items():
        handlers.append(
            grpc.method_handlers_generic_handler(
                service,
                {
                    f"Stream{suffix}": _handler(
                        StreamHandler(
                            discovery, delta=False, only_type=type_url, guard=guard
                        ).serve,
                        sotw,
                    ),
                    f"Delta{suffix}": _handler(
                        StreamHandler(discovery, delta=True, only_type=type_url, guard=guard).serve,
                        delta,
                    ),
                },
            )
        )
    server.add_generic_rpc_handlers(handlers)


def new_grpc_server(
    settings: XdsSettings | None = None, *, reuse_port: bool = False
) -> grpc.aio.Server:
    """A grpc.aio server with pilothouse's options (:func:`grpc_server_options`)."""
    given = settings if settings is not None else XdsSettings()
    return grpc.aio.server(options=grpc_server_options(given, reuse_port=reuse_port))
