"""The admin API and ControlZ of a real ``pilothouse serve`` process, seen by a real Envoy.

The process serves a directory to one Envoy sidecar bootstrapped by ``pilothouse
bootstrap``. Over HTTP the test changes the debounce time (the next config change
reaches Envoy that much later), forces a full push (Envoy accepts CDS and LDS again),
disconnects the proxy (Envoy opens a new ADS stream) and sets a scope's log level on
ControlZ; the process's own log lines name each change with its old and new value and
the client's address. ControlZ also shows the collector thresholds the process was given
(``PILOTHOUSE_GC_THRESHOLD0``, ``1`` and ``2``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_ports
from tests.e2e.harness.serve_process import ServeProcess
from tests.integration.serve_in_process import service_entry, write_atomically

pytestmark = pytest.mark.timeout(120)

NODE = "sidecar~127.0.0.1~app-1.default~default.svc.cluster.local"
ADS_STREAMS = "cluster.xds-grpc.upstream_rq_total"
"""Envoy's count of requests on its xDS cluster: one per ADS stream it opened."""
CDS_ACCEPTED = "cluster_manager.cds.update_success"
GC_THRESHOLDS = {
    "PILOTHOUSE_GC_THRESHOLD0": "30000",
    "PILOTHOUSE_GC_THRESHOLD1": "15",
    "PILOTHOUSE_GC_THRESHOLD2": "0",
}
"""The collector thresholds the process is given (0: CPython's own, 10)."""
LDS_ACCEPTED = "listener_manager.lds.update_success"


async def call(port: int, method: str, path: str, value: object = None) -> tuple[int, Any]:
    data = None if value is None else json.dumps(value).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"http://{LOOPBACK}:{port}{path}", data=data) as response,
    ):
        return response.status, await response.json()


async def bootstrap(xds_port: int) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "pilothouse.cli.main", "bootstrap", "--node", NODE,
        "--xds-address", f"{LOOPBACK}:{xds_port}", "--admin-port", "0", "-o", "json",
    ]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode(errors="replace")
    document: dict[str, Any] = json.loads(out)
    return document


async def grows(envoy: EnvoyProcess, stat: str, before: int, timeout: float = 15.0) -> float:
    """Wait until ``stat`` exceeds ``before``; the monotonic time it did."""
    deadline = time.monotonic() + timeout
    while await envoy.stat(stat, default=0) <= before:
        assert time.monotonic() < deadline, f"{stat} stayed at {before}"
        await asyncio.sleep(0.02)
    return time.monotonic()


@pytest.fixture
async def running(
    tmp_path: Path, envoy_factory: EnvoyFleet
) -> AsyncIterator[tuple[ServeProcess, int, EnvoyProcess]]:
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "alpha.yaml").write_text(service_entry("alpha"))
    xds, admin, ctrlz = free_ports(3)
    plane = ServeProcess(
        [mesh],
        xds_port=xds,
        admin_port=admin,
        log_path=tmp_path / "pilothouse.log",
        log_level="info",
        environment={
            "PILOTHOUSE_CTRLZ_ADDRESS": f"{LOOPBACK}:{ctrlz}",
            **GC_THRESHOLDS,
        },
    ).start()
    try:
        document, _ = await asyncio.gather(bootstrap(xds), plane.wait_ready())
        envoy = await envoy_factory(document)
        await grows(envoy, LDS_ACCEPTED, 0)
        yield plane, ctrlz, envoy
    finally:
        print(plane.log_tail(40))  # shown when the test failed
        assert await plane.stop() == 0


def log_lines(plane: ServeProcess, message: str) -> list[str]:
    return [line for line in plane.log_path.read_text().splitlines() if f" {message} " in line]


async def test_knobs_push_and_disconnect_reach_a_real_envoy(
    running: tuple[ServeProcess, int, EnvoyProcess],
) -> None:
    plane, _, envoy = running
    mesh = plane.config_dirs[0]
    admin = plane.admin_port

    # The debounce time: a change reaches Envoy no sooner than the new quiet time.
    status, body = await call(admin, "PUT", "/admin/knobs/debounce.after", 2.5)
    assert (status, body) == (200, {"name": "debounce.after", "old": 0.1, "new": 2.5})
    before = await envoy.stat(CDS_ACCEPTED)
    written = time.monotonic()
    write_atomically(mesh / "beta.yaml", service_entry("beta"))
    assert await grows(envoy, CDS_ACCEPTED, before) - written >= 2.5
    await call(admin, "PUT", "/admin/knobs/debounce.after", "100ms")
    before = await envoy.stat(CDS_ACCEPTED)
    written = time.monotonic()
    write_atomically(mesh / "gamma.yaml", service_entry("gamma"))
    assert await grows(envoy, CDS_ACCEPTED, before) - written < 2.0

    # A forced full push: Envoy is sent (and accepts) its clusters and listeners again.
    cds, lds = await envoy.stat(CDS_ACCEPTED), await envoy.stat(LDS_ACCEPTED)
    status, body = await call(admin, "POST", "/admin/push")
    assert (status, body) == (202, {"push": "queued", "connections": 1})
    await grows(envoy, CDS_ACCEPTED, cds)
    await grows(envoy, LDS_ACCEPTED, lds)

    # Disconnected, Envoy opens a new stream and gets its config again.
    streams = await envoy.stat(ADS_STREAMS)
    status, body = await call(admin, "POST", "/admin/disconnect?proxyID=app-1.default")
    assert status == 200 and len(body["disconnected"]) == 1
    await grows(envoy, ADS_STREAMS, streams)
    await envoy.wait_stat("control_plane.connected_state", at_least=1, timeout=15)

    (debounce_slow, debounce_fast) = log_lines(plane, "knob changed")
    assert debounce_slow.endswith(
        "info admin knob changed knob=debounce.after old=0.1 new=2.5 by=127.0.0.1 via=admin-api"
    )
    assert "old=2.5 new=0.1 by=127.0.0.1" in debounce_fast
    (pushed,) = log_lines(plane, "full push requested")
    assert pushed.endswith("connections=1 by=127.0.0.1 via=admin-api")
    (disconnected,) = log_lines(plane, "proxy disconnected")
    assert " proxy=app-1.default connections=app-1.default-1 by=127.0.0.1 " in disconnected


async def test_a_scope_level_set_on_controlz_changes_what_the_process_logs(
    running: tuple[ServeProcess, int, EnvoyProcess],
) -> None:
    plane, ctrlz, envoy = running
    # ControlZ's memory topic shows the collector thresholds the process was given
    status, memory = await call(ctrlz, "GET", "/memj")
    assert status == 200
    assert (memory["gc"]["thresholds"], memory["gc"]["enabled"]) == ([30000, 15, 10], True)
    (announced,) = log_lines(plane, "garbage collector")
    assert announced.endswith("thresholds=30000,15,10")

    assert log_lines(plane, "proxy connected") == [], "debug lines are off at info"
    status, body = await call(ctrlz, "PUT", "/scopej/xds", {"output_level": "debug"})
    assert (status, body["output_level"]) == (202, "debug")
    streams = await envoy.stat(ADS_STREAMS)
    await call(plane.admin_port, "POST", "/admin/disconnect?proxyID=app-1.default")
    await grows(envoy, ADS_STREAMS, streams)
    deadline = time.monotonic() + 10
    while not log_lines(plane, "proxy connected"):
        assert time.monotonic() < deadline, "no debug line after the level was set"
        await asyncio.sleep(0.05)
    (changed,) = log_lines(plane, "log scope changed")
    assert changed.endswith(
        "scope=xds field=output_level old=info new=debug by=127.0.0.1 via=controlz"
    )
    status, listed = await call(ctrlz, "GET", "/scopej/")
    assert status == 200
    assert {s["name"]: s["output_level"] for s in listed}["xds"] == "debug"
