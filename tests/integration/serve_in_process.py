"""``pilothouse serve`` in the test's own event loop: the real wiring of ``cli/serve.py``
(file source, discovery server, gRPC, admin HTTP with the admin API, ControlZ) on
loopback ports chosen at run time, with a handle on the discovery server it built and
a small JSON client for its HTTP ports. Simulated proxies (``pilothouse.loadtest``)
connect to it over real gRPC."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pilothouse.cli import serve as serve_module
from pilothouse.settings import Settings
from pilothouse.xds.server.discovery import DiscoveryServer

LOOPBACK_PORTS: Mapping[str, Any] = {
    "xds.address": "127.0.0.1:0",
    "xds.tls_address": "",  # no TLS port (nor CA): not what these tests are about
    "admin.address": "127.0.0.1:0",
    "ctrlz.address": "127.0.0.1:0",
    "drain_seconds": 0.5,
    "file_debounce": 0.02,
}

_UNSET = object()


def service_entry(name: str, address: str = "10.1.0.1", namespace: str = "default") -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  hosts: [{name}.example.com]
  ports: [{{number: 80, name: http, protocol: HTTP}}]
  resolution: STATIC
  endpoints: [{{address: {address}}}]
"""


def write_atomically(path: Path, text: str) -> None:
    """Write whole and rename into place, as a config tool would."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


@dataclass
class Answer:
    status: int
    body: Any
    """The JSON body (None when there is none, the text when it is not JSON)."""
    headers: Mapping[str, str]


@dataclass
class ServeInProcess:
    settings: Settings
    discovery: DiscoveryServer
    bound: serve_module.Bound
    config_dir: Path

    @property
    def xds_target(self) -> str:
        return f"127.0.0.1:{self.bound.xds_port}"

    async def request(
        self,
        method: str,
        path: str,
        value: object = _UNSET,
        *,
        port: int | None = None,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> Answer:
        """``method path`` on the admin port (or ``port``), with ``value`` sent as JSON
        (or ``body`` as is)."""
        data = body if value is _UNSET else json.dumps(value).encode()
        url = f"http://{host}:{port or self.bound.admin_port}{path}"
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, url, data=data, headers=headers) as response,
        ):
            text = await response.text()
            try:
                parsed: Any = json.loads(text) if text else None
            except ValueError:
                parsed = text
            return Answer(response.status, parsed, dict(response.headers))

    async def ctrlz(self, method: str, path: str, value: object = _UNSET, **kw: Any) -> Answer:
        return await self.request(method, path, value, port=self.bound.ctrlz_port, **kw)


@contextlib.asynccontextmanager
async def serve_in_process(
    monkeypatch: pytest.MonkeyPatch, config_dir: Path, overrides: Mapping[str, Any] = {}
) -> AsyncIterator[ServeInProcess]:
    """Run ``serve()`` over ``config_dir`` until the block ends."""
    built: list[DiscoveryServer] = []
    real = serve_module.DiscoveryServer

    def record(*args: Any, **kwargs: Any) -> DiscoveryServer:
        built.append(real(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(serve_module, "DiscoveryServer", record)
    settings = Settings().with_overrides(
        {"config_dirs": (config_dir,), **LOOPBACK_PORTS, **overrides}
    )
    stop = asyncio.Event()
    bound: list[serve_module.Bound] = []
    task = asyncio.create_task(serve_module.serve(settings, stop, bound.append))
    try:
        while not bound:
            if task.done():
                task.result()
                raise AssertionError("serve() returned before it listened")
            await asyncio.sleep(0.01)
        (discovery,) = built
        await asyncio.wait_for(discovery.wait_ready(), 15)
        yield ServeInProcess(settings, discovery, bound[0], config_dir)
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
