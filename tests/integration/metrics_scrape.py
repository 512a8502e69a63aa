"""Scraping ``/metrics`` over HTTP and reading it back with prometheus_client's own parser.

``MetricsPlane`` is an in-process control plane (``ControlPlane``: store, discovery
server, grpc.aio) plus its admin app with ``/metrics`` on a loopback port of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import aiohttp
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families

from pilothouse.admin.app import build_admin_app
from pilothouse.admin.metrics import ServerMetrics, metrics_routes, server_metrics
from pilothouse.admin.server import AdminServer
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.e2e.harness.control_plane import ControlPlane


@dataclass(frozen=True)
class Scrape:
    """One answer of ``/metrics``: its text, content type and parsed families."""

    text: str
    content_type: str
    families: dict[str, Metric]

    def sample(self, name: str, **labels: str) -> float:
        """The value of the sample ``name`` with exactly ``labels``; 0 when there is none
        (a counter nobody has incremented has no series yet)."""
        for family in self.families.values():
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return float(sample.value)
        return 0.0

    def count(self, histogram: str, **labels: str) -> float:
        """How many observations a histogram (or one of its labelled children) holds."""
        return self.sample(f"{histogram}_count", **labels)

    def type_of(self, family: str) -> str:
        return self.families[family].type

    def sample_names(self) -> set[str]:
        """Every sample name as written in the exposition text."""
        names = set()
        for line in self.text.splitlines():
            if line and not line.startswith("#"):
                names.add(line.split("{", 1)[0].split(" ", 1)[0])
        return names


def parse(text: str, content_type: str = "") -> Scrape:
    families = {family.name: family for family in text_string_to_metric_families(text)}
    return Scrape(text, content_type, families)


async def scrape(port: int) -> Scrape:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200, await response.text()
        return parse(await response.text(), response.headers.get("Content-Type", ""))


@dataclass
class MetricsPlane:
    """A control plane with its admin app (``/metrics``) on its own port."""

    plane: ControlPlane = field(default_factory=ControlPlane)
    metrics: ServerMetrics | None = None
    admin: AdminServer | None = None
    admin_port: int = 0

    @property
    def discovery(self) -> DiscoveryServer:
        assert self.plane.discovery is not None
        return self.plane.discovery

    async def start(self) -> None:
        await self.plane.start()
        view = DiscoveryDebugView(self.discovery)
        self.metrics = server_metrics(view)
        self.admin = AdminServer(
            build_admin_app(view, routes=metrics_routes(self.metrics.registry))
        )
        self.admin_port = await self.admin.start("127.0.0.1", 0)

    async def stop(self) -> None:
        if self.admin is not None:
            await self.admin.stop()
            self.admin = None
        await self.plane.stop()

    async def scrape(self) -> Scrape:
        return await scrape(self.admin_port)
