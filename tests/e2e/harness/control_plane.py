"""An in-process pilothouse control plane for end-to-end tests: store, discovery server, gRPC.

Tests drive it by editing its MemoryStore (``apply_yaml``, ``delete``), exactly as a
config source would, and read what it sent from its connections.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from pilothouse.config.load import Loader
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.ads import add_discovery_services, new_grpc_server
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings

FAST = XdsSettings(debounce=DebounceSettings(debounce_after=0.02, debounce_max=1.0))


@dataclass
class ControlPlane:
    """A DiscoveryServer over a MemoryStore, served on 127.0.0.1 by grpc.aio."""

    settings: XdsSettings = field(default_factory=lambda: FAST)
    store: MemoryStore = field(default_factory=lambda: MemoryStore("test"))
    port: int = 0
    kube: KubeFeeds | None = None
    """Kubernetes informers (or feeds standing in for them) for the service registry."""
    discovery: DiscoveryServer | None = None
    _grpc: object | None = None
    _task: asyncio.Task[None] | None = None

    def apply_yaml(self, text: str) -> None:
        for config in Loader(SCHEMAS, source="test").load_strict(text, "test.yaml"):
            self.store.apply(config)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.store.delete(ConfigKey(kind, namespace, name))

    async def start(self, port: int = 0) -> int:
        self.store.mark_synced()
        self.discovery = DiscoveryServer(self.store, settings=self.settings, kube=self.kube)
        server = new_grpc_server(self.settings)
        add_discovery_services(server, self.discovery)
        self.port = server.add_insecure_port(f"127.0.0.1:{port}")
        if self.port == 0:
            raise RuntimeError(f"could not bind 127.0.0.1:{port}")
        await server.start()
        self._grpc = server
        self._task = asyncio.create_task(self.discovery.run())
        await asyncio.wait_for(self.discovery.wait_ready(), 10)
        return self.port

    async def stop(self) -> None:
        if self.discovery is not None:
            self.discovery.close()
        if self._grpc is not None:
            await self._grpc.stop(0)  # type: ignore[attr-defined]
            self._grpc = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self.discovery = None

    def connections(self) -> list[Connection]:
        return [] if self.discovery is None else list(self.discovery.connections.values())

    def only_connection(self) -> Connection:
        (connection,) = self.connections()
        return connection
