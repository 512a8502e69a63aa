"""``pilothouse bootstrap`` applies the proxy's effective ProxyConfig to a real Envoy.

ProxyConfig objects from a directory, MeshConfig ``defaultConfig`` and the pod's
``proxy.istio.io/config`` annotation are merged with istiod's precedence for the proxy
the node id and ``--label`` describe; a real Envoy started from the printed bootstrap
with the printed ``--envoy-args`` shows the concurrency in ``/server_info`` and the
``ISTIO_META_*`` variables in its node metadata.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.e2e.harness.cli_in_process import Ran, run_cli
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.ports import free_port

pytestmark = pytest.mark.timeout(60)

NODE = "sidecar~127.0.0.1~ratings-v1.shop~shop.svc.cluster.local"

OBJECTS = """\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: mesh-wide, namespace: mesh-admin}
spec:
  concurrency: 5
  environmentVariables: {ISTIO_META_TIER: mesh, ISTIO_META_REGION_HINT: north}
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: shop-wide, namespace: shop}
spec:
  environmentVariables: {ISTIO_META_TIER: shop, LOG_FORMAT: json}
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: ratings, namespace: shop}
spec:
  selector: {matchLabels: {app: ratings}}
  concurrency: 3
  image: {imageType: distroless}
---
apiVersion: v1
kind: Service
metadata: {name: ratings, namespace: shop}
spec: {ports: [{name: http, port: 9080}]}
"""

MESH = """\
rootNamespace: mesh-admin
defaultConfig:
  concurrency: 1
  proxyMetadata: {ISTIO_META_DNS_CAPTURE: "true", ISTIO_META_TIER: default}
  holdApplicationUntilProxyStarts: true
"""


def inputs(tmp_path: Path) -> list[str]:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "proxy-configs.yaml").write_text(OBJECTS)
    (tmp_path / "mesh.yaml").write_text(MESH)
    return ["--config", str(tmp_path / "config"), "--mesh", str(tmp_path / "mesh.yaml")]


def bootstrap(*args: str) -> Ran:
    return run_cli("bootstrap", "--node", NODE, "--admin-port", "0", *args)


async def started_envoy(tmp_path: Path, bootstrap_json: str, envoy_args: str) -> EnvoyProcess:
    words = shlex.split(envoy_args)
    assert words[:1] == ["--concurrency"] and len(words) == 2, envoy_args
    envoy = EnvoyProcess(
        json.loads(bootstrap_json), workdir=tmp_path / "envoy", concurrency=int(words[1])
    )
    envoy.start()
    await envoy.admin_address()
    return envoy


async def test_a_selected_workload_gets_its_concurrency_and_the_merged_metadata(
    tmp_path: Path,
) -> None:
    given = inputs(tmp_path)
    args = bootstrap(*given, "--label", "app=ratings", "--envoy-args")
    assert args.returncode == 0, args.stderr
    assert args.stdout.strip() == "--concurrency 3"  # the workload's ProxyConfig wins
    done = bootstrap(*given, "--label", "app=ratings", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert "holdApplicationUntilProxyStarts: accepted; not applied" in done.stderr
    assert "LOG_FORMAT: not applied by a bootstrap" in done.stderr
    assert "image distroless: accepted; not applied" in done.stderr
    envoy = await started_envoy(tmp_path, done.stdout, args.stdout)
    try:
        info = json.loads((await envoy.admin("/server_info")).body)
    finally:
        await envoy.stop()
    assert info["command_line_options"]["concurrency"] == 3
    metadata = info["node"]["metadata"]
    # defaultConfig < root namespace < namespace; merged name by name.
    assert metadata["TIER"] == "shop"
    assert metadata["REGION_HINT"] == "north"
    assert metadata["DNS_CAPTURE"] == "true"
    assert metadata["NAMESPACE"] == "shop"
    assert "LOG_FORMAT" not in metadata


async def test_the_annotation_beats_the_namespace_and_loses_to_the_workload(
    tmp_path: Path,
) -> None:
    given = inputs(tmp_path)
    annotation = "proxy.istio.io/config={concurrency: 2, proxyMetadata: {ISTIO_META_TIER: pod}}"
    other = bootstrap(*given, "--label", "app=reviews", "--annotation", annotation, "-o", "json")
    assert other.returncode == 0, other.stderr
    other_args = bootstrap(*given, "--label", "app=reviews", "--annotation", annotation,
                           "--envoy-args")  # fmt: skip
    assert other_args.stdout.strip() == "--concurrency 2"
    envoy = await started_envoy(tmp_path, other.stdout, other_args.stdout)
    try:
        info = json.loads((await envoy.admin("/server_info")).body)
    finally:
        await envoy.stop()
    assert info["command_line_options"]["concurrency"] == 2
    assert info["node"]["metadata"]["TIER"] == "pod"
    selected = bootstrap(*given, "--label", "app=ratings", "--annotation", annotation,
                         "--envoy-args")  # fmt: skip
    assert selected.stdout.strip() == "--concurrency 3"


def test_without_proxy_config_inputs_the_bootstrap_is_unchanged() -> None:
    plain = bootstrap("-o", "json")
    assert plain.returncode == 0 and plain.stderr == ""
    assert bootstrap("--envoy-args").stdout == "\n"


def test_bad_inputs_are_usage_errors_naming_the_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: networking.istio.io/v1beta1\nkind: ProxyConfig\n"
        "metadata: {name: x, namespace: shop}\nspec: {concurrency: many}\n"
    )
    done = bootstrap("--config", str(bad))
    assert done.returncode == 2 and f"--config {bad}:4" in done.stderr
    done = bootstrap("--annotation", "proxy.istio.io/config=concurrency: [")
    assert done.returncode == 2 and "proxy.istio.io/config: not YAML" in done.stderr
    assert bootstrap("--annotation", "novalue").returncode == 2
    done = bootstrap("--config", str(tmp_path / "absent"))
    assert done.returncode == 2 and "absent" in done.stderr


async def test_the_mesh_s_proxy_admin_port_is_envoy_s_admin_port_unless_given(
    tmp_path: Path,
) -> None:
    port = free_port()
    (tmp_path / "mesh.yaml").write_text(f"defaultConfig: {{proxyAdminPort: {port}}}\n")
    mesh = ("--mesh", str(tmp_path / "mesh.yaml"))
    done = run_cli("bootstrap", "--node", NODE, *mesh, "-o", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["node"]["metadata"]["ENVOY_ADMIN_ADDRESS"] == f"127.0.0.1:{port}"
    envoy = EnvoyProcess(document, workdir=tmp_path / "envoy").start()
    try:
        assert await envoy.admin_address() == ("127.0.0.1", port)
        info = json.loads((await envoy.admin("/server_info")).body)
        assert info["command_line_options"]["concurrency"] == 1
    finally:
        await envoy.stop()
    given = run_cli("bootstrap", "--node", NODE, *mesh, "--admin-port", "15123", "-o", "json")
    assert json.loads(given.stdout)["admin"]["address"]["socket_address"]["port_value"] == 15123
    plain = run_cli("bootstrap", "--node", NODE, "-o", "json")
    assert json.loads(plain.stdout)["admin"]["address"]["socket_address"]["port_value"] == 15000
