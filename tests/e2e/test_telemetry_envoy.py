"""Telemetry changing what a real Envoy does: access log lines, their filter, their
absence for a workload that turns them off, and spans sent to a local collector.

One sidecar Envoy (``client-1.tel``, labels ``app: client``) for the module, its
Sidecar egress listener bound on 127.0.0.1, routing to a local ``web`` upstream. The
mesh config defines two ``envoyFileAccessLog`` providers with text formats (``lines``,
and ``witness``, which no test turns off) and a ``zipkin`` provider whose service's
endpoint is another local upstream (the collector). Each test applies the Telemetry
objects it wants and waits, against a deadline, until Envoy shows them.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pilothouse.admin.telemetryz import telemetryz
from pilothouse.bootstrap.envoy import XdsTransport
from pilothouse.config.meshconfig import load_mesh_config
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.e2e.harness.client import fetch
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.upstreams import Upstream, UpstreamPool
from tests.e2e.traffic_mesh import fqdn, render, service, sidecar, sidecar_bootstrap

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAMESPACE = "tel"
TIMEOUT = 15.0
HCM = "envoy.filters.network.http_connection_manager"
FORMAT = "tel %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE%"
_numbers = itertools.count()


def mesh_config(lines: Path, witness: Path) -> str:
    return f"""\
extensionProviders:
- name: lines
  envoyFileAccessLog: {{path: {lines}, logFormat: {{text: "{FORMAT}"}}}}
- name: witness
  envoyFileAccessLog: {{path: {witness}, logFormat: {{text: "{FORMAT}"}}}}
- name: zipkin
  zipkin: {{service: {fqdn("zipkin", "obs")}, port: 9411}}
"""


def telemetry(name: str, spec: dict[str, Any]) -> str:
    return render(
        {
            "apiVersion": "telemetry.istio.io/v1",
            "kind": "Telemetry",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec,
        }
    )


NAMESPACE_WIDE = {
    "accessLogging": [{"providers": [{"name": "lines"}, {"name": "witness"}]}],
    "tracing": [{"providers": [{"name": "zipkin"}], "randomSamplingPercentage": 100}],
    "metrics": [{"providers": [{"name": "prometheus"}]}],
}


@dataclass
class Mesh:
    plane: ControlPlane
    envoy: EnvoyProcess
    port: int
    lines: Path
    witness: Path
    collector: Upstream

    async def get(self, path: str, **headers: str) -> int:
        web = fqdn("web", NAMESPACE)
        response = await fetch(LOOPBACK, self.port, path, headers=headers, authority=web)
        return response.status

    async def hcm(self) -> dict[str, Any]:
        """The typed config of the egress listener's connection manager, as Envoy holds it
        (only an accepted listener is in ``dynamic_listeners`` ``active_state``)."""
        for config in (await self.envoy.config_dump())["configs"]:
            for entry in config.get("dynamic_listeners", []):
                listener = entry.get("active_state", {}).get("listener", {})
                if listener.get("address", {}).get("socket_address", {}).get("port_value") != (
                    self.port
                ):
                    continue
                for chain in listener.get("filter_chains", []):
                    for found in chain.get("filters", []):
                        if found["name"] == HCM:
                            return dict(found["typed_config"])
        return {}


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.1)


def logged(path: Path) -> str:
    return path.read_text() if path.exists() else ""


async def until_logged(mesh: Mesh, file: Path, request: str, **headers: str) -> None:
    """Send ``request`` until its line is in ``file`` (Envoy may still hold the old
    listener for a moment after a push)."""

    async def written() -> bool:
        marker = f"{request}-{next(_numbers)}"
        assert await mesh.get(marker, **headers) == 200
        for _ in range(20):
            if f"tel GET {marker} 200\n" in logged(file):
                return True
            await asyncio.sleep(0.05)
        return False

    await eventually(written, f"a line for {request} is in {file.name}")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    root = tmp_path_factory.mktemp("telemetry")
    lines, witness = root / "lines.log", root / "witness.log"
    pool = UpstreamPool()
    fleet = EnvoyFleet(root / "envoys")
    plane = ControlPlane()
    port = free_port()
    try:
        web = await pool.start("web")
        collector = await pool.start("zipkin")
        plane.apply_yaml(
            render(
                service("web", NAMESPACE, port, [(web, {})]),
                service("zipkin", "obs", 9411, [(collector, {})]),
                sidecar(NAMESPACE, port, hosts=("./*", "obs/*")),
            )
        )
        await plane.start()
        assert plane.discovery is not None
        plane.discovery.set_mesh(load_mesh_config(mesh_config(lines, witness), "m.yaml").mesh)
        plane.apply_yaml(telemetry("logs", NAMESPACE_WIDE))
        bootstrap = sidecar_bootstrap(NAMESPACE, plane.port, XdsTransport.SOTW)
        envoy = await fleet(bootstrap, extra_args=("--file-flush-interval-msec", "20"))
        await wait_for_port(port, timeout=10)
        yield Mesh(plane, envoy, port, lines, witness, collector)
    finally:
        print(fleet.describe())
        await fleet.stop_all()
        await plane.stop()
        await pool.close_all()


async def test_lines_have_the_provider_s_format_and_spans_reach_the_collector(mesh: Mesh) -> None:
    mesh.plane.apply_yaml(telemetry("logs", NAMESPACE_WIDE))
    await until_logged(mesh, mesh.lines, "/first")
    manager = await mesh.hcm()
    lines, _ = manager["access_log"]
    assert lines["typed_config"]["log_format"]["text_format_source"] == {
        "inline_string": FORMAT + "\n"
    }
    tracing = manager["tracing"]
    assert tracing["provider"]["name"] == "envoy.tracers.zipkin"
    zipkin = tracing["provider"]["typed_config"]
    assert zipkin["collector_service"]["http_uri"]["cluster"] == (
        f"outbound|9411||{fqdn('zipkin', 'obs')}"
    )
    assert tracing["random_sampling"] == {"value": 100}

    async def spans_sent() -> bool:
        await mesh.get(f"/traced-{next(_numbers)}")
        return mesh.collector.paths["/api/v2/spans"] > 0

    await eventually(spans_sent, "Envoy posts spans to the zipkin collector")
    assert mesh.plane.discovery is not None
    (view,) = telemetryz(DiscoveryDebugView(mesh.plane.discovery))["proxies"]
    assert view["telemetry"] == ["tel/logs"]
    assert view["client"]["tracing"] == {"provider": "zipkin", "sampling": 100.0, "tags": []}
    assert view["notApplied"] == [
        "metrics: accepted; not applied (Istio's stats filter needs Istio's proxy build)"
    ]


async def test_a_filter_edit_reaches_envoy_live(mesh: Mesh) -> None:
    filtered = {
        **NAMESPACE_WIDE,
        "accessLogging": [
            {
                "providers": [{"name": "lines"}, {"name": "witness"}],
                "filter": {"expression": "request.headers['x-log'] == 'yes'"},
            }
        ],
    }
    mesh.plane.apply_yaml(telemetry("logs", filtered))

    async def filter_held() -> bool:
        logs = (await mesh.hcm()).get("access_log", [])
        return bool(logs) and "filter" in logs[0]

    await eventually(filter_held, "Envoy holds the CEL filter")
    quiet = f"/quiet-{next(_numbers)}"
    assert await mesh.get(quiet) == 200
    await until_logged(mesh, mesh.witness, "/loud", **{"x-log": "yes"})
    assert f" {quiet} " not in logged(mesh.lines) + logged(mesh.witness)
    mesh.plane.apply_yaml(telemetry("logs", NAMESPACE_WIDE))
    await until_logged(mesh, mesh.lines, "/unfiltered")


async def test_disabled_for_the_workload_stops_its_lines(mesh: Mesh) -> None:
    mesh.plane.apply_yaml(telemetry("logs", NAMESPACE_WIDE))
    quiet = {
        "selector": {"matchLabels": {"app": "client"}},
        "accessLogging": [
            {"providers": [{"name": "witness"}]},
            {"providers": [{"name": "lines"}], "disabled": True},
        ],
    }
    mesh.plane.apply_yaml(telemetry("client-quiet", quiet))

    async def one_log() -> bool:
        return len((await mesh.hcm()).get("access_log", [])) == 1

    await eventually(one_log, "Envoy holds the witness log alone")
    assert mesh.plane.discovery is not None
    (view,) = telemetryz(DiscoveryDebugView(mesh.plane.discovery))["proxies"]
    assert view["telemetry"] == ["tel/logs", "tel/client-quiet"]
    assert view["client"]["accessLogs"] == [{"provider": "witness", "filter": ""}]
    before = logged(mesh.lines)
    await until_logged(mesh, mesh.witness, "/disabled")
    await until_logged(mesh, mesh.witness, "/disabled-again")  # a flush later
    assert logged(mesh.lines) == before
    mesh.plane.delete("Telemetry", NAMESPACE, "client-quiet")
    await until_logged(mesh, mesh.lines, "/enabled")
