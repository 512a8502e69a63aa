"""The MCP sync benchmark's mesh (N ServiceEntries) and its transport floor (the same
objects as bare protobuf over one gRPC stream).

Each ServiceEntry is what a real mesh registers for a VM workload: a host, two ports
(HTTP and gRPC), two inline endpoints with their own labels and a locality, and metadata
labels. ``write_mesh`` spreads them over YAML files (what the source pilothouse reads);
``service_entry`` gives the same object as a dict, from which this process and the floor
build their copies without parsing YAML (at 100,000 objects that would take minutes).

The floor is the least any server and client can do to move the same objects between two
processes: the server holds the N spec messages (built before anything is timed); on a
request it serialises each to ``Any`` bytes, concatenates them into one
``DiscoveryResponse`` and writes it on a grpc.aio stream (pilothouse's own server
options). The client (:func:`sync_once`) opens a channel and the stream, sends one
request, reads the response and parses every entry with ``ParseFromString``: no names,
metadata, validation, store or versions. Run as a server: ``python
bench/mcp_sync_floor.py --count N`` prints ``floor listening on PORT`` and serves until
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.xds.builders.encode import to_any_bytes
from pilothouse.xds.protocol.wire import sotw_response
from pilothouse.xds.server.ads import new_grpc_server

NAMESPACES = 50
TEMPLATE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: svc-{i}
  namespace: ns-{ns}
  labels: {{app: svc-{i}, team: team-{team}}}
spec:
  hosts: [svc-{i}.ns-{ns}.example.internal]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {{number: 8080, name: http, protocol: HTTP}}
  - {{number: 9090, name: grpc, protocol: GRPC}}
  endpoints:
  - address: {first}
    ports: {{http: 8080, grpc: 9090}}
    labels: {{version: v1}}
    locality: region-a/zone-{zone}
  - address: {second}
    ports: {{http: 8080, grpc: 9090}}
    labels: {{version: v2}}
    locality: region-a/zone-{zone}
"""


def _address(n: int) -> str:
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def _fields(i: int) -> dict[str, Any]:
    first, second = _address(2 * i + 1), _address(2 * i + 2)
    return {"i": i, "ns": i % NAMESPACES, "team": i % 7, "zone": i % 3, "first": first,
            "second": second}  # fmt: skip


def service_entry_text(i: int) -> str:
    """ServiceEntry number ``i`` as YAML."""
    return TEMPLATE.format(**_fields(i))


def service_entry(i: int) -> dict[str, Any]:
    """ServiceEntry number ``i`` as the dict its YAML parses to."""
    f = _fields(i)
    name, ns = f"svc-{i}", f"ns-{f['ns']}"
    endpoints = [
        {"address": f[which], "ports": {"http": 8080, "grpc": 9090},
         "labels": {"version": version}, "locality": f"region-a/zone-{f['zone']}"}
        for which, version in (("first", "v1"), ("second", "v2"))
    ]  # fmt: skip
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "ServiceEntry",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"app": name, "team": f"team-{f['team']}"}},
        "spec": {
            "hosts": [f"{name}.{ns}.example.internal"],
            "location": "MESH_INTERNAL",
            "resolution": "STATIC",
            "ports": [{"number": 8080, "name": "http", "protocol": "HTTP"},
                      {"number": 9090, "name": "grpc", "protocol": "GRPC"}],
            "endpoints": endpoints,
        },
    }  # fmt: skip


def service_entries(count: int) -> Iterator[dict[str, Any]]:
    return (service_entry(i) for i in range(count))


def write_mesh(directory: Path, count: int, files: int = 100) -> list[Path]:
    """``count`` ServiceEntries in ``files`` files (fewer when count is smaller)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = max(1, min(files, count))
    per_file, extra = divmod(count, files)
    written: list[Path] = []
    start = 0
    for index in range(files):
        size = per_file + (1 if index < extra else 0)
        path = directory / f"services-{index:03d}.yaml"
        text = "---\n".join(service_entry_text(i) for i in range(start, start + size))
        path.write_text(text, encoding="utf-8")
        written.append(path)
        start += size
    return written


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
