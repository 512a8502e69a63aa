"""The transport floor: the least an ADS server must do to push given bytes to N streams.

A grpc.aio server (pilothouse's server options, so the transport is the same)
that knows nothing of meshes. It serves resources it is handed, already encoded,
and follows the xDS protocol only as far as a client needs:

- SotW: a request with no nonce, or naming a different set than last time, is
  answered with the resources of the type (all of them for a wildcard type, the
  named ones otherwise); ACKs and NACKs are ignored.
- Delta: the first request for a type is answered with everything it
  subscribes to (even nothing); a later one that subscribes to more is answered
  with those; ACKs and NACKs are ignored.
- A push hands every stream watching the type one response, encoded once per
  distinct content and shared: the whole set for a SotW wildcard type, the
  changed resources otherwise.

The benchmark drives it through one unary control method,
``/pilothouse.bench.TransportFloor/Apply``, whose request is a
``DeltaDiscoveryResponse``: ``system_version_info`` "load" replaces the
resources of ``type_url`` without pushing; "push" updates the given resources
(of any types) and pushes them, one response per type in push order (CDS, EDS,
LDS, RDS).

Run: ``python bench/harness/floor.py --address 127.0.0.1:0``; it prints
``floor listening on HOST:PORT`` and serves until SIGTERM or SIGINT.

``--processes N`` (N > 1) is the floor to compare with ``serve --workers N``: N
processes share the port with ``SO_REUSEPORT`` (this one and N - 1 children it
starts once it has bound the port; the kernel spreads connections over them).
Each process holds its own resources and streams, so each also listens on a
control port of its own and prints ``floor control on HOST:PORT``: the benchmark
loads and pushes through every one of them, as each pilothouse worker reads the
config itself. Without ``--processes`` the port is not shared and a port already
taken fails loudly; ``--control-address`` alone gives a lone floor a control port
too, so that the benchmark's control calls are not among the connections counted
on the ADS port.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from typing import Any, Final

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import is_full_state_type, push_order_key
from pilothouse.xds.server.ads import ADS_SERVICE, new_grpc_server

CONTROL_SERVICE: Final = "pilothouse.bench.TransportFloor"
APPLY_METHOD: Final = f"/{CONTROL_SERVICE}/Apply"
WILDCARD: Final = "*"

Watch = frozenset[str] | None
"""What a stream watches of a type: names, or None for everything (wildcard)."""


class FloorStream:
    """One client stream: its protocol, what it watches, the responses it is owed."""

    def __init__(self, *, delta: bool) -> None:
        self.delta = delta
        self.watches: dict[str, Watch] = {}
        self.outbound: asyncio.Queue[bytes | None] = asyncio.Queue()


class Floor:
    """The resources, the streams, and the protocol rules above (no I/O)."""

    def __init__(self) -> None:
        self.resources: dict[str, dict[str, Any]] = {}
        """type URL → name → ``envoy.service.discovery.v3.Resource``."""
        self.streams: set[FloorStream] = set()
        self._serial = itertools.count(1)
        self._encoded: dict[tuple[bool, str, frozenset[str] | None], bytes] = {}

    # -- content --------------------------------------------------------------------

    def load(self, type_url: str, resources: Iterable[Any]) -> None:
        """Replace the type's resources; streams are answered from them from now on."""
        self.resources[type_url] = {r.name: r for r in resources}
        self._encoded.clear()

    def push(self, type_url: str, changed: Iterable[Any]) -> int:
        """Update resources and queue one response to every stream watching the type.

        Returns how many streams were queued.
        """
        current = self.resources.setdefault(type_url, {})
        names = set()
        for resource in changed:
            current[resource.name] = resource
            names.add(resource.name)
        self._encoded.clear()
        changed_names = frozenset(names)
        full_state = is_full_state_type(type_url)
        queued = 0
        for stream in self.streams:
            if type_url not in stream.watches:
                continue
            watch = stream.watches[type_url]
            if full_state and not stream.delta:
                picked = watch
            else:
                picked = changed_names if watch is None else changed_names & watch
                if not picked:
                    continue
            stream.outbound.put_nowait(self._body(stream.delta, type_url, picked))
            queued += 1
        return queued

    # -- requests ---------------------------------------------------------------------

    def answer(self, stream: FloorStream, request: Any) -> bytes | None:
        """The response a request needs, or None (an ACK, a NACK, an unknown type)."""
        if request.type_url not in self.resources:
            return None
        if stream.delta:
            return self._answer_delta(stream, request)
        return self._answer_sotw(stream, request)

    def _answer_sotw(self, stream: FloorStream, request: Any) -> bytes | None:
        type_url = request.type_url
        asked = list(request.resource_names)
        watch: Watch = None
        if not (is_full_state_type(type_url) and (not asked or WILDCARD in asked)):
            watch = frozenset(asked) - {WILDCARD}
        if request.response_nonce and stream.watches.get(type_url, ()) == watch:
            return None
        stream.watches[type_url] = watch
        return self._body(False, type_url, watch)

    def _answer_delta(self, stream: FloorStream, request: Any) -> bytes | None:
        type_url = request.type_url
        subscribe = frozenset(request.resource_names_subscribe)
        unsubscribe = frozenset(request.resource_names_unsubscribe)
        if type_url not in stream.watches:
            everything = is_full_state_type(type_url) and (not subscribe or WILDCARD in subscribe)
            watch: Watch = None if everything else subscribe - {WILDCARD}
            stream.watches[type_url] = watch
            return self._body(True, type_url, watch)
        before = stream.watches[type_url]
        if WILDCARD in subscribe:
            stream.watches[type_url] = None
        elif before is not None:
            stream.watches[type_url] = (before | subscribe) - unsubscribe
        added = subscribe - {WILDCARD}
        if not added:
            return None
        return self._body(True, type_url, added)

    # -- encoding ---------------------------------------------------------------------

    def _body(self, delta: bool, type_url: str, names: frozenset[str] | None) -> bytes:
        """One encoded response of the named (or all) resources, shared while content lasts."""
        key = (delta, type_url, names)
        body = self._encoded.get(key)
        if body is not None:
            return body
        current = self.resources.get(type_url, {})
        chosen = [
            current[name] for name in sorted(current if names is None else names & current.keys())
        ]
        serial = next(self._serial)
        nonce = f"floor-{serial}"
        if delta:
            message = discovery_pb2.DeltaDiscoveryResponse(
                system_version_info=str(serial), type_url=type_url, nonce=nonce, resources=chosen
            )
        else:
            message = discovery_pb2.DiscoveryResponse(
                version_info=str(serial),
                type_url=type_url,
                nonce=nonce,
                resources=[resource.resource for resource in chosen],
            )
        body = bytes(message.SerializeToString())
        self._encoded[key] = body
        return body


# -- gRPC ---------------------------------------------------------------------------------


def _identity(body: bytes) -> bytes:
    return body


class FloorService:
    """The ADS methods and the control method over one ``Floor``."""

    def __init__(self, floor: Floor) -> None:
        self.floor = floor

    async def sotw(self, requests: AsyncIterator[Any], context: Any) -> None:
        await self._serve(FloorStream(delta=False), requests, context)

    async def delta(self, requests: AsyncIterator[Any], context: Any) -> None:
        await self._serve(FloorStream(delta=True), requests, context)

    async def apply(self, request: Any, context: Any) -> bytes:
        if request.system_version_info == "load":
            self.floor.load(request.type_url, request.resources)
            return b""
        by_type: dict[str, list[Any]] = {}
        for resource in request.resources:
            by_type.setdefault(resource.resource.type_url, []).append(resource)
        for type_url in sorted(by_type, key=push_order_key):
            self.floor.push(type_url, by_type[type_url])
        return b""

    async def _serve(self, stream: FloorStream, requests: AsyncIterator[Any], context: Any) -> None:
        self.floor.streams.add(stream)
        reader = asyncio.create_task(self._read(stream, requests))
        try:
            while True:
                body = await stream.outbound.get()
                if body is None:
                    break
                await context.write(body)
        finally:
            self.floor.streams.discard(stream)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader

    async def _read(self, stream: FloorStream, requests: AsyncIterator[Any]) -> None:
        try:
            async for request in requests:
                body = self.floor.answer(stream, request)
                if body is not None:
                    stream.outbound.put_nowait(body)
        finally:
            stream.outbound.put_nowait(None)


def add_floor_services(server: grpc.aio.Server, service: FloorService) -> None:
    def streaming(behaviour: Any, request_type: Any) -> Any:
        return grpc.stream_stream_rpc_method_handler(
            behaviour, request_deserializer=request_type.FromString, response_serializer=_identity
        )

    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(
                ADS_SERVICE,
                {
                    "StreamAggregatedResources": streaming(
                        service.sotw, discovery_pb2.DiscoveryRequest
                    ),
                    "DeltaAggregatedResources": streaming(
                        service.delta, discovery_pb2.DeltaDiscoveryRequest
                    ),
                },
            ),
            grpc.method_handlers_generic_handler(
                CONTROL_SERVICE,
                {
                    "Apply": grpc.unary_unary_rpc_method_handler(
                        service.apply,
                        request_deserializer=discovery_pb2.DeltaDiscoveryResponse.FromString,
                        response_serializer=_identity,
                    )
                },
            ),
        ]
    )


async def serve(
    address: str, *, processes: int = 1, control: str | None = None, join: bool = False
) -> None:
    """Serve until SIGTERM or SIGINT; with ``processes`` > 1 (or ``join``, as the
    processes started by another one are), share the port with ``SO_REUSEPORT``; with
    several processes or a ``control`` address, take a control port of this process's
    own."""
    shared = processes > 1 or join
    server = new_grpc_server(reuse_port=shared)
    add_floor_services(server, FloorService(Floor()))
    port = server.add_insecure_port(address)
    if port == 0:
        raise SystemExit(f"transport floor: cannot listen on {address}")
    control_port = 0
    if shared or control is not None:
        control = control or "127.0.0.1:0"
        control_port = server.add_insecure_port(control)
        if control_port == 0:
            raise SystemExit(f"transport floor: cannot listen on {control}")
    await server.start()
    host = address.rsplit(":", 1)[0]
    others = [_start_sibling(f"{host}:{port}") for _ in range(processes - 1)]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if control is not None:
        print(f"floor control on {control.rsplit(':', 1)[0]}:{control_port}", flush=True)
    print(f"floor listening on {host}:{port}", flush=True)
    try:
        await stop.wait()
    finally:
        for other in others:
            other.terminate()
        for other in others:
            try:
                other.wait(5)
            except subprocess.TimeoutExpired:
                other.kill()
                other.wait()
        await server.stop(0)


def _start_sibling(address: str) -> subprocess.Popen[bytes]:
    """Another floor process on the same (shared) port, printing to the same output."""
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--address",
            address,
            "--join",
            "--control-address",
            "127.0.0.1:0",
        ],
        stdin=subprocess.DEVNULL,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default="127.0.0.1:0")
    parser.add_argument(
        "--processes", type=int, default=1, help="processes sharing the port (SO_REUSEPORT)"
    )
    parser.add_argument("--control-address", help="this process's own control port")
    parser.add_argument("--join", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    asyncio.run(
        serve(args.address, processes=args.processes, control=args.control_address, join=args.join)
    )


if __name__ == "__main__":
    main()
