"""`pilothouse bootstrap` prints bootstraps that real Envoy accepts, and refuses bad nodes.

The command only prints, so most tests run it in this process (``run_cli``: the same
parser and code); the gRPC bootstrap and the bad node run it as the process a user starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness.cli_in_process import Ran, run_cli
from tests.e2e.harness.envoy import validate_bootstrap

NODE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"


def bootstrap(*args: str) -> Ran:
    return run_cli("bootstrap", *args)


def bootstrap_process(*args: str) -> subprocess.CompletedProcess[str]:
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
    done = bootstrap_process("--node", NODE, "--grpc", "--xds-address", "127.0.0.1:25010")
    document = json.loads(done.stdout)
    assert document["xds_servers"][0]["server_uri"] == "127.0.0.1:25010"
    assert document["xds_servers"][0]["server_features"] == ["xds_v3"]
    assert document["node"]["metadata"]["GENERATOR"] == "grpc"
    assert document["server_listener_resource_name_template"] == "xds.istio.io/grpc/lds/inbound/%s"


def test_bad_node_is_a_usage_error() -> None:
    done = bootstrap_process("--node", "nonsense")
    assert done.returncode == 2 and "expected 4" in done.stderr


async def test_tls_bootstraps_are_accepted_and_carry_the_token(tmp_path: Path) -> None:
    import os

    from tests.unit.security.certs import ca_cert, ec_key, key_pem, pem

    root = Path(os.environ["PILOTHOUSE_CA_DIR"]) / "root-cert.pem"
    token = tmp_path / "token"
    token.write_text("header.payload.signature\n")
    key = ec_key()
    (tmp_path / "cert.pem").write_bytes(pem(ca_cert(key, "proxy")))
    (tmp_path / "key.pem").write_bytes(key_pem(key))
    for extra in (
        ["--xds-token-file", str(token)],
        ["--xds-tls-cert", str(tmp_path / "cert.pem"), "--xds-tls-key", str(tmp_path / "key.pem")],
    ):
        done = bootstrap("--node", NODE, "--xds-tls-root", str(root), "-o", "json", *extra)
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        cluster = document["static_resources"]["clusters"][0]
        assert cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"][
            "socket_address"
        ] == {"address": "127.0.0.1", "port_value": 15012}
        tls = cluster["transport_socket"]["typed_config"]["common_tls_context"]
        assert tls["validation_context"]["trusted_ca"] == {"filename": str(root)}
        service = document["dynamic_resources"]["ads_config"]["grpc_services"][0]
        if "--xds-token-file" in extra:
            assert service["initial_metadata"] == [
                {"key": "authorization", "value": "Bearer header.payload.signature"}
            ]
        else:
            assert "initial_metadata" not in service
            assert tls["tls_certificates"][0]["private_key"] == {
                "filename": str(tmp_path / "key.pem")
            }
        path = tmp_path / "envoy.json"
        path.write_text(done.stdout)
        ok, output = await validate_bootstrap(path)
        assert ok, output


def test_tls_options_without_a_root_are_a_usage_error() -> None:
    done = bootstrap("--node", NODE, "--xds-token-file", "/nonexistent")
    assert done.returncode == 2 and "--xds-tls-root" in done.stderr
    done = bootstrap("--node", NODE, "--grpc", "--xds-tls-root", "/x")
    assert done.returncode == 2 and "Envoy over gRPC" in done.stderr


def test_labels_go_into_the_node_metadata() -> None:
    done = bootstrap("--node", NODE, "-o", "json", "--label", "istio=ingressgateway",
                     "--label", "replica=a")  # fmt: skip
    assert done.returncode == 0, done.stderr
    labels = json.loads(done.stdout)["node"]["metadata"]["LABELS"]
    assert labels == {"istio": "ingressgateway", "replica": "a"}
    assert bootstrap("--node", NODE, "--label", "nokey").returncode == 2
