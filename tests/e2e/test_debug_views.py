"""Debug views end to end: real ``pilothouse serve`` processes on the example mesh, a real
Envoy and raw grpc proxies connected, and the ``proxy-status`` / ``proxy-config`` commands
run against them: one call in each test as the process a user starts, the others in this
process (``run_cli``: the same parser and code, without a new Python each).

The 403 for a client off loopback is checked from a real non-loopback source address of
this host (:mod:`tests.e2e.harness.remote_peer`); the test skips on a host that has none.

The one-replica tests share the module's replica (``replica``); the test of two replicas
starts its own.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from google.rpc import status_pb2

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.client import fetch
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.remote_peer import RemoteRelay, non_loopback_address
from tests.e2e.harness.serve_process import ServeProcess
from tests.integration.ads_stream import AdsStream, open_ads, sotw_request

ROOT = Path(__file__).resolve().parents[2]
PRODUCTPAGE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
RATINGS = "sidecar~127.0.0.1~ratings-v1.bookinfo~bookinfo.svc.cluster.local"
HOST = socket.gethostname()
ENVIRONMENT = {"PILOTHOUSE_DEBOUNCE_AFTER": "0.05"}
FOUR_TYPES = (CDS, LDS, EDS, RDS)


async def start_replica(tmp_path: Path, name: str) -> ServeProcess:
    mesh = tmp_path / f"mesh-{name}"
    shutil.copytree(ROOT / "examples", mesh)
    replica = ServeProcess(
        [mesh],
        xds_port=free_port(),
        admin_port=free_port(),
        log_path=tmp_path / f"serve-{name}.log",
        environment=ENVIRONMENT,
    ).start()
    await replica.wait_ready()
    return replica


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def replica(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServeProcess]:
    started = await start_replica(tmp_path_factory.mktemp("replica"), "a")
    try:
        yield started
    finally:
        assert await started.stop() == 0, started.log_tail()


async def cli_process(*args: str) -> tuple[int, str, str]:
    """``pilothouse ARGS`` as a process: (exit status, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pilothouse.cli.main",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def cli(*args: str) -> tuple[int, str, str]:
    """``pilothouse ARGS`` in this process: (exit status, stdout, stderr)."""
    ran = await asyncio.wait_for(run_cli_in_thread(*args), 60)
    return ran.returncode, ran.stdout, ran.stderr


async def get_json(port: int, path: str) -> tuple[int, Any]:
    response = await fetch(LOOPBACK, port, path, timeout=10.0)
    return response.status, json.loads(response.body)


async def envoy_for(fleet: EnvoyFleet, node: str, xds_port: int) -> Any:
    options = EnvoyBootstrapOptions(
        node_id=node,
        xds_port=xds_port,
        admin_port=0,
        transport=XdsTransport.DELTA,
        node_metadata={"ISTIO_VERSION": "1.28.0", "CLUSTER_ID": "Kubernetes"},
    )
    return await fleet(envoy_bootstrap(options))


async def synced(admin_port: int, proxy: str, timeout: float = 20.0) -> dict[str, Any]:
    """The proxy's syncz entry once CDS, LDS, EDS and RDS are all SYNCED."""
    deadline = time.monotonic() + timeout
    while True:
        _, body = await get_json(admin_port, "/debug/syncz")
        entry = next((e for e in body if e["proxy"] == proxy), None)
        if entry is not None:
            statuses = [entry["resources"].get(t, {}).get("status") for t in FOUR_TYPES]
            if statuses == ["SYNCED"] * 4:
                return dict(entry)
        assert time.monotonic() < deadline, f"{proxy} never synced: {body}"
        await asyncio.sleep(0.1)


def row_of(table: str, *first: str) -> list[str]:
    """The cells of the row that starts with the cells ``first`` (columns are three or
    more spaces apart)."""
    for line in table.splitlines():
        cells = re.split(r" {3,}", line.strip())
        if cells[: len(first)] == list(first):
            return cells
    raise AssertionError(f"no row for {first} in:\n{table}")


async def test_one_replica_with_envoy(
    replica: ServeProcess, envoy_factory: EnvoyFleet
) -> None:
    envoy = await envoy_for(envoy_factory, PRODUCTPAGE, replica.xds_port)
    entry = await synced(replica.admin_port, "productpage-v1.bookinfo")
    assert entry["replica"] == f"{HOST}:{replica.xds_port}"
    assert entry["istio_version"] == "1.28.0" and entry["proxy_version"] == "1.40.0"
    for prefix in ("cluster", "listener", "route", "endpoint"):
        assert entry[f"{prefix}_sent"] and entry[f"{prefix}_sent"] == entry[f"{prefix}_acked"]
    # Envoy itself shows which replica it talks to (control_plane.identifier)
    stats = (await envoy.admin("/stats?filter=control_plane.identifier")).body.decode()
    assert f'"ID":"{HOST}:{replica.xds_port}"' in stats and '"Component":"pilothouse"' in stats

    admin = f"127.0.0.1:{replica.admin_port}"
    code, out, err = await cli_process("proxy-status", "--admin", admin)
    assert code == 0, err
    header = row_of(out, "NAME")
    assert header == ["NAME", "CLUSTER", "CDS", "LDS", "EDS", "RDS", "REPLICA", "VERSION"]
    row = row_of(out, "productpage-v1.bookinfo")
    assert row[1] == "Kubernetes" and row[6] == f"{HOST}:{replica.xds_port}"
    assert row[7] == "1.28.0"
    assert [cell.split(" (")[0] for cell in row[2:6]] == ["SYNCED"] * 4

    code, out, _ = await cli("proxy-status", "--admin", admin, "-o", "json")
    (listed,) = json.loads(out)
    assert listed["proxy"] == "productpage-v1.bookinfo" and listed["admin"] == f"http://{admin}"

    code, out, _ = await cli("proxy-status", PRODUCTPAGE, "--admin", admin)
    assert code == 0 and "NODE:     " + PRODUCTPAGE in out
    assert row_of(out, "CDS")[1].startswith("SYNCED")

    # what the control plane says it sends is what Envoy holds
    code, out, err = await cli(
        "proxy-config", "cluster", "productpage-v1.bookinfo", "--admin", admin, "-o", "json"
    )
    assert code == 0, err
    ours = {cluster["name"] for cluster in json.loads(out)}
    dump = await envoy.config_dump()
    clusters = next(c for c in dump["configs"] if c["@type"].endswith("ClustersConfigDump"))
    held = {c["cluster"]["name"] for c in clusters["dynamic_active_clusters"]}
    assert ours == held and "outbound|9080|v3|reviews.bookinfo.svc.cluster.local" in held

    code, out, _ = await cli("proxy-config", "cluster", "productpage-v1.bookinfo", "--admin", admin)
    row = row_of(out, "reviews.bookinfo.svc.cluster.local", "9080", "v3")
    assert row == [
        "reviews.bookinfo.svc.cluster.local", "9080", "v3", "outbound", "EDS", "reviews.bookinfo"
    ]  # fmt: skip
    # and Envoy holds the rule's name in the cluster's metadata too, as from istiod
    reviews_v3 = next(
        c["cluster"] for c in clusters["dynamic_active_clusters"]
        if c["cluster"]["name"] == "outbound|9080|v3|reviews.bookinfo.svc.cluster.local"
    )  # fmt: skip
    assert reviews_v3["metadata"]["filter_metadata"]["istio"]["config"].endswith(
        "/namespaces/bookinfo/destination-rule/reviews"
    )
    code, out, _ = await cli("proxy-config", "ep", "productpage-v1.bookinfo", "--admin", admin)
    v3 = "outbound|9080|v3|reviews.bookinfo.svc.cluster.local"
    assert row_of(out, "127.0.0.1:19084", "HEALTHY", "-", v3)
    code, out, _ = await cli("proxy-config", "routes", "productpage-v1.bookinfo", "--admin", admin)
    assert row_of(out, "9080", "reviews.bookinfo.svc.cluster.local:9080")[-1] == "reviews.bookinfo"

    status, body = await get_json(replica.admin_port, "/debug/config_dump?proxyID=nobody.x")
    assert status == 404
    assert "not connected to this pilothouse instance" in body["error"]
    code, _, err = await cli("proxy-config", "listener", "nobody.x", "--admin", admin)
    assert code == 1 and "not connected to any of the given replicas" in err

    # istioctl's habits: ps/pc, -n, --admin before PROXY, filters, all, -o yaml
    code, out, err = await cli("ps", "-n", "bookinfo", "--admin", admin)
    assert code == 0 and row_of(out, "productpage-v1.bookinfo"), err
    code, out, _ = await cli("ps", "-n", "default", "--admin", admin)
    assert code == 0 and "no proxies in namespace default connected" in out
    code, out, err = await cli("ps", "--admin", admin, "productpage-v1", "-n", "bookinfo")
    assert code == 0 and "NODE:     " + PRODUCTPAGE in out, err
    code, out, _ = await cli(
        "pc", "c", "--admin", admin, "productpage-v1", "-n", "bookinfo",
        "--fqdn", "reviews", "--subset", "v3", "--direction", "outbound", "--port", "9080",
    )  # fmt: skip
    assert code == 0 and len(out.splitlines()) == 2 and "reviews.bookinfo" in out, out
    code, out, _ = await cli("pc", "cluster", "productpage-v1.bookinfo", "--admin", admin,
                             "--fqdn", "reviews", "-o", "yaml")  # fmt: skip
    names = {c["name"] for c in yaml.safe_load(out)}
    assert code == 0 and names == {
        f"outbound|9080|{subset}|reviews.bookinfo.svc.cluster.local"
        for subset in ("", "v1", "v2", "v3")
    }
    code, out, _ = await cli("pc", "ep", "productpage-v1.bookinfo", "--admin", admin,
                             "--port", "19084")  # fmt: skip
    endpoints = {line.split()[0] for line in out.splitlines()[1:]}
    assert code == 0 and endpoints == {"127.0.0.1:19084"}, out  # reviews v3, in two clusters
    code, out, _ = await cli("pc", "all", "productpage-v1.bookinfo", "--admin", admin)
    tables = ("SERVICE FQDN", "ADDRESSES", "NAME", "ENDPOINT")
    assert code == 0 and len([h for h in out.splitlines() if h.startswith(tables)]) == 4, out
    code, out, _ = await cli("pc", "all", "productpage-v1.bookinfo", "--admin", admin, "-o=json")
    assert code == 0 and len(json.loads(out)["configs"]) == 4


async def test_debug_views_refuse_a_client_off_loopback(replica: ServeProcess) -> None:
    source = non_loopback_address()
    if source is None:
        pytest.skip("this host has no address but loopback")
    relay = RemoteRelay(source, replica.admin_port)
    await relay.start()
    try:
        status, body = await get_json(relay.port, "/debug/syncz")
        assert status == 403 and source in body["error"]
        code, _, err = await cli_process("proxy-status", "--admin", f"127.0.0.1:{relay.port}")
        assert code == 1 and "debug views answer only loopback clients" in err
        assert (await get_json(replica.admin_port, "/debug/syncz"))[0] == 200
    finally:
        await relay.stop()


async def nacking_proxy(xds_port: int) -> AdsStream:
    """A raw proxy on ``xds_port`` that asks for clusters and rejects them."""
    stream = await open_ads(xds_port)
    await stream.send(sotw_request(CDS, RATINGS))
    clusters = await stream.read()
    nack = status_pb2.Status(code=3, message="cluster BlackHoleCluster: not today")
    await stream.send(sotw_request(CDS, response_nonce=clusters.nonce, error_detail=nack))
    return stream


async def test_two_replicas_are_aggregated_and_a_nack_is_an_error(
    tmp_path: Path, envoy_factory: EnvoyFleet
) -> None:
    first = await start_replica(tmp_path, "a")
    second = await start_replica(tmp_path, "b")
    stream: AdsStream | None = None
    try:
        await envoy_for(envoy_factory, PRODUCTPAGE, first.xds_port)
        stream = await nacking_proxy(second.xds_port)
        await synced(first.admin_port, "productpage-v1.bookinfo")
        admins = [f"127.0.0.1:{first.admin_port}", f"http://127.0.0.1:{second.admin_port}"]
        flags = ["--admin", admins[0], "--admin", admins[1]]  # repeated, or A,B:
        assert (await cli("ps", "--admin", ",".join(admins), "-o", "json"))[0] == 0

        deadline = time.monotonic() + 10
        while True:
            code, out, err = await cli("proxy-status", *flags)
            assert code == 0, err
            if "ratings-v1.bookinfo" in out and "ERROR" in out:
                break
            assert time.monotonic() < deadline, out
            await asyncio.sleep(0.1)
        envoy_row = row_of(out, "productpage-v1.bookinfo")
        assert envoy_row[6] == f"{HOST}:{first.xds_port}"
        nacked = row_of(out, "ratings-v1.bookinfo")
        assert nacked[2].startswith("ERROR") and nacked[6] == f"{HOST}:{second.xds_port}"
        assert nacked[3:6] == ["NOT SENT"] * 3

        code, out, _ = await cli("proxy-status", "ratings-v1.bookinfo", *flags)
        assert code == 0 and "CDS rejected: cluster BlackHoleCluster: not today" in out

        # the proxy on the second replica is found there; the first says 404
        code, out, err = await cli(
            "proxy-config", "cluster", "ratings-v1.bookinfo", *flags, "-o", "json"
        )
        assert code == 0, err
        assert "BlackHoleCluster" in {c["name"] for c in json.loads(out)}

        # an unreachable replica is reported, the others still shown, exit 1
        dead = f"127.0.0.1:{free_port()}"
        code, out, err = await cli_process("proxy-status", *flags, "--admin", dead)
        assert code == 1 and f"cannot reach http://{dead}" in err
        assert "productpage-v1.bookinfo" in out and "ratings-v1.bookinfo" in out
        code, _, err = await cli("proxy-status", "nobody.x", *flags)
        assert code == 1 and "not connected to any of the given replicas" in err
        code, _, err = await cli("proxy-status", "--admin", "productpage-v1.bookinfo")
        assert code == 2 and "expected http://host:port" in err
    finally:
        if stream is not None:
            await stream.close()
        for process in (first, second):
            assert await process.stop() == 0, process.log_tail()
