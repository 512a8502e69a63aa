"""A chain of real processes: pilothouse A → pilothouse B → Envoy carrying real HTTP.

A is ``pilothouse serve --role config-server`` over a directory of files; B is
``pilothouse serve --config-source xds://A`` (MCP over xDS) or ``mcp://A`` (legacy MCP);
a real Envoy attached to B listens on a Sidecar egress listener (127.0.0.1, capture
NONE) and carries requests to a local upstream. Editing the file on A changes where
Envoy's requests go; stopping A leaves B and its Envoy serving the last config;
restarting A resynchronises B.
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
from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port, wait_for_port, wait_for_port_closed
from tests.e2e.harness.upstreams import UpstreamPool

NODE = "sidecar~127.0.0.1~sleep-1.shop~shop.svc.cluster.local"
MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: httpbin, namespace: shop}}
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: {listen}, name: http, protocol: HTTP}}]
  endpoints: [{{address: 127.0.0.1, ports: {{http: {upstream}}}}}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: default, namespace: shop}}
spec:
  egress:
  - port: {{number: {listen}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    captureMode: NONE
    hosts: ["./*"]
"""
FAST = {
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.05",
    "PILOTHOUSE_FILE_DEBOUNCE": "0.05",
    "PILOTHOUSE_DRAIN_SECONDS": "0.5",
    "PILOTHOUSE_MCP_QUIESCE": "0.05",
    "PILOTHOUSE_MCP_MAX_WAIT": "0.2",
}


class Pilothouse:
    """``pilothouse serve`` as a child process on ports chosen by the test."""

    def __init__(self, name: str, workdir: Path, *args: str, xds_port: int = 0) -> None:
        self.name = name
        self.workdir = workdir
        self.args = args
        self.xds_port = xds_port or free_port()
        self.admin_port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    async def start(self) -> None:
        self._log = open(self.workdir / f"{self.name}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        self._process = subprocess.Popen(
            [sys.executable, "-m", "pilothouse.cli.main", "serve", *self.args,
             "--xds-address", f"127.0.0.1:{self.xds_port}",
             "--admin-address", f"127.0.0.1:{self.admin_port}", "--log-level", "info"],
            stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, **FAST},
            start_new_session=True,
        )  # fmt: skip
        await wait_for_port(self.admin_port, timeout=20)

    async def ready(self) -> bool:
        try:
            return (await fetch("127.0.0.1", self.admin_port, "/ready", timeout=1)).status == 200
        except OSError:
            return False

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
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob(f"{self.name}-*"))
        )


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        await asyncio.sleep(0.05)


@pytest.fixture
async def upstreams() -> AsyncIterator[UpstreamPool]:
    pool = UpstreamPool()
    try:
        yield pool
    finally:
        await pool.close_all()


@pytest.mark.parametrize("scheme", ["xds", "mcp"])
async def test_envoy_follows_config_through_two_pilothouses(
    tmp_path: Path, envoy_factory: EnvoyFleet, upstreams: UpstreamPool, scheme: str
) -> None:
    first = await upstreams.start("httpbin-1")
    second = await upstreams.start("httpbin-2")
    listen = free_port()
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    entry = mesh / "httpbin.yaml"
    entry.write_text(MESH.format(upstream=first.port, listen=listen))
    a = Pilothouse("a", tmp_path, "--role", "config-server", "--config", str(mesh))
    b = Pilothouse("b", tmp_path, "--config-source", f"{scheme}://127.0.0.1:{a.xds_port}")
    try:
        await a.start()
        await b.start()
        await eventually(b.ready, 20, "B synced from A")
        options = EnvoyBootstrapOptions(
            node_id=NODE, xds_port=b.xds_port, admin_port=0, transport=XdsTransport.DELTA
        )
        await envoy_factory(envoy_bootstrap(options))
        await wait_for_port(listen, timeout=10)

        async def served_by(name: str) -> bool:
            report = await send_requests(
                "127.0.0.1", listen, 5, authority=f"httpbin.shop.svc.cluster.local:{listen}"
            )
            return set(report.upstreams) == {name} and report.ok == 5

        await eventually(lambda: served_by("httpbin-1"), 10, "HTTP through Envoy via B")

        entry.write_text(MESH.format(upstream=second.port, listen=listen))
        await eventually(lambda: served_by("httpbin-2"), 10, "an edit on A reaches Envoy via B")

        await a.stop()
        await asyncio.sleep(1.0)
        assert await served_by("httpbin-2"), "B and its Envoy keep the last config"
        assert await b.ready()

        entry.write_text(MESH.format(upstream=first.port, listen=listen))
        await a.start()
        await eventually(lambda: served_by("httpbin-1"), 15, "restarted A resynchronises B")
    finally:
        with contextlib.suppress(Exception):
            await b.stop()
        with contextlib.suppress(Exception):
            await a.stop()
        print(a.output(), b.output())  # shown by pytest only when the test failed
