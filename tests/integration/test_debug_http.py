"""The ``/debug/*`` endpoints on a real admin server, over a real discovery server with real
grpc streams, and their loopback rule checked from a real non-loopback source address."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from google.rpc import status_pb2

from pilothouse import __version__
from pilothouse.admin.app import build_admin_app
from pilothouse.admin.debug_routes import debug_routes
from pilothouse.admin.server import AdminServer
from pilothouse.cli.main import main
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.sources.fs import FileSource
from pilothouse.xds.server.ads import add_discovery_services, new_grpc_server
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.e2e.harness.remote_peer import RemoteRelay, non_loopback_address
from tests.integration.ads_stream import AdsStream, open_ads, sotw_request

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  hosts: [db.data.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.9, labels: {app: db}}]
"""
BROKEN = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bad, namespace: data}
spec:
  hosts: [db.data.svc.cluster.local]
  http:
  - route:
    - destination: {hostt: db}
"""
APP = "sidecar~10.0.0.1~app-1.data~data.svc.cluster.local"
OTHER = "sidecar~10.0.0.3~web-1.web~web.svc.cluster.local"
CLUSTER = "outbound|5432||db.data.svc.cluster.local"
FAST = DebounceSettings(debounce_after=0.02, debounce_max=1.0)


@dataclass
class Running:
    discovery: DiscoveryServer
    xds_port: int
    admin_port: int
    mesh: Path

    async def get(self, path: str, port: int | None = None) -> tuple[int, Any]:
        url = f"http://127.0.0.1:{port or self.admin_port}{path}"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            text = await response.text()
            if response.content_type != "application/json":
                return response.status, text
            return response.status, json.loads(text)


@contextlib.asynccontextmanager
async def serving(mesh: Path, settings: XdsSettings) -> AsyncIterator[Running]:
    source = FileSource(mesh)
    source.load_all()
    discovery = DiscoveryServer(source.store, settings=settings)
    grpc_server = new_grpc_server(settings)
    add_discovery_services(grpc_server, discovery)
    xds_port = grpc_server.add_insecure_port("127.0.0.1:0")
    discovery.identify(xds_port)
    await grpc_server.start()
    view = DiscoveryDebugView(discovery)
    admin = AdminServer(build_admin_app(view, routes=debug_routes(view, [source])))
    admin_port = await admin.start("127.0.0.1", 0)
    task = asyncio.create_task(discovery.run())
    try:
        await asyncio.wait_for(discovery.wait_ready(), 10)
        yield Running(discovery, xds_port, admin_port, mesh)
    finally:
        discovery.close()
        await grpc_server.stop(0)
        await admin.stop()
        await asyncio.wait_for(task, 10)


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "db.yaml").write_text(MESH)
    (mesh / "broken.yaml").write_text(BROKEN)
    async with serving(mesh, XdsSettings(debounce=FAST, replica_id="replica-a")) as server:
        yield server


async def subscribe(port: int, node: str, *, ack: bool = True) -> tuple[AdsStream, Any]:
    """A proxy that asked for CDS, then EDS for the cluster (ACKing each when ``ack``)."""
    stream = await open_ads(port)
    await stream.send(sotw_request(CDS, node))
    clusters = await stream.read()
    if not ack:
        return stream, clusters
    await stream.send(sotw_request(CDS, response_nonce=clusters.nonce))
    await stream.send(sotw_request(EDS, resource_names=[CLUSTER]))
    endpoints = await stream.read()
    await stream.send(sotw_request(EDS, resource_names=[CLUSTER], response_nonce=endpoints.nonce))
    return stream, clusters


async def wait_for(running: Running, path: str, check: Any) -> Any:
    for _ in range(200):
        status, body = await running.get(path)
        if status == 200 and check(body):
            return body
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never satisfied the check: {body}")


async def test_syncz_reports_each_proxy_and_filters_by_namespace(running: Running) -> None:
    app, _ = await subscribe(running.xds_port, APP)
    other, _ = await subscribe(running.xds_port, OTHER)
    try:
        body = await wait_for(
            running, "/debug/syncz", lambda b: len(b) == 2 and all(e["endpoint_acked"] for e in b)
        )
        entry = next(e for e in body if e["proxy"] == "app-1.data")
        assert entry["proxy_type"] == "sidecar" and entry["replica"] == "replica-a"
        assert entry["node_id"] == APP and entry["namespace"] == "data"
        assert entry["cluster_sent"] and entry["cluster_sent"] == entry["cluster_acked"]
        assert entry["listener_sent"] == "" and entry["route_sent"] == ""
        assert entry["resources"][CDS]["status"] == "SYNCED"
        assert entry["resources"][CDS]["sentTime"].endswith("Z")
        assert entry["resources"][EDS]["status"] == "SYNCED"
        _, only = await running.get("/debug/syncz?namespace=web")
        assert [e["proxy"] for e in only] == ["web-1.web"]
    finally:
        await app.close()
        await other.close()


async def test_a_nack_shows_as_error_with_its_message(running: Running) -> None:
    stream, clusters = await subscribe(running.xds_port, APP, ack=False)
    try:
        nack = status_pb2.Status(code=3, message="cluster db: rejected")
        await stream.send(sotw_request(CDS, response_nonce=clusters.nonce, error_detail=nack))
        body = await wait_for(
            running, "/debug/syncz", lambda b: b and b[0]["resources"][CDS]["status"] == "ERROR"
        )
        assert body[0]["resources"][CDS]["lastError"] == "cluster db: rejected"
    finally:
        await stream.close()


async def test_config_dump_of_a_connected_proxy_and_404_for_others(running: Running) -> None:
    stream, clusters = await subscribe(running.xds_port, APP)
    try:
        status, dump = await running.get("/debug/config_dump?proxyID=app-1.data")
        assert status == 200
        kinds = [c["@type"].rsplit(".", 1)[-1] for c in dump["configs"]]
        assert kinds == ["ClustersConfigDump", "ListenersConfigDump", "RoutesConfigDump"]
        names = {c["cluster"]["name"] for c in dump["configs"][0]["dynamic_active_clusters"]}
        assert CLUSTER in names and len(names) == len(clusters.resources)
        status, by_node = await running.get(f"/debug/config_dump?proxyID={APP}&types=cds")
        assert status == 200 and by_node["configs"] == dump["configs"][:1]
        status, with_eds = await running.get(
            "/debug/config_dump?proxyID=app-1.data&types=cds&include_eds=true"
        )
        endpoints = with_eds["configs"][1]["dynamic_endpoint_configs"]
        assert [e["endpoint_config"]["cluster_name"] for e in endpoints] == [CLUSTER]
        status, missing = await running.get("/debug/config_dump?proxyID=nobody.nowhere")
        assert status == 404
        assert missing["error"] == (
            "proxy nobody.nowhere is not connected to this pilothouse instance (replica replica-a)"
        )
        assert (await running.get("/debug/config_dump"))[0] == 400
        status, bad = await running.get("/debug/config_dump?proxyID=app-1.data&types=sds")
        assert status == 400 and "'sds'" in bad["error"]
    finally:
        await stream.close()


async def test_config_registry_and_endpoint_views(running: Running) -> None:
    status, configs = await running.get("/debug/configz")
    assert status == 200
    (entry,) = configs  # the broken VirtualService never loaded
    assert entry["kind"] == "ServiceEntry" and entry["apiVersion"] == "networking.istio.io/v1"
    assert entry["metadata"] == {"name": "db", "namespace": "data", "resourceVersion": "1"}
    assert entry["spec"]["hosts"] == ["db.data.svc.cluster.local"]
    assert entry["origin"] == f"{running.mesh / 'db.yaml'}:1"
    assert (await running.get("/debug/configz?kind=Gateway"))[1] == []
    for typed in ("se", "serviceentries", "ServiceEntry.networking.istio.io", "vs,se"):
        assert (await running.get(f"/debug/configz?kind={typed}"))[1] == configs, typed
    status, unknown = await running.get("/debug/configz?kind=virtualservce")
    assert status == 400 and "did you mean 'virtualservice'" in unknown["error"]
    assert "VirtualService" in unknown["error"] and "Telemetry" in unknown["error"]

    _, services = await running.get("/debug/registryz")
    assert [(s["hostname"], s["namespace"]) for s in services] == [
        ("db.data.svc.cluster.local", "data")
    ]
    assert services[0]["ports"] == [
        {"name": "tcp", "port": 5432, "protocol": "TCP", "targetPort": 0}
    ]
    _, shards = await running.get("/debug/endpointShardz")
    (endpoints,) = shards["db.data.svc.cluster.local"]["data"]["shards"].values()
    assert [(e["address"], e["labels"]) for e in endpoints] == [("10.0.0.9", {"app": "db"})]
    assert (await running.get("/debug/endpointz"))[1] == shards


async def test_streams_push_status_and_no_push_on_get(running: Running) -> None:
    stream, _ = await subscribe(running.xds_port, APP)
    try:
        _, ads = await running.get("/debug/adsz")
        assert ads["totalClients"] == 1
        (client,) = ads["clients"]
        assert client["proxy"] == "app-1.data" and client["address"].startswith("ipv4:127.0.0.1:")
        assert client["watches"] == {CDS: ["*"], EDS: [CLUSTER]}
        _, connections = await running.get("/debug/connections")
        assert connections["clients"] == [
            {k: client[k] for k in ("connectionId", "connectedAt", "address")}
        ]
        _, before = await running.get("/debug/push_status")
        assert before["proxies"] == 1 and before["context"]["services"] == 1
        assert before["replica"] == "replica-a"
        # a GET never pushes: istiod's ?push=true is refused, pointing to the admin API
        status, refused = await running.get("/debug/adsz?push=true")
        assert status == 400 and "POST /admin/push" in refused["error"]
        await asyncio.sleep(0.2)  # past the debounce: a queued push would show by now
        _, after = await running.get("/debug/push_status")
        assert after["pushes"]["full"] == before["pushes"]["full"]
        assert "debug" not in after["pushes"]["triggers"]
    finally:
        await stream.close()


async def test_sources_show_file_problems_at_file_and_line(running: Running) -> None:
    _, body = await running.get("/debug/sources")
    (source,) = body["sources"]
    assert source["source"] == f"fs://{running.mesh}"
    assert source["state"] == "available" and source["synced"] is True
    assert source["files"] == 2 and source["objects"] == 1
    (problem,) = source["problems"]
    assert problem["file"] == str(running.mesh / "broken.yaml") and problem["line"] == 8
    assert problem["text"].startswith(f"{running.mesh / 'broken.yaml'}:8: VirtualService data/bad")
    _, index = await running.get("/debug")
    assert "/debug/syncz" in [e["path"] for e in index["endpoints"]]


async def test_debug_endpoints_refuse_a_peer_off_loopback(tmp_path: Path) -> None:
    source = non_loopback_address()
    if source is None:
        pytest.skip("this host has no address but loopback")
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "db.yaml").write_text(MESH)
    for allow in (False, True):
        settings = XdsSettings(debounce=FAST, debug_allow_remote=allow)
        async with serving(mesh, settings) as server:
            relay = RemoteRelay(source, server.admin_port)
            await relay.start()
            try:
                for path in ("/debug/syncz", "/debug/config_dump?proxyID=x", "/debug"):
                    status, body = await server.get(path, relay.port)
                    if allow:
                        assert status != 403, path
                        continue
                    assert status == 403, path
                    assert source in body["error"]
                    assert "PILOTHOUSE_DEBUG_ALLOW_REMOTE=true" in body["error"]
                status, _ = await server.get("/ready", relay.port)
                assert status == 200  # only the debug views are guarded
            finally:
                await relay.stop()


CLUSTER_PATCH = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: buffers, namespace: data}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {cluster: {service: db.data.svc.cluster.local}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}
"""


async def test_a_nack_of_a_patched_type_names_the_envoy_filters(tmp_path: Path) -> None:
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "db.yaml").write_text(MESH)
    (mesh / "patch.yaml").write_text(CLUSTER_PATCH)
    settings = XdsSettings(debounce=FAST, replica_id="replica-a")
    async with serving(mesh, settings) as server:
        app, app_clusters = await subscribe(server.xds_port, APP, ack=False)
        other, other_clusters = await subscribe(server.xds_port, OTHER, ack=False)
        try:
            nack = status_pb2.Status(code=3, message="cluster db: rejected")
            for stream, sent in ((app, app_clusters), (other, other_clusters)):
                await stream.send(sotw_request(CDS, response_nonce=sent.nonce, error_detail=nack))
            body = await wait_for(
                server,
                "/debug/syncz",
                lambda b: len(b) == 2 and all(e["resources"][CDS]["status"] == "ERROR" for e in b),
            )
            by_proxy = {e["proxy"]: e["resources"][CDS] for e in body}
            assert by_proxy["app-1.data"]["envoyFilters"] == ["data/buffers"]
            assert "envoyFilters" not in by_proxy["web-1.web"]  # not its namespace
            _, patches = await server.get("/debug/envoyfilterz")
            assert patches["patches"][0]["envoyFilter"] == "data/buffers"
            assert patches["patches"][0]["status"] == "applied"
        finally:
            await app.close()
            await other.close()


async def test_version_remote_reads_the_admin_apis_version(running: Running) -> None:
    """``pilothouse version --remote`` against this server's ``/version`` (and a replica
    that is down, which is named and fails the command)."""
    admin = f"127.0.0.1:{running.admin_port}"

    async def version(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()

        def run() -> int:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                return main(["version", *args])

        status = await asyncio.to_thread(run)
        return status, out.getvalue(), err.getvalue()

    status, body = await running.get("/version")
    assert status == 200 and body["version"] == __version__ and body["replica"]
    assert await version() == (0, f"pilothouse {__version__}\n", "")
    assert await version("--remote", "--admin", admin, "-o", "short") == (
        0,
        f"client version: {__version__}\ncontrol plane version: {__version__}\n",
        "",
    )
    status, out, _ = await version("--remote", "--admin", admin)
    assert status == 0 and out.splitlines()[1] == (
        f"control plane version: {__version__} (replica {body['replica']} at http://{admin})"
    )
    status, out, _ = await version("--remote", "--admin", admin, "-o", "json")
    report = json.loads(out)
    assert report["clientVersion"]["version"] == __version__
    assert report["meshVersion"] == [
        {"Component": "pilothouse", "Admin": f"http://{admin}", "Info": body}
    ]
    status, out, _ = await version("--remote", "--admin", admin, "-o", "yaml")
    assert yaml.safe_load(out) == report
    status, out, err = await version("--remote", "--admin", f"{admin},127.0.0.1:1", "-o", "short")
    assert status == 1 and out.endswith(f"control plane version: {__version__}\n")
    assert "cannot reach http://127.0.0.1:1" in err and "onnection refused" in err, err
