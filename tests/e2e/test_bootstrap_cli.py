"""`pilothouse bootstrap` prints bootstraps that real Envoy accepts, and refuses bad nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness.envoy import validate_bootstrap

NODE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"


def bootstrap(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "bootstrap", *args],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip


@pytest.mark.parametrize("flavour", [[], ["--delta"], ["--rest"], ["-o", "json"]])
async def test_envoy_accepts_the_bootstrap(tmp_path: Path, flavour: list[str]) -> None:
    done = bootstrap("--node", NODE, "--xds-address", "127.0.0.1:25010", *flavour)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "envoy.yaml"
    path.write_text(done.stdout)
    ok, output = await validate_bootstrap(path)
    assert ok, output
    assert NODE in done.stdout


def test_grpc_bootstrap() -> None:
    done = bootstrap("--node", NODE, "--grpc", "--xds-address", "127.0.0.1:25010")
    document = json.loads(done.stdout)
    assert document["xds_servers"][0]["server_uri"] == "127.0.0.1:25010"
    assert document["xds_servers"][0]["server_features"] == ["xds_v3"]
    assert document["node"]["metadata"]["GENERATOR"] == "grpc"
    assert document["server_listener_resource_name_template"] == "xds.istio.io/grpc/lds/inbound/%s"


def test_bad_node_is_a_usage_error() -> None:
    done = bootstrap("--node", "nonsense")
    assert done.returncode == 2 and "expected 4" in done.stderr
