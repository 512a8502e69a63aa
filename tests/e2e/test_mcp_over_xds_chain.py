"""A chain A → B → Envoy: pilothouse B takes its config from pilothouse A over MCP-over-xDS.

A is a real ``pilothouse serve --config DIR`` process. B runs **in-process** for now: an
:class:`XdsUpstreamSource` pointed at A, an AggregateStore over its store, and a
DiscoveryServer served by grpc.aio (as ``tests/e2e/harness/control_plane.py`` does),
because ``serve`` cannot yet be given an ``xds://`` source; once ``serve --mesh FILE``
reads ``configSources`` this becomes a second process. A real Envoy attached to B gets
the clusters and endpoints of a ServiceEntry written in A's files; editing the file on A
changes Envoy's endpoints (through B); stopping A leaves B and its Envoy on the last
config; restarting A on the same port resynchronises B (and Envoy).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

import pytest

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from pilothouse.config.model import ConfigKey
from pilothouse.sources.aggregate import AggregateStore
from pilothouse.sources.upstream_backoff import Backoff
from pilothouse.sources.xds_upstream import UpstreamSettings, XdsUpstreamSource
from pilothouse.xds.server.ads import add_discovery_services, new_grpc_server
from pilothouse.xds.server.discovery import DiscoveryServer
from tests.e2e.harness.control_plane import FAST
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port, wait_for_port, wait_for_port_closed

NODE = "sidecar~127.0.0.1~sleep-1.shop~shop.svc.cluster.local"
CLUSTER = "outbound|8000||httpbin.shop.svc.cluster.local"
SERVICE_ENTRY = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: httpbin, namespace: shop}}
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: 8000, name: http, protocol: HTTP}}]
  endpoints: [{{address: 127.0.0.1, ports: {{http: {port}}}}}]
"""


class UpstreamProcess:
    """pilothouse A: ``serve --config DIR`` as a child process on fixed ports."""

    def __init__(self, config: Path, xds_port: int, workdir: Path) -> None:
        self.config = config
        self.xds_port = xds_port
        self.admin_port = free_port()
        self.workdir = workdir
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    async def start(self) -> None:
        self._log = open(self.workdir / f"pilothouse-a-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        self._process = subprocess.Popen(
            [sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(self.config),
             "--xds-address", f"127.0.0.1:{self.xds_port}",
             "--admin-address", f"127.0.0.1:{self.admin_port}", "--log-level", "info"],
            stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, "PILOTHOUSE_DEBOUNCE_AFTER": "0.05",
                 "PILOTHOUSE_FILE_DEBOUNCE": "0.05", "PILOTHOUSE_DRAIN_SECONDS": "0.5"},
            start_new_session=True,
        )  # fmt: skip
        await wait_for_port(self.xds_port, timeout=20)

    async def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self._process.wait, 15)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
            assert self._process.returncode == 0, self.output()
        if self._log is not None:
            self._log.close()
            self._log = None
        await wait_for_port_closed(self.xds_port)

    def output(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.workdir.glob("pilothouse-a-*"))


class RelayPlane:
    """pilothouse B, in-process: A's config through an XdsUpstreamSource, served over xDS."""

    def __init__(self, upstream_port: int) -> None:
        settings = UpstreamSettings(node_name="pilothouse-b", backoff=Backoff(0.05, 0.5))
        self.source = XdsUpstreamSource("127.0.0.1", upstream_port, settings=settings)
        self.store = AggregateStore([self.source.store])
        self.discovery = DiscoveryServer(self.store, settings=FAST)
        self.port = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._grpc = new_grpc_server(FAST.max_receive_bytes)

    async def start(self) -> None:
        add_discovery_services(self._grpc, self.discovery)
        self.port = self._grpc.add_insecure_port("127.0.0.1:0")
        await self._grpc.start()
        self._tasks = [
            asyncio.create_task(self.source.run()),
            asyncio.create_task(self.discovery.run()),
        ]
        await asyncio.wait_for(self.discovery.wait_ready(), 20)

    async def stop(self) -> None:
        self.discovery.close()
        self.source.close()
        await self._grpc.stop(0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.store.close()


async def endpoints_of(envoy: EnvoyProcess) -> list[int]:
    for status in (await envoy.clusters_json()).get("cluster_statuses", []):
        if status["name"] == CLUSTER:
            hosts = status.get("host_statuses", [])
            return sorted(h["address"]["socket_address"]["port_value"] for h in hosts)
    return []


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        await asyncio.sleep(0.05)


@pytest.fixture
async def chain(tmp_path: Path) -> AsyncIterator[tuple[UpstreamProcess, RelayPlane, Path]]:
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    entry = mesh / "httpbin.yaml"
    entry.write_text(SERVICE_ENTRY.format(port=18001))
    upstream = UpstreamProcess(mesh, free_port(), tmp_path)
    relay = RelayPlane(upstream.xds_port)
    try:
        await upstream.start()
        await relay.start()
        yield upstream, relay, entry
    finally:
        with contextlib.suppress(Exception):
            await relay.stop()
        with contextlib.suppress(Exception):
            await upstream.stop()
        print(upstream.output())  # shown by pytest only when the test failed


async def test_envoy_follows_config_through_two_pilothouses(
    chain: tuple[UpstreamProcess, RelayPlane, Path], envoy_factory: EnvoyFleet
) -> None:
    upstream, relay, entry = chain
    assert relay.source.has_synced()
    assert relay.store.get(ConfigKey("ServiceEntry", "shop", "httpbin")) is not None
    options = EnvoyBootstrapOptions(
        node_id=NODE, xds_port=relay.port, admin_port=0, transport=XdsTransport.SOTW
    )
    envoy = await envoy_factory(envoy_bootstrap(options))

    async def ports_are(expected: list[int]) -> bool:
        return await endpoints_of(envoy) == expected

    await eventually(lambda: ports_are([18001]), 10, "Envoy gets A's ServiceEntry via B")

    entry.write_text(SERVICE_ENTRY.format(port=18002))
    await eventually(lambda: ports_are([18002]), 10, "an edit on A reaches Envoy via B")

    await upstream.stop()

    async def disconnected() -> bool:
        return not relay.source.status().connected

    await eventually(disconnected, 10, "B notices A is gone")
    await asyncio.sleep(1.0)
    assert await endpoints_of(envoy) == [18002], "Envoy keeps the last config"
    assert relay.store.get(ConfigKey("ServiceEntry", "shop", "httpbin")) is not None
    assert await envoy.stat("control_plane.connected_state") == 1, "Envoy stays on B"

    entry.write_text(SERVICE_ENTRY.format(port=18003))
    await upstream.start()
    await eventually(lambda: ports_are([18003]), 15, "a restarted A resynchronises B")
    assert relay.source.status().connected
    assert await envoy.stat("cluster_manager.cds.update_rejected") == 0
