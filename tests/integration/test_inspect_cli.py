"""`pilothouse inspect` against an in-process server and a stand-in Envoy admin API.

A raw ADS client ACKs clusters from a real DiscoveryServer (with the admin app on a real
socket); a small aiohttp app plays its Envoy's admin API and serves a config dump made
from exactly what the client received, or changed on purpose. That lets every kind of
difference and every exit status be checked quickly; the real Envoys are in
``tests/e2e/test_inspect_envoy.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

from pilothouse.admin.app import build_admin_app
from pilothouse.admin.debug_routes import debug_routes
from pilothouse.admin.server import AdminServer
from pilothouse.cli.main import main
from pilothouse.inspector.admin_address import ENVOY_ADMIN_ADDRESS
from pilothouse.protocol.type_urls import CDS
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.e2e.harness.control_plane import ControlPlane
from tests.integration.ads_stream import AdsStream, open_ads

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  hosts: [db.data.svc.cluster.local]
  resolution: DNS
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  endpoints: [{address: db.example.com}]
"""
NODE = "sidecar~10.0.0.1~app-1.data~data.svc.cluster.local"
OTHER = "sidecar~10.0.0.2~app-2.data~data.svc.cluster.local"
DB = "outbound|5432||db.data.svc.cluster.local"
CLUSTERS_DUMP = "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"


@dataclass
class FakeEnvoy:
    """An Envoy admin API serving ``dump`` at ``/config_dump``."""

    node_id: str
    clusters: list[dict[str, Any]] = field(default_factory=list)
    address: str = ""

    def dump(self) -> dict[str, Any]:
        return {
            "configs": [
                {
                    "@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump",
                    "bootstrap": {"node": {"id": self.node_id}},
                },
                {
                    "@type": CLUSTERS_DUMP,
                    "dynamic_active_clusters": [
                        {"version_info": "1", "cluster": c} for c in self.clusters
                    ],
                },
            ]
        }

    async def config_dump(self, request: web.Request) -> web.Response:
        assert "include_eds" in request.query
        return web.json_response(self.dump())


@dataclass
class Setup:
    plane: ControlPlane
    admin: str
    envoys: dict[str, FakeEnvoy]
    streams: list[AdsStream]


async def connect(plane: ControlPlane, envoy: FakeEnvoy) -> AdsStream:
    """An ADS client for ``envoy``'s node: subscribes to clusters, ACKs them, and gives
    the fake Envoy what it received."""
    stream = await open_ads(plane.port)
    first = discovery_pb2.DiscoveryRequest(type_url=CDS)
    first.node.id, first.node.cluster = envoy.node_id, "test"
    first.node.metadata.fields[ENVOY_ADMIN_ADDRESS].string_value = envoy.address
    await stream.send(first.SerializeToString())
    response = await stream.read()
    ack = discovery_pb2.DiscoveryRequest(
        type_url=CDS, version_info=response.version_info, response_nonce=response.nonce
    )
    await stream.send(ack.SerializeToString())
    for packed in response.resources:
        cluster = cluster_pb2.Cluster()
        packed.Unpack(cluster)
        envoy.clusters.append(
            {
                "@type": packed.type_url,
                **json_format.MessageToDict(cluster, preserving_proto_field_name=True),
            }
        )
    return stream


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    plane = ControlPlane()
    plane.apply_yaml(MESH)
    await plane.start()
    assert plane.discovery is not None
    view = DiscoveryDebugView(plane.discovery)
    admin = AdminServer(
        build_admin_app(view, routes=debug_routes(view)),
        shutdown_timeout=0.25,
    )
    admin_port = await admin.start("127.0.0.1", 0)
    envoys = {node: FakeEnvoy(node) for node in (NODE, OTHER)}
    runners = []
    streams: list[AdsStream] = []
    try:
        for envoy in envoys.values():
            app = web.Application()
            app.router.add_get("/config_dump", envoy.config_dump)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            runners.append(runner)
            envoy.address = f"127.0.0.1:{runner.addresses[0][1]}"
            streams.append(await connect(plane, envoy))
        await wait_acked(plane, 2)
        yield Setup(plane, f"127.0.0.1:{admin_port}", envoys, streams)
    finally:
        for stream in streams:
            await stream.close()
        for runner in runners:
            await runner.cleanup()
        await admin.stop()
        await plane.stop()


async def wait_acked(plane: ControlPlane, proxies: int) -> None:
    async with asyncio.timeout(5):
        while sum(1 for c in plane.connections() if c.engine.acked().get(CDS)) < proxies:
            await asyncio.sleep(0.01)


async def inspect(setup: Setup, *args: str) -> tuple[int, str, str]:
    """``pilothouse inspect ARGS --admin <the server>``, run in a thread: (status, out, err)."""
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return main(["inspect", *args, "--admin", setup.admin, "--recheck", "0"])

    status = await asyncio.to_thread(run)
    return status, out.getvalue(), err.getvalue()


def cluster_named(envoy: FakeEnvoy, name: str) -> dict[str, Any]:
    (found,) = [c for c in envoy.clusters if c["name"] == name]
    return found


async def test_every_kind_of_difference_and_its_exit_status(setup: Setup) -> None:
    envoy = setup.envoys[NODE]
    status, out, err = await inspect(setup, "app-1.data")  # admin address from metadata
    assert status == 0, out + err
    assert out.startswith("app-1.data: SYNCED\n") and "  CDS       3      3     3\n" in out, out

    cluster_named(envoy, DB)["connect_timeout"] = "42s"  # different
    blackhole = cluster_named(envoy, "BlackHoleCluster")
    envoy.clusters.remove(blackhole)  # acked, not held
    rogue = copy.deepcopy(blackhole)
    rogue["name"] = "rogue"
    envoy.clusters.append(rogue)  # held, not acked
    status, out, err = await inspect(setup, NODE, "-o", "json")
    assert status == 1, out + err
    report = json.loads(out)
    assert report["verdict"] == "DIVERGED"
    assert [(d["name"], d["kind"]) for d in report["differences"]] == [
        ("BlackHoleCluster", "acked-not-held"),
        ("outbound|5432||db.data.svc.cluster.local", "different"),
        ("rogue", "held-not-acked"),
    ]
    different = report["differences"][1]
    assert different["held"] != different["acked"] and None not in (
        different["held"],
        different["acked"],
    )
    assert report["types"]["CDS"] == {"held": 3, "acked": 3, "same": 1}

    status, out, _ = await inspect(setup, NODE)
    assert status == 1 and out.startswith("app-1.data: DIVERGED (3 resources differ)\n"), out
    assert "  CDS  rogue                                     held, not acked  held " in out


async def test_a_sample_reports_each_proxy_and_fails_on_any_divergence(setup: Setup) -> None:
    status, out, err = await inspect(setup, "--sample", "2", "-o", "json")
    assert status == 0, out + err
    report = json.loads(out)
    assert (report["verdict"], report["sampled"], report["eligible"]) == ("SYNCED", 2, 2)
    cluster_named(setup.envoys[OTHER], DB)["connect_timeout"] = "42s"
    status, out, err = await inspect(setup, "--sample", "2")
    assert status == 1, out + err
    assert "app-2.data  DIVERGED" in out and "app-1.data  SYNCED" in out, out
    assert out.endswith("DIVERGED: 2 inspected, 1 SYNCED, 1 DIVERGED; 0 could not be inspected\n")


async def test_what_cannot_be_inspected_exits_3_and_says_why(setup: Setup) -> None:
    envoy = setup.envoys[NODE]
    status, _, err = await inspect(setup, "nobody.data", "--envoy-admin", envoy.address)
    assert status == 3 and "'nobody.data': not connected to this pilothouse instance" in err
    status, _, err = await inspect(setup, NODE, "--envoy-admin", setup.envoys[OTHER].address)
    assert status == 3 and f"is node {OTHER!r}, not {NODE!r}" in err, err
    status, _, err = await inspect(setup, NODE, "--envoy-admin", "127.0.0.1:1")
    assert status == 3 and err.count("\n") == 1, err  # one line, no aiohttp exception names
    assert "cannot connect to 127.0.0.1:1: connection refused (is the proxy's Envoy" in err, err
    assert "check --envoy-admin" in err and "ClientConnectorError" not in err, err
    setup.envoys[OTHER].node_id = "someone else"  # a sample goes on past a failed proxy
    status, out, err = await inspect(setup, "--sample", "2", "-o", "json")
    assert status == 3, out + err
    report = json.loads(out)
    assert report["verdict"] == "UNKNOWN" and len(report["proxies"]) == 1
    ((failure),) = report["failures"]
    assert failure["nodeID"] == OTHER and "is node 'someone else'" in failure["error"]


@pytest.mark.parametrize(
    "args",
    [(), ("app-1.data", "--sample", "1"), ("--sample", "1", "--envoy-admin", "x:1")],
)
async def test_usage_errors_exit_2(setup: Setup, args: tuple[str, ...]) -> None:
    status, out, err = await inspect(setup, *args)
    assert status == 2 and out == "" and err.startswith("pilothouse inspect: "), err


async def test_a_pilothouse_that_is_down_is_one_line_naming_its_address() -> None:
    err = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            return main(["inspect", "app-1.data", "--admin", "127.0.0.1:1"])

    assert await asyncio.to_thread(run) == 3
    assert err.getvalue() == (
        "pilothouse inspect: cannot connect to 127.0.0.1:1: connection refused "
        "(is pilothouse serve running with its admin API there? check --admin)\n"
    )
