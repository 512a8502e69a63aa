"""`pilothouse inspect` against real Envoys fed by a real `pilothouse serve` on the example mesh.

1. One Envoy, bootstrapped by ``pilothouse bootstrap``, takes clusters, endpoints and
   routes from pilothouse over ADS but its listeners from a second, rogue control plane
   (another ``pilothouse serve``, on an empty directory at first): ``inspect`` says
   SYNCED (exit 0), every cluster and endpoint compared. Then a TCP service appears in
   the rogue's directory, behind pilothouse's back; the Envoy takes the rogue's listener
   and ``inspect`` says DIVERGED (exit 1), naming that listener and nothing else; asked
   of both control planes (two ``--admin``), it is SYNCED again, each type read from the
   one that serves it.
2. Three Envoys (SotW and delta) on pilothouse alone, two of them bootstrapped with a
   known admin port (so their metadata names it): ``inspect --sample`` picks those two
   and finds both SYNCED; the third, whose admin address is unknown, is not eligible. A
   second ``--admin`` that cannot be read is named, and the sample still made.

Both tests read from one ``pilothouse serve`` of the example mesh, shared by the module
(``plane``); each test's Envoys are gone from it before the next test begins. The first
``inspect`` of each test runs as the process a user starts, the others in this process
(``run_cli``: the same parser and code, without a new Python each).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pilothouse.cli.main import main
from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.client import fetch
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_ports
from tests.e2e.harness.serve_process import ServeProcess

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROGUE_CLUSTER = "rogue-xds"
ROGUE_PORT = 19999
ROGUE_LISTENER = f"0.0.0.0_{ROGUE_PORT}"
ROGUE_SERVICE = f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: rogue, namespace: bookinfo}}
spec:
  hosts: [rogue.bookinfo.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: {ROGUE_PORT}, name: tcp, protocol: TCP}}]
  endpoints: [{{address: 127.0.0.1}}]
"""


def node(workload: str) -> str:
    return f"sidecar~127.0.0.1~{workload}.bookinfo~bookinfo.svc.cluster.local"


async def pilothouse_process(*args: str, timeout: float = 60.0) -> tuple[int, str, str]:
    """Run the ``pilothouse`` command as a process: (exit status, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pilothouse.cli.main", *args,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def pilothouse(*args: str, timeout: float = 60.0) -> tuple[int, str, str]:
    """Run the ``pilothouse`` command in this process (the same parser and code, without
    a new Python): (exit status, stdout, stderr)."""
    ran = await asyncio.wait_for(run_cli_in_thread(*args), timeout)
    return ran.returncode, ran.stdout, ran.stderr


def bootstrap(node_id: str, xds_port: int, *options: str) -> dict[str, Any]:
    """What ``pilothouse bootstrap`` prints (run in this process: it only prints)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(
            ["bootstrap", "--node", node_id, "--xds-address", f"{LOOPBACK}:{xds_port}",
             "-o", "json", *options]
        )  # fmt: skip
    assert status == 0
    document: dict[str, Any] = json.loads(printed.getvalue())
    return document


def listeners_from(document: dict[str, Any], xds_port: int) -> dict[str, Any]:
    """``document`` with its listeners (only) coming from the control plane on ``xds_port``,
    over a gRPC LDS stream of their own."""
    changed = copy.deepcopy(document)
    (ads_cluster,) = changed["static_resources"]["clusters"]
    rogue = copy.deepcopy(ads_cluster)
    rogue["name"] = ROGUE_CLUSTER
    rogue["load_assignment"]["cluster_name"] = ROGUE_CLUSTER
    endpoint = rogue["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    endpoint["address"]["socket_address"]["port_value"] = xds_port
    changed["static_resources"]["clusters"].append(rogue)
    changed["dynamic_resources"]["lds_config"] = {
        "api_config_source": {
            "api_type": "GRPC",
            "transport_api_version": "V3",
            "grpc_services": [{"envoy_grpc": {"cluster_name": ROGUE_CLUSTER}}],
            "set_node_on_first_message_only": True,
        },
        "initial_fetch_timeout": "0s",
        "resource_api_version": "V3",
    }
    return changed


async def admin_of(envoy: EnvoyProcess) -> str:
    host, port = await envoy.admin_address()
    return f"{host}:{port}"


async def wait_listener(envoy: EnvoyProcess, name: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while name not in await envoy.listeners():
        assert time.monotonic() < deadline, f"Envoy never took listener {name}"
        await asyncio.sleep(0.05)


@pytest.fixture
async def serve_factory(tmp_path: Path) -> AsyncIterator[list[ServeProcess]]:
    """Started ``pilothouse serve`` processes, stopped at the end (append to start one)."""
    started: list[ServeProcess] = []
    try:
        yield started
    finally:
        for process in started:
            await process.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def examples_plane(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServeProcess]:
    """pilothouse serving the example mesh (no test changes it), for the module."""
    started: list[ServeProcess] = []
    log = tmp_path_factory.mktemp("plane") / "pilothouse.log"
    try:
        yield await serve(started, EXAMPLES, log)
    finally:
        for process in started:
            await process.stop()


@pytest.fixture
async def plane(examples_plane: ServeProcess) -> AsyncIterator[ServeProcess]:
    """The module's plane; when the test ends (its Envoys stopped), no proxy is left
    connected to it."""
    yield examples_plane
    deadline = time.monotonic() + 10
    while await connected(examples_plane):
        assert time.monotonic() < deadline, "a proxy of the test stayed connected"
        await asyncio.sleep(0.05)


async def connected(plane: ServeProcess) -> list[Any]:
    """The proxies connected to ``plane`` (its ``/debug/syncz``)."""
    response = await fetch(LOOPBACK, plane.admin_port, "/debug/syncz", timeout=5.0)
    assert response.status == 200, response.body
    proxies: list[Any] = json.loads(response.body)
    return proxies


async def serve(started: list[ServeProcess], config: Path, log: Path) -> ServeProcess:
    xds_port, admin_port = free_ports(2)
    process = ServeProcess([config], xds_port=xds_port, admin_port=admin_port, log_path=log)
    started.append(process.start())
    await process.wait_ready()
    return process


async def test_inspect_is_synced_then_names_a_listener_from_a_rogue_control_plane(
    tmp_path: Path,
    plane: ServeProcess,
    serve_factory: list[ServeProcess],
    envoy_factory: EnvoyFleet,
) -> None:
    rogue_dir = tmp_path / "rogue"
    rogue_dir.mkdir()
    rogue = await serve(serve_factory, rogue_dir, tmp_path / "rogue.log")
    node_id = node("reviews-v1")
    document = bootstrap(node_id, plane.xds_port, "--admin-port", "0")
    envoy = await envoy_factory(listeners_from(document, rogue.xds_port))
    admin = await admin_of(envoy)
    inspect = ("inspect", "reviews-v1.bookinfo", "--envoy-admin", admin)
    to_plane = ("--admin", f"{LOOPBACK}:{plane.admin_port}")

    status, out, err = await pilothouse_process(*inspect, *to_plane, "-o", "json")
    assert status == 0, out + err
    report = json.loads(out)
    assert report["verdict"] == "SYNCED" and report["nodeID"] == node_id
    types = report["types"]
    assert types["CDS"]["held"] == types["CDS"]["acked"] == types["CDS"]["same"] >= 8
    assert types["EDS"]["held"] == types["EDS"]["acked"] == types["EDS"]["same"] >= 5
    assert types["LDS"] == {"held": 0, "acked": 0, "same": 0}  # the rogue has none yet
    assert report["static"] == {"CDS": 2, "EDS": 2}  # xds-grpc and rogue-xds: not compared

    (rogue_dir / "rogue.yaml").write_text(ROGUE_SERVICE)  # behind pilothouse's back
    await wait_listener(envoy, ROGUE_LISTENER)
    status, out, err = await pilothouse(*inspect, *to_plane, "--recheck", "0.2")
    assert status == 1, out + err
    assert out.startswith("reviews-v1.bookinfo: DIVERGED (1 resource differs)\n"), out
    assert f"LDS  {ROGUE_LISTENER}  held, not acked  held " in out, out
    status, out, err = await pilothouse(*inspect, *to_plane, "-o", "json")
    assert status == 1, err
    report = json.loads(out)
    assert report["verdict"] == "DIVERGED"
    ((difference),) = report["differences"]
    assert difference["type"] == "LDS" and difference["name"] == ROGUE_LISTENER
    assert difference["kind"] == "held-not-acked" and difference["acked"] is None
    assert len(difference["held"]) == 16
    assert report["types"]["CDS"]["same"] == types["CDS"]["same"]  # the rest still agrees

    # the rogue itself never sent clusters: asked there, the same Envoy diverges on them
    status, out, err = await pilothouse(
        *inspect, "--admin", f"{LOOPBACK}:{rogue.admin_port}", "-o", "json", "--recheck", "0"
    )
    assert status == 1, err
    kinds = {(d["type"], d["kind"]) for d in json.loads(out)["differences"]}
    assert kinds == {("CDS", "held-not-acked"), ("EDS", "held-not-acked")}
    # asked of both (-n completing the pod name): each type from the one that serves it
    both = (*to_plane, "--admin", f"{LOOPBACK}:{rogue.admin_port}")
    status, out, err = await pilothouse(
        "inspect", "reviews-v1", "-n", "bookinfo", "--envoy-admin", admin, *both, "--recheck", "0"
    )
    assert status == 0 and out.startswith("reviews-v1.bookinfo: SYNCED\n"), out + err


async def test_inspect_a_sample_of_the_envoys_whose_admin_address_is_known(
    plane: ServeProcess, envoy_factory: EnvoyFleet
) -> None:
    known = dict(zip(("details-v1", "ratings-v1"), free_ports(2), strict=True))
    documents = []
    for (workload, port), flavour in zip(known.items(), ((), ("--delta",)), strict=True):
        document = bootstrap(node(workload), plane.xds_port, "--admin-port", str(port), *flavour)
        assert document["node"]["metadata"]["ENVOY_ADMIN_ADDRESS"] == f"127.0.0.1:{port}"
        documents.append(document)
    unknown = bootstrap(node("productpage-v1"), plane.xds_port, "--admin-port", "0")
    assert "ENVOY_ADMIN_ADDRESS" not in unknown["node"]["metadata"]
    await asyncio.gather(*(envoy_factory(d) for d in (*documents, unknown)))
    to_plane = ("--admin", f"{LOOPBACK}:{plane.admin_port}")

    status, out, err = await pilothouse_process(
        "inspect", "--sample", "2", *to_plane, "-o", "json"
    )
    assert status == 0, out + err
    report = json.loads(out)
    assert (report["verdict"], report["connected"], report["eligible"], report["sampled"]) == (
        "SYNCED", 3, 2, 2,
    )  # fmt: skip
    assert report["failures"] == []
    inspected = {p["nodeID"]: p for p in report["proxies"]}
    assert set(inspected) == {node(w) for w in known}
    for workload, port in known.items():
        found = inspected[node(workload)]
        assert found["verdict"] == "SYNCED" and found["envoyAdmin"] == f"127.0.0.1:{port}"
        assert found["types"]["CDS"]["same"] == found["types"]["CDS"]["held"] >= 8
        assert found["types"]["LDS"]["same"] == found["types"]["LDS"]["held"] >= 1

    status, out, err = await pilothouse("inspect", "--sample", "5", *to_plane)
    assert status == 0, out + err
    assert out.startswith("sampled 2 of 2 proxies with a known Envoy admin address (3 connected)\n")
    assert out.endswith("SYNCED: 2 inspected, 2 SYNCED, 0 DIVERGED; 0 could not be inspected\n")
    # by name, the admin address comes from the proxy's metadata
    status, out, err = await pilothouse("inspect", "ratings-v1.bookinfo", *to_plane)
    assert status == 0 and out.startswith("ratings-v1.bookinfo: SYNCED\n"), out + err
    # a replica that cannot be read is named; the proxies of the others are inspected
    dead = f"{LOOPBACK}:{free_ports(1)[0]}"
    status, out, err = await pilothouse("inspect", "--sample", "5", *to_plane, "--admin", dead)
    assert status == 0 and "SYNCED: 2 inspected" in out, out + err
    assert f"warning: cannot connect to {dead}: connection refused (is pilothouse serve" in err
