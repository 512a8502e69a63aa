"""The transport floor of an MCP sync: N ServiceEntries as bare protobuf over one gRPC stream.

The least any server and client can do to move the same objects between two
processes: the server holds the N ServiceEntry spec messages (built at start-up,
before anything is timed); on a request it serialises each one to ``Any`` bytes,
concatenates them into one ``DiscoveryResponse`` and writes it on a grpc.aio stream
(pilothouse's own server options, so the transport is the same). The client opens a
channel and the stream, sends one request, reads the response and parses every entry
with ``ParseFromString``. No names, metadata, validation, store or versions.

Run as a server: ``python bench/mcp_sync_floor.py --count N`` prints
``floor listening on PORT`` and serves until SIGTERM or SIGINT. :func:`sync_once`
is the client side, run by ``bench/mcp_sync.py`` in its own process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.mcp_sync_mesh import service_entries
from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.xds.builders.encode import to_any_bytes
from pilothouse.xds.protocol.wire import sotw_response
from pilothouse.xds.server.ads import new_grpc_server

SYNC_METHOD: Final = "/pilothouse.bench.McpFloor/Sync"
TYPE_NAME: Final = "networking.istio.io/v1/ServiceEntry"
MAX_RECEIVE: Final = 256 * 1024 * 1024
"""The same receive limit as the MCP-over-xDS source's channel."""


def specs(count: int) -> list[Any]:
    """The spec messages of the benchmark's first ``count`` ServiceEntries."""
    out = []
    for entry in service_entries(count):
        message = service_entry_pb2.ServiceEntry()
        json_format.ParseDict(entry["spec"], message)
        out.append(message)
    return out


def encode(messages: list[Any], version: str) -> bytes:
    """One ``DiscoveryResponse`` holding every message as an ``Any``."""
    return sotw_response(version, TYPE_NAME, version, [to_any_bytes(m) for m in messages])


async def serve(count: int, address: str) -> None:
    messages = specs(count)
    served = 0

    async def sync(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[bytes]:
        nonlocal served
        async for request in requests:
            if not request.response_nonce:
                served += 1
                yield encode(messages, str(served))

    server = new_grpc_server()
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(
                "pilothouse.bench.McpFloor",
                {
                    "Sync": grpc.stream_stream_rpc_method_handler(
                        sync,
                        request_deserializer=discovery_pb2.DiscoveryRequest.FromString,
                        response_serializer=lambda body: body,
                    )
                },
            )
        ]
    )
    port = server.add_insecure_port(address)
    await server.start()
    print(f"floor listening on {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0.5)


@dataclass(frozen=True, slots=True)
class FloorSync:
    """One client sync: how long it took and what crossed the wire."""

    seconds: float
    response_bytes: int
    objects: int


async def sync_once(port: int) -> FloorSync:
    """Open a stream, ask once, parse every entry; timed from before the channel opens."""
    start = time.perf_counter()
    options = [("grpc.max_receive_message_length", MAX_RECEIVE)]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        call = channel.stream_stream(
            SYNC_METHOD,
            request_serializer=discovery_pb2.DiscoveryRequest.SerializeToString,
            response_deserializer=lambda body: body,
        )()
        await call.write(discovery_pb2.DiscoveryRequest(type_url=TYPE_NAME))
        body = await call.read()
        assert isinstance(body, bytes), body
        response = discovery_pb2.DiscoveryResponse.FromString(body)
        for entry in response.resources:
            service_entry_pb2.ServiceEntry().ParseFromString(entry.value)
        seconds = time.perf_counter() - start
        await call.done_writing()
        call.cancel()
    return FloorSync(seconds, len(body), len(response.resources))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--address", default="127.0.0.1:0")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.count, args.address))


if __name__ == "__main__":
    main()
