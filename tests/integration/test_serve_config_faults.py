"""An in-process ``serve()`` on a copy of the example mesh, facing faults in its config
directory: the directory moved away and back (``/ready`` stays 200 and says why the
source is unavailable; proxies keep every cluster), and a file whose loading raises
(the loader monkeypatched to fail for that one file: nothing real fails on demand).

Clusters are read the way a REST-polling Envoy reads them (``POST
/v3/discovery:clusters`` on the admin port), from the real server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pilothouse.cli.serve import Bound, serve
from pilothouse.config.load import Loader, LoadResult
from pilothouse.settings import AdminSettings, DebounceSettings, Settings, XdsSettings

ROOT = Path(__file__).resolve().parents[2]
NODE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
REVIEWS_V1 = "outbound|9080|v1|reviews.bookinfo.svc.cluster.local"


@dataclass
class Served:
    mesh: Path
    admin_port: int
    session: aiohttp.ClientSession

    async def ready(self, *, as_json: bool = False) -> tuple[int, Any]:
        query = "?format=json" if as_json else ""
        url = f"http://127.0.0.1:{self.admin_port}/ready{query}"
        async with self.session.get(url) as response:
            body = await response.json() if as_json else await response.text()
            return response.status, body

    async def clusters(self) -> set[str]:
        request = {
            "node": {"id": NODE, "cluster": "productpage.bookinfo"},
            "type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        }
        url = f"http://127.0.0.1:{self.admin_port}/v3/discovery:clusters"
        async with self.session.post(url, json=request) as response:
            assert response.status == 200, await response.text()
            body = json.loads(await response.text())
        return {resource["name"] for resource in body["resources"]}


async def eventually(check: Callable[[], Any], timeout: float = 10.0) -> None:
    """Wait until the async ``check()`` returns something true."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"not reached within {timeout}s"
        await asyncio.sleep(0.05)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    mesh = tmp_path / "m"
    shutil.copytree(ROOT / "examples", mesh)
    settings = Settings(
        config_dirs=(mesh,),
        xds=XdsSettings(
            address="127.0.0.1:0",
            tls_address="",  # the TLS port and its CA are not what this tests
            debounce=DebounceSettings(debounce_after=0.02, debounce_max=0.5),
        ),
        admin=AdminSettings(address="127.0.0.1:0"),
        file_debounce=0.05,
        file_root_poll=0.1,
        drain_seconds=0.5,
    )
    stop = asyncio.Event()
    bound: list[Bound] = []
    task = asyncio.create_task(serve(settings, stop, bound.append))
    try:
        async with aiohttp.ClientSession() as session:
            while not bound:
                assert not task.done(), task
                await asyncio.sleep(0.01)
            plane = Served(mesh, bound[0].admin_port, session)

            async def ready() -> bool:
                return (await plane.ready())[0] == 200

            await eventually(ready)
            yield plane
            assert not task.done(), "serve() ended on its own"
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def test_directory_moved_away_stays_served_and_ready_says_why(served: Served) -> None:
    before = await served.clusters()
    assert REVIEWS_V1 in before
    status, text = await served.ready()
    assert status == 200
    assert text == f"ok\nconfig sources:\n  fs://{served.mesh}: available\n"

    aside = served.mesh.with_name("m.x")
    served.mesh.rename(aside)

    async def says_missing() -> bool:
        return "unavailable (missing)" in (await served.ready())[1]

    await eventually(says_missing)
    status, text = await served.ready()
    assert status == 200 and text.startswith("ok\n")
    status, body = await served.ready(as_json=True)
    assert status == 200 and body["ready"] is True and body["reasons"] == []
    (state,) = body["sources"]
    assert state["source"] == f"fs://{served.mesh}"
    assert (state["state"], state["reason"]) == ("unavailable", "missing")
    await asyncio.sleep(0.3)  # longer than the push debounce
    assert await served.clusters() == before

    routing = aside / "bookinfo" / "policies.yaml"
    routing.write_text(routing.read_text().replace("name: v1\n", "name: v1x\n", 1))
    aside.rename(served.mesh)

    async def v1_renamed() -> bool:
        return REVIEWS_V1.replace("|v1|", "|v1x|") in await served.clusters()

    await eventually(v1_renamed)
    assert REVIEWS_V1 not in await served.clusters()
    status, body = await served.ready(as_json=True)
    assert status == 200 and body["sources"][0]["state"] == "available"


async def test_a_file_whose_loading_raises_keeps_its_last_good_config(
    served: Served, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The file source's per-file boundary: a loader that raises (a stand-in for any
    future bug) for one file must not stop ``serve``; the other files' edits are served
    and that file keeps its last good objects."""
    caplog.set_level(logging.WARNING, logger="pilothouse.sources.fs")
    real = Loader.load_bytes

    def load_bytes(self: Loader, data: bytes, file: str) -> LoadResult:
        if file.endswith("policies.yaml"):
            raise RuntimeError("a deliberate failure")
        return real(self, data, file)

    monkeypatch.setattr(Loader, "load_bytes", load_bytes)
    bookinfo = served.mesh / "bookinfo"
    policies = bookinfo / "policies.yaml"
    policies.write_text(policies.read_text().replace("name: v1\n", "name: v1x\n", 1))
    services = bookinfo / "services.yaml"
    services.write_text(services.read_text() + EXTRA_SERVICE)

    async def extra_served() -> bool:
        return EXTRA_CLUSTER in await served.clusters()

    await eventually(extra_served)

    async def failure_logged() -> bool:
        return any("RuntimeError" in r.getMessage() for r in caplog.records)

    await eventually(failure_logged)
    (logged,) = [r.getMessage() for r in caplog.records if "RuntimeError" in r.getMessage()]
    assert logged.startswith(f"{policies}: internal error while reading this file")
    await asyncio.sleep(0.3)  # longer than the push debounce
    clusters = await served.clusters()
    assert REVIEWS_V1 in clusters and REVIEWS_V1.replace("|v1|", "|v1x|") not in clusters
    assert (await served.ready())[0] == 200

    monkeypatch.setattr(Loader, "load_bytes", real)
    policies.write_text(policies.read_text())  # touched: loads normally again

    async def v1_renamed() -> bool:
        return REVIEWS_V1.replace("|v1|", "|v1x|") in await served.clusters()

    await eventually(v1_renamed)


EXTRA_SERVICE = """\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: extra
  namespace: bookinfo
spec:
  hosts: [extra.bookinfo.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {number: 9080, name: http, protocol: HTTP}
  endpoints:
  - address: 127.0.0.1
"""
EXTRA_CLUSTER = "outbound|9080||extra.bookinfo.svc.cluster.local"
