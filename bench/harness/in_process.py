"""A discovery server and its fleet in the benchmark's own process, with no gRPC.

``push_cost`` and ``metrics_overhead`` time the Python a push runs: one
:class:`InProcessServer` holds a ``DiscoveryServer`` on an in-memory store serving
:func:`mesh_yaml` (``services`` ServiceEntries, each with a DestinationRule and a
WorkloadEntry, all in one namespace, so every proxy sees every service), and SotW
connections made as the gRPC servicer makes them, each with the real writer loop
(``xds/server/writer.py``) writing to an in-memory proxy the benchmark supplies.

The server may come from another copy of the package (``package``: an older tree
copied under another name, its imports rewritten), so a benchmark can set a tree
before a change beside today's in the same process.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2

from bench.harness.mesh import DESTINATION_RULE, PORT, SERVICE_ENTRY, WORKLOAD_ENTRY
from bench.harness.subscriptions import MESSAGES, eds_name, route_names
from pilothouse.loadtest.fleet import fleet_identities
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

NAMESPACE = "bench"
TYPES = (CDS, EDS, LDS, RDS)
ROUND_TIMEOUT = 60.0
Write = Callable[[bytes], Awaitable[None]]


def mesh_yaml(services: int, state: int = 0) -> str:
    docs = []
    for index in range(services):
        name = f"svc-{index}"
        host = f"{name}.{NAMESPACE}.svc.cluster.local"
        docs.append(SERVICE_ENTRY.format(name=name, ns=NAMESPACE, host=host, port=PORT))
        docs.append(rule_yaml(index, state if index == 0 else 0))
        docs.append(endpoint_yaml(index, state if index == 0 else 0))
    return "---\n".join(docs)


def rule_yaml(index: int, state: int) -> str:
    """Service ``index``'s DestinationRule; ``state`` sets its connection-pool limit."""
    host = f"svc-{index}.{NAMESPACE}.svc.cluster.local"
    return DESTINATION_RULE.format(
        name=f"svc-{index}", ns=NAMESPACE, host=host, max_connections=100 + state
    )


def endpoint_yaml(index: int, state: int) -> str:
    """Service ``index``'s WorkloadEntry; ``state`` moves its address."""
    address = f"10.{index // 250}.{index % 250}.{10 + state}"
    return WORKLOAD_ENTRY.format(name=f"svc-{index}", index=0, ns=NAMESPACE, address=address)


def unpack(type_url: str, packed: Any) -> Any:
    """The message an ``Any`` of a response carries."""
    message = MESSAGES[type_url]()
    packed.Unpack(message)
    return message


def ack_of(body: bytes, names: dict[str, list[str]]) -> discovery_pb2.DiscoveryRequest:
    """The ACK a proxy watching ``names`` (per type URL) sends for an encoded response."""
    response = discovery_pb2.DiscoveryResponse.FromString(body)
    return discovery_pb2.DiscoveryRequest(
        type_url=response.type_url,
        version_info=response.version_info,
        response_nonce=response.nonce,
        resource_names=names[response.type_url],
    )


class InProcessServer:
    """One discovery server of ``package`` with its connections; call :meth:`stop`."""

    def __init__(self, label: str, package: str = "pilothouse") -> None:
        self.label = label
        self.package = package
        self.store: Any = None
        self.discovery: Any = None
        self.connections: list[Any] = []
        self.tasks: list[asyncio.Task[Any]] = []

    def module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self.package}.{name}")

    def apply(self, text: str) -> None:
        loader = self.module("config.load").Loader(
            self.module("kinds.table").SCHEMAS, source="bench"
        )
        for config in loader.load_strict(text, "bench.yaml"):
            self.store.apply(config)

    async def start(self, services: int, debounce: float, **server: Any) -> None:
        """The server on the mesh, ready; ``server``: more keyword arguments to it."""
        settings_module = self.module("settings")
        settings = settings_module.XdsSettings(
            debounce=settings_module.DebounceSettings(debounce_after=debounce)
        )
        self.store = self.module("sources.memory").MemoryStore("bench")
        self.apply(mesh_yaml(services))
        self.store.mark_synced()
        server_class = self.module("xds.server.discovery").DiscoveryServer
        self.discovery = server_class(self.store, settings=settings, **server)
        self.tasks.append(asyncio.create_task(self.discovery.run()))
        await asyncio.wait_for(self.discovery.wait_ready(), 60)

    def identities(self, proxies: int) -> list[Any]:
        return list(fleet_identities(proxies, namespaces=(NAMESPACE,), app="client"))

    def proxy(self, identity: Any) -> Any:
        return self.module("push.proxy").parse_node(identity.node_id, dict(identity.metadata))

    def connection(self, identity: Any, **options: Any) -> Any:
        """A SotW connection for ``identity`` as the servicer makes it (``options``: the
        servicer's further keyword arguments that this tree knows)."""
        proxy = self.proxy(identity)
        connection_class = self.module("xds.server.connection").Connection
        connection_id = self.discovery.next_connection_id(proxy.node_id)
        return connection_class(
            connection_id, "bench", proxy, self.discovery, delta=False, **options
        )

    def serve(self, connection: Any, write: Write) -> None:
        """Connect ``connection`` and run its writer loop into ``write``."""
        self.discovery.connect(connection)
        self.connections.append(connection)
        self.tasks.append(asyncio.create_task(self._writer(connection, write)))

    async def _writer(self, connection: Any, write: Write) -> None:
        try:
            writer = self.module("xds.server.writer")
        except ModuleNotFoundError:  # a tree before metrics: the servicer's own loop
            stream = self.module("xds.server.ads").StreamHandler
            await stream._write(connection, _Context(write))
            return
        await writer.write_responses(connection, write, self.discovery)

    def probe(self, proxy: Any, type_url: str, names: list[str] | None = None) -> Any:
        """The response a fresh stream of ``proxy`` gets for one request (decoded)."""
        probe = self.module("xds.server.connection").Connection(
            "probe", "bench", proxy, self.discovery, delta=False
        )
        request = discovery_pb2.DiscoveryRequest(type_url=type_url, resource_names=names or [])
        probe.on_request(request, time.time())
        queued = probe.outbound.get_nowait()
        body = queued if isinstance(queued, bytes) else queued.body
        return discovery_pb2.DiscoveryResponse.FromString(body)

    def subscriptions(self, identity: Any) -> dict[str, list[str]]:
        """What every proxy watches: CDS and LDS by wildcard, then the EDS and RDS names
        the clusters and listeners of a probe stream point at."""
        proxy = self.proxy(identity)
        clusters = [unpack(CDS, r) for r in self.probe(proxy, CDS).resources]
        listeners = [unpack(LDS, r) for r in self.probe(proxy, LDS).resources]
        eds = sorted({n for n in map(eds_name, clusters) if n is not None})
        rds = sorted({n for listener in listeners for n in route_names(listener)})
        return {CDS: [], LDS: [], EDS: eds, RDS: rds}

    def idle(self, acked: bool = True) -> bool:
        """Nothing queued, pushed, or waiting to be written (or ACKed, with ``acked``)."""
        return not self._pushing(acked) and all(
            c.outbound.empty() and not c.settling and (not acked or _answered(c))
            for c in self.connections
        )

    def _pushing(self, acked: bool) -> bool:
        """Pushes queued or running. Without ``acked`` a connection whose push is written
        and only waits for its proxy's answer (the answer wait, which holds it in flight
        for up to a second) is not pushing: the caller hands the ACKs over itself once
        the writes settle. A tree without a push queue of that shape counts every
        pending push."""
        pushes = getattr(self.discovery, "pushes", None)
        queue, workers = getattr(pushes, "queue", None), getattr(pushes, "workers", None)
        if acked or queue is None or not hasattr(workers, "running"):
            return bool(self.discovery.pending_pushes())
        return bool(queue.pending() or workers.running())

    async def quiet(self) -> None:
        """Until :meth:`idle`, polling."""
        deadline = time.monotonic() + ROUND_TIMEOUT
        while not self.idle():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.label}: pushes never settled")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self.discovery.close()
        for connection in self.connections:
            connection.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


class _Context:
    """What the servicer's own writer loop of a tree before metrics writes to."""

    def __init__(self, write: Write) -> None:
        self.write = write


def _answered(connection: Any) -> bool:
    return all(w.nonce_acked == w.nonce_sent for w in connection.sotw.watches.values())
