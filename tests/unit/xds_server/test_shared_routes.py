"""The route configurations of one scope reach its proxies as one shared SotW response.

The RDS generator answers every proxy of a scope watching the same names with one
cached mapping (per ``RouteSetInputs``); the streams' SotW delivery then summarises it
once and hands each further stream the same encoded response. Checked through a real
discovery server (real generators, PushContext and push workers; the connections are
the server's own, read from their outbound queues, without gRPC): on the first answer
and on a push after a VirtualService edit, every stream past the first is sent the very
same bytes, and each mapping is summarised once, not once per stream.
"""

from __future__ import annotations

import asyncio

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import RDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.proxy import parse_node
from pilothouse.settings import XdsSettings
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.connection import Connection, Queued
from pilothouse.xds.server.discovery import DiscoveryServer

STREAMS = 12


def mesh(timeout: str) -> str:
    return f"""\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: web, namespace: shop}}
spec:
  hosts: [web.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{name: http, number: 8080, protocol: HTTP}}]
  endpoints: [{{address: 10.1.0.1}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: web, namespace: shop}}
spec:
  hosts: [web.shop.svc.cluster.local]
  http:
  - timeout: {timeout}
    route:
    - destination: {{host: web.shop.svc.cluster.local}}
"""


def apply(store: MemoryStore, text: str) -> None:
    for config in Loader(SCHEMAS, source="test").load_strict(text, "mesh.yaml"):
        store.apply(config)


def routes(names: list[str], nonce: str = "") -> discovery_pb2.DiscoveryRequest:
    return discovery_pb2.DiscoveryRequest(type_url=RDS, resource_names=names, response_nonce=nonce)


def queued(connection: Connection) -> list[Queued]:
    out = []
    while not connection.outbound.empty():
        item = connection.outbound.get_nowait()
        assert item is not None
        out.append(item)
    return out


async def test_a_scopes_routes_are_one_shared_response() -> None:
    store = MemoryStore("test")
    apply(store, mesh("3s"))
    store.mark_synced()
    fast = XdsSettings(debounce=DebounceSettings(debounce_after=0.01, debounce_max=0.1))
    discovery = DiscoveryServer(store, settings=fast)
    task = asyncio.create_task(discovery.run())
    try:
        await discovery.wait_ready()
        connections = []
        for index in range(STREAMS):
            node = f"sidecar~10.0.0.{index + 1}~app-{index}.shop~shop.svc.cluster.local"
            proxy = parse_node(node)
            connection = Connection(
                f"app-{index}", "peer", proxy, discovery, delta=False,
                responses=discovery.responses,
            )  # fmt: skip
            discovery.connect(connection)
            connections.append(connection)
        contents = discovery.responses.contents
        before = contents.summaries

        first = []
        for connection in connections:
            connection.on_request(routes(["8080"]), 1.0)
            (answer,) = queued(connection)
            first.append(answer.body)
        assert len({id(body) for body in first[1:]}) == 1  # one response, handed on
        assert contents.summaries == before + 1  # summarised once, for all the streams
        decoded = discovery_pb2.DiscoveryResponse.FromString(first[0])
        assert len(decoded.resources) == 1
        for connection, body in zip(connections, first, strict=True):
            nonce = discovery_pb2.DiscoveryResponse.FromString(body).nonce
            connection.on_request(routes(["8080"], nonce), 2.0)
            assert queued(connection) == []  # an ACK: nothing owed

        apply(store, mesh("5s"))  # the scope's routes change: one push to every stream
        pushed: dict[str, bytes] = {}
        for _ in range(500):
            for connection in connections:
                for item in queued(connection):
                    if item.type_url == RDS:
                        pushed[connection.id] = item.body
            if len(pushed) == STREAMS:
                break
            await asyncio.sleep(0.01)
        assert len(pushed) == STREAMS
        bodies = list(pushed.values())
        assert len({id(body) for body in bodies}) <= 2  # the first stream's own, then shared
        assert max(bodies.count(body) for body in bodies) >= STREAMS - 1
        assert contents.summaries == before + 2
        assert all(
            discovery_pb2.DiscoveryResponse.FromString(body).version_info != decoded.version_info
            for body in bodies
        )
    finally:
        discovery.close()
        await asyncio.wait_for(task, 10)
