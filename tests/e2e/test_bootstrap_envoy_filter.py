"""``pilothouse bootstrap`` merges EnvoyFilter BOOTSTRAP patches, and a real Envoy runs them.

The EnvoyFilters come from a ``--config`` directory, as ProxyConfig does; the ones that
select the proxy (namespace, workloadSelector, ``match.proxy``) are merged in istiod's
order, MERGE only. Envoy started from the printed bootstrap shows the patched fields in the
bootstrap section of its ``/config_dump``, the extra static cluster in ``/clusters`` and the
runtime key in ``/runtime``. A patched bootstrap of every transport, over TLS with a token
too, is one Envoy accepts (``envoy --mode validate``): the patch is merged into Envoy's own
message and printed back in its JSON mapping.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.harness.cli_in_process import Ran, run_cli
from tests.e2e.harness.envoy import EnvoyProcess, validate_bootstrap

pytestmark = pytest.mark.timeout(60)

NODE = "sidecar~127.0.0.1~ratings-v1.shop~shop.svc.cluster.local"
BOOTSTRAP_DUMP = "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"

FILTERS = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: stats-flush, namespace: istio-system}
spec:
  configPatches:
  - applyTo: BOOTSTRAP
    patch:
      operation: MERGE
      value:
        stats_flush_interval: 7s
        layered_runtime:
          layers:
          - name: pilothouse-test
            static_layer: {pilothouse.test.answer: 42}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: telemetry-cluster, namespace: shop}
spec:
  workloadSelector: {labels: {app: ratings}}
  configPatches:
  - applyTo: BOOTSTRAP
    patch:
      operation: MERGE
      value:
        static_resources:
          clusters:
          - name: telemetry-sink
            type: STATIC
            connect_timeout: 1s
            load_assignment:
              cluster_name: telemetry-sink
              endpoints:
              - lb_endpoints:
                - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 9}}}
  - applyTo: BOOTSTRAP
    patch:
      operation: ADD
      value: {stats_flush_interval: 99s}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: reviews-only, namespace: shop}
spec:
  workloadSelector: {labels: {app: reviews}}
  configPatches:
  - applyTo: BOOTSTRAP
    patch:
      operation: MERGE
      value: {stats_flush_interval: 11s}
"""


def bootstrap(config: Path, *args: str) -> Ran:
    return run_cli("bootstrap", "--node", NODE, "--admin-port", "0", "--config", str(config), *args)


async def test_a_bootstrap_merge_reaches_envoy_s_config_dump(tmp_path: Path) -> None:
    (tmp_path / "filters.yaml").write_text(FILTERS)
    done = bootstrap(tmp_path, "--label", "app=ratings", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert "EnvoyFilter istio-system/stats-flush patch 0: merged" in done.stderr
    assert "EnvoyFilter shop/telemetry-cluster patch 0: merged" in done.stderr
    assert "shop/telemetry-cluster patch 1: ADD not applied" in done.stderr
    assert "reviews-only" not in done.stderr  # selects another workload
    envoy = EnvoyProcess(json.loads(done.stdout), workdir=tmp_path / "envoy").start()
    try:
        await envoy.admin_address()
        dump = await envoy.config_dump()
        clusters = (await envoy.admin("/clusters")).body.decode()
        runtime = json.loads((await envoy.admin("/runtime")).body)
    finally:
        await envoy.stop()
    [section] = [c for c in dump["configs"] if c["@type"] == BOOTSTRAP_DUMP]
    running = section["bootstrap"]
    assert running["stats_flush_interval"] == "7s"
    names = [c["name"] for c in running["static_resources"]["clusters"]]
    assert names == ["xds-grpc", "telemetry-sink"]
    assert running["node"]["id"] == NODE
    assert "telemetry-sink::127.0.0.1:9" in clusters
    assert runtime["entries"]["pilothouse.test.answer"]["final_value"] == "42"


def test_a_proxy_no_patch_selects_gets_the_plain_bootstrap(tmp_path: Path) -> None:
    (tmp_path / "filters.yaml").write_text(
        FILTERS.replace("namespace: istio-system", "namespace: x")
    )
    done = bootstrap(tmp_path, "--label", "app=details", "-o", "json")
    plain = run_cli("bootstrap", "--node", NODE, "--admin-port", "0", "--label", "app=details",
                    "-o", "json")  # fmt: skip
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == plain.stdout


@pytest.mark.parametrize("transport", [(), ("--delta",), ("--rest",)])
async def test_a_patched_bootstrap_of_each_transport_is_one_envoy_accepts(
    tmp_path: Path, transport: tuple[str, ...]
) -> None:
    (tmp_path / "filters.yaml").write_text(FILTERS)
    tls: tuple[str, ...] = ()
    if not transport:  # TLS to the xDS port, with a token (gRPC transports only)
        (tmp_path / "token").write_text("a.b.c\n")
        root = Path(os.environ["PILOTHOUSE_CA_DIR"]) / "root-cert.pem"
        tls = ("--xds-tls-root", str(root), "--xds-token-file", str(tmp_path / "token"))
    done = bootstrap(tmp_path, "--label", "app=ratings", *transport, *tls, "-o", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["stats_flush_interval"] == "7s"
    (tmp_path / "bootstrap.json").write_text(done.stdout)
    passed, output = await validate_bootstrap(tmp_path / "bootstrap.json")
    assert passed, output
