"""One gateway Envoy shared by the traffic tests of one module, and each test's turn on it.

Starting an Envoy and waiting for it to converge costs a traffic test more than the
traffic it sends.  A module whose tests all route through an ingress gateway shares one:
:class:`SharedGateway` is an in-process pilothouse (:class:`ControlPlane`) and one real
Envoy gateway (``ingressgateway-1.istio-system``, labels ``istio: ingressgateway``) over
one ADS transport, started once per module and transport.

Each test takes a turn (:class:`GatewayTurn`) and keeps to its own resources: its own
namespace, its own Gateway on its own free port (the gateway selects Gateways by label in
every namespace, as istiod does), its own services, routes and local upstreams.
:meth:`GatewayTurn.serving` applies the test's objects and waits until Envoy routes them;
leaving it deletes them again and waits until the test's port is closed, so the next
test finds the gateway as the one before it did: no listener, route or cluster of
another test's namespace left on it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from pilothouse.bootstrap.envoy import XdsTransport
from pilothouse.config.load import Loader
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import wait_for_port, wait_for_port_closed
from tests.e2e.harness.upstreams import Upstream, UpstreamBehaviour, UpstreamPool
from tests.e2e.traffic_mesh import gateway_bootstrap

GATEWAY_NAMESPACE = "istio-system"
"""Where the shared gateway proxy itself lives (no test's namespace)."""


@dataclass
class SharedGateway:
    """An in-process pilothouse and one Envoy gateway on it, over ``transport``."""

    transport: XdsTransport
    fleet: EnvoyFleet
    plane: ControlPlane = field(default_factory=ControlPlane)
    envoy: EnvoyProcess | None = None

    async def start(self) -> SharedGateway:
        """Serve an empty mesh and start the gateway once it is ready."""
        await self.plane.start()
        bootstrap = gateway_bootstrap(GATEWAY_NAMESPACE, self.plane.port, self.transport)
        self.envoy = await self.fleet(bootstrap)
        return self

    async def stop(self) -> None:
        try:
            print(self.fleet.describe())  # shown by pytest only when a test failed
            await self.fleet.stop_all()
        finally:
            await self.plane.stop()

    def apply(self, mesh: str) -> list[ConfigKey]:
        """Apply the objects of ``mesh`` (YAML); their keys, to delete them again."""
        configs = Loader(SCHEMAS, source="test").load_strict(mesh, "test.yaml")
        for config in configs:
            self.plane.store.apply(config)
        return [config.key for config in configs]

    def delete(self, keys: list[ConfigKey]) -> None:
        for key in keys:
            self.plane.store.delete(key)

    async def converged(self, timeout: float = 10.0) -> None:
        """Wait until Envoy warms no cluster and no listener.

        Called once the test's port accepts: the listener came in the same push as its
        clusters and after them on the stream, so by then Envoy holds the clusters, and
        none warming means each has its endpoints (a fresh Envoy waits for this itself
        before it asks for listeners; a running one does not)."""
        assert self.envoy is not None
        deadline = time.monotonic() + timeout
        names = ("cluster_manager.warming_clusters", "listener_manager.total_listeners_warming")
        while any([await self.envoy.stat(name) for name in names]):
            assert time.monotonic() < deadline, self.fleet.describe()
            await asyncio.sleep(0.02)


@dataclass
class GatewayTurn:
    """One test on a :class:`SharedGateway`: its upstreams, and its mesh while it runs."""

    gateway: SharedGateway
    upstreams: UpstreamPool = field(default_factory=UpstreamPool)
    _applied: list[ConfigKey] = field(default_factory=list)

    @property
    def transport(self) -> XdsTransport:
        return self.gateway.transport

    async def upstream(self, name: str, behaviour: UpstreamBehaviour | None = None) -> Upstream:
        """A local upstream of this test, closed when the test ends."""
        return await self.upstreams(name, behaviour)

    @asynccontextmanager
    async def serving(self, mesh: str, port: int) -> AsyncIterator[None]:
        """``mesh`` served to the gateway, whose listener on ``port`` routes it."""
        self._applied = self.gateway.apply(mesh)
        try:
            await wait_for_port(port, timeout=10)
            await self.gateway.converged()
            yield
        finally:
            self.gateway.delete(self._applied)
            self._applied = []
        await wait_for_port_closed(port, timeout=10)  # (not after a failure: it is reported)

    async def close(self) -> None:
        """Delete whatever is still applied (a test that failed inside ``serving`` already
        did) and close the upstreams."""
        try:
            self.gateway.delete(self._applied)
            self._applied = []
        finally:
            await self.upstreams.close_all()
