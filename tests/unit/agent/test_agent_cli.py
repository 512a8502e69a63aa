"""``pilothouse agent``'s flags into an agent: identity, Envoy's command line with the
ProxyConfig's concurrency, and a bootstrap that reaches pilothouse only through the
agent's sockets (nothing is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilothouse.agent.envoy_bootstrap import SDS_GRPC_CLUSTER
from pilothouse.bootstrap.envoy import XDS_GRPC_CLUSTER
from pilothouse.cli import agent as agent_cli
from pilothouse.cli.main import build_parser

NODE = "sidecar~10.0.0.7~ratings-1.shop~shop.svc.cluster.local"
PROXY_CONFIG = """\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: threads, namespace: shop}
spec:
  selector: {matchLabels: {app: ratings}}
  concurrency: 3
  environmentVariables: {ISTIO_META_TEAM: ratings}
"""


def parsed(*flags: str) -> object:
    return build_parser().parse_args(["agent", "--node", NODE, *flags])


def test_the_identity_comes_from_the_node_s_namespace_and_the_account(tmp_path: Path) -> None:
    args = parsed("--service-account", "ratings", "--no-envoy",
                  "--xds-address", "10.1.1.1:15012", "--xds-address", "10.1.1.2:15012",
                  "--sds-socket", str(tmp_path / "sds"))  # fmt: skip
    agent = agent_cli.build(args)  # type: ignore[arg-type]
    assert agent.options.identity.uri == "spiffe://cluster.local/ns/shop/sa/ratings"
    assert agent.options.xds_addresses == ("10.1.1.1:15012", "10.1.1.2:15012")
    assert agent.options.ca.address == "10.1.1.1:15012"
    assert agent.options.sds_socket == tmp_path / "sds"
    assert agent.envoy is None and agent.status is None


def test_envoy_runs_with_istio_agent_s_flags_and_the_proxy_config_s_concurrency(
    tmp_path: Path,
) -> None:
    (tmp_path / "pc.yaml").write_text(PROXY_CONFIG)
    args = parsed("--label", "app=ratings", "--config", str(tmp_path / "pc.yaml"),
                  "--envoy-binary", "/opt/envoy", "--bootstrap", str(tmp_path / "b.json"),
                  "--xds-socket", str(tmp_path / "XDS"), "--sds-socket", str(tmp_path / "S"),
                  "--drain-duration", "20")  # fmt: skip
    agent = agent_cli.build(args)  # type: ignore[arg-type]
    assert agent.envoy is not None
    command = agent.envoy.command.args()
    assert command == [
        "/opt/envoy", "-c", str(tmp_path / "b.json"), "--drain-time-s", "20",
        "--drain-strategy", "immediate", "--local-address-ip-version", "v4",
        "--file-flush-interval-msec", "1000", "--disable-hot-restart",
        "--allow-unknown-static-fields", "--concurrency", "3",
    ]  # fmt: skip
    bootstrap = agent.envoy._bootstrap
    assert bootstrap["node"]["metadata"]["TEAM"] == "ratings"
    assert bootstrap["node"]["metadata"]["SERVICE_ACCOUNT"] == "default"
    clusters = {c["name"]: c for c in bootstrap["static_resources"]["clusters"]}
    for name, path in ((XDS_GRPC_CLUSTER, "XDS"), (SDS_GRPC_CLUSTER, "S")):
        endpoint = clusters[name]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]
        assert endpoint["endpoint"]["address"] == {"pipe": {"path": str(tmp_path / path)}}
        assert "transport_socket" not in clusters[name]
    ads = bootstrap["dynamic_resources"]["ads_config"]
    assert ads["api_type"] == "DELTA_GRPC"  # Istio's default; --xds-transport sotw for GRPC
    assert "initial_metadata" not in ads["grpc_services"][0]


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (("--node", "nonsense"), "node id"),
        (("--xds-address", "nowhere"), "--xds-address"),
        (("--label", "novalue"), "--label must be KEY=VALUE"),
    ],
)
def test_bad_flags_are_refused_with_the_reason(
    flags: tuple[str, ...], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(["agent", "--node", NODE, *flags])
    assert agent_cli.run(args) == 2
    assert problem in capsys.readouterr().err
