"""Tagged gRPC backends for the proxyless tests: which endpoint answered a call.

Each backend serves grpc-health-checking's ``grpc.health.v1.Health`` (its answers
carry the backend's tag in the ``x-backend`` initial metadata) and a generic
``/pilothouse.e2e.Backend/Tag`` method whose response body is the tag (and
``Flaky``, which fails each call's first attempt). Backends
are plain gRPC servers on 127.0.0.1 (the endpoints of the services under test);
the clients reach them through xDS from their own processes.
"""

from __future__ import annotations

from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio

TAG_SERVICE = "pilothouse.e2e.Backend"
TAG_METHOD = f"/{TAG_SERVICE}/Tag"
FLAKY_METHOD = f"/{TAG_SERVICE}/Flaky"
HEALTH_CHECK_METHOD = "/grpc.health.v1.Health/Check"
BACKEND_HEADER = "x-backend"


def _unary(behaviour: Any) -> grpc.RpcMethodHandler[bytes, bytes]:
    return grpc.unary_unary_rpc_method_handler(
        behaviour, request_deserializer=None, response_serializer=None
    )


def tag_handler(tag: str) -> grpc.GenericRpcHandler:
    """``/pilothouse.e2e.Backend/Tag``, answering ``tag`` as bytes (any server)."""
    body = tag.encode()

    def answer(request: bytes, context: Any) -> bytes:
        return body

    return grpc.method_handlers_generic_handler(TAG_SERVICE, {"Tag": _unary(answer)})


def aio_backend_handler(tag: str) -> grpc.GenericRpcHandler:
    """``Tag`` and ``Flaky`` for a grpc.aio server.

    ``Flaky`` answers ``tag`` too, but aborts with UNAVAILABLE the first time it sees a
    request body (a trailers-only answer, which gRPC may retry), so a call succeeds only
    when it is retried.
    """
    body = tag.encode()
    seen: set[bytes] = set()

    async def answer(request: bytes, context: Any) -> bytes:
        return body

    async def flaky(request: bytes, context: Any) -> bytes:
        if request not in seen:
            seen.add(request)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the first attempt fails")
        return body

    return grpc.method_handlers_generic_handler(
        TAG_SERVICE, {"Tag": _unary(answer), "Flaky": _unary(flaky)}
    )


class TaggedHealth(health_aio.HealthServicer):  # type: ignore[misc]
    """The standard Health service, whose Check answers name the backend."""

    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag

    async def Check(self, request: Any, context: Any) -> Any:
        await context.send_initial_metadata(((BACKEND_HEADER, self.tag),))
        return await super().Check(request, context)


class Backends:
    """Tagged grpc.aio servers; ``start(tag)`` returns the port, ``close_all()`` stops them."""

    def __init__(self) -> None:
        self._servers: dict[str, grpc.aio.Server] = {}
        self.ports: dict[str, int] = {}

    async def start(self, tag: str, port: int = 0) -> int:
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        server.add_generic_rpc_handlers([aio_backend_handler(tag)])
        health = TaggedHealth(tag)
        await health.set("", health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
        if bound == 0:
            raise RuntimeError(f"backend {tag}: could not bind 127.0.0.1:{port}")
        await server.start()
        self._servers[tag] = server
        self.ports[tag] = bound
        return bound

    async def stop(self, tag: str) -> None:
        server = self._servers.pop(tag, None)
        self.ports.pop(tag, None)
        if server is not None:
            await server.stop(0)

    async def close_all(self) -> None:
        for tag in list(self._servers):
            await self.stop(tag)
