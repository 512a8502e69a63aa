"""Real Envoy accepts every kind of built listener: ``envoy --mode validate``.

The listeners go into a static bootstrap next to the clusters they name.  RDS
and SDS subscriptions read from ADS, so the bootstrap declares an
``ads_config`` on a static ``xds`` cluster at 127.0.0.1:1, which validate mode
never contacts.  Validate mode does load TLS files, so the HTTPS servers use
real PEM files from the e2e harness's throwaway CA.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from envoy.config.bootstrap.v3 import bootstrap_pb2
from envoy.config.core.v3 import config_source_pb2
from envoy.config.listener.v3.listener_pb2 import Listener
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.xds.builders.cluster import ClusterInputs, Discovery, build_cluster
from pilothouse.xds.builders.endpoint import LbEndpointInput
from pilothouse.xds.builders.filter_chain import WeightedCluster
from pilothouse.xds.builders.listener import HTTP_CONNECTION_MANAGER, socket_address
from pilothouse.xds.builders.listener_gateway import GatewayServer, SniRoute, plan_gateway_listeners
from pilothouse.xds.builders.listener_grpc import (
    build_grpc_api_listener,
    build_grpc_server_listener,
    grpc_server_listener_name,
    grpc_server_route_config,
)
from pilothouse.xds.builders.listener_shared import L4Chain, build_shared_outbound_listener
from pilothouse.xds.builders.listener_sidecar import (
    build_inbound_listener,
    build_outbound_listener,
    build_virtual_outbound_listener,
)
from tests.e2e.harness.envoy import envoy_binary
from tests.e2e.harness.tls import ThrowawayCa

LOOPBACK = "127.0.0.1"
CLUSTERS = (
    "outbound|443||a.example.com",
    "outbound|443|v1|b.example.com",
    "outbound|443|v2|b.example.com",
    "outbound|3306||db.example.com",
    "outbound|5432||pg.example.com",
    "outbound|6379||redis.example.com",
    "inbound|8080||",
    "inbound|6379||",
    "inbound|8443||",
    "PassthroughCluster",
    "BlackHoleCluster",
)


@dataclass(frozen=True)
class Pem:
    cert: Path
    key: Path
    ca: Path


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> Pem:
    files = ThrowawayCa(tmp_path_factory.mktemp("certs")).issue("localhost")
    return Pem(files.cert, files.key, files.ca)


def server(spec: dict[str, Any]) -> gateway_pb2.Server:
    return json_format.ParseDict(spec, gateway_pb2.Server())


def gateway_servers(pem: Pem, *, ca: Path | None = None) -> list[GatewayServer]:
    files = {"serverCertificate": str(pem.cert), "privateKey": str(pem.key)}
    mutual_ca = str(ca or pem.ca)
    specs: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"port": {"number": 8080, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}, {}),
        ({"port": {"number": 8080, "name": "http-b", "protocol": "HTTP"}, "hosts": ["b"]}, {}),
        (
            {
                "port": {"number": 8443, "name": "https-simple", "protocol": "HTTPS"},
                "hosts": ["localhost", "*.example.com"],
                "tls": {"mode": "SIMPLE", **files, "minProtocolVersion": "TLSV1_2"},
            },
            {},
        ),
        (
            {
                "port": {"number": 8443, "name": "https-mutual", "protocol": "HTTPS"},
                "hosts": ["mutual.local"],
                "tls": {
                    "mode": "MUTUAL",
                    **files,
                    "caCertificates": mutual_ca,
                    "subjectAltNames": ["client.local"],
                },
            },
            {},
        ),
        (
            {
                "port": {"number": 8443, "name": "https-sds", "protocol": "HTTPS"},
                "hosts": ["sds.local"],
                "tls": {"mode": "MUTUAL", "credentialName": "sds-cert"},
            },
            {},
        ),
        (
            {
                "port": {"number": 8443, "name": "https-any", "protocol": "HTTPS"},
                "hosts": ["*"],
                "tls": {"mode": "OPTIONAL_MUTUAL", **files, "caCertificates": mutual_ca},
            },
            {},
        ),
        (
            {
                "port": {"number": 15443, "name": "mesh", "protocol": "HTTPS"},
                "hosts": ["*.svc.cluster.local"],
                "tls": {"mode": "ISTIO_MUTUAL"},
            },
            {},
        ),
        (
            {
                "port": {"number": 9443, "name": "tls", "protocol": "TLS"},
                "hosts": ["*.example.com"],
                "tls": {"mode": "PASSTHROUGH"},
            },
            {
                "tls_routes": (
                    SniRoute(("a.example.com",), (WeightedCluster(CLUSTERS[0]),)),
                    SniRoute(
                        ("b.example.com",),
                        (WeightedCluster(CLUSTERS[1], 75), WeightedCluster(CLUSTERS[2], 25)),
                    ),
                )
            },
        ),
        (
            {"port": {"number": 3306, "name": "mysql", "protocol": "MYSQL"}, "hosts": ["*"]},
            {"tcp_route": (WeightedCluster(CLUSTERS[3]),)},
        ),
        (
            {
                "port": {"number": 5433, "name": "tls-pg", "protocol": "TLS"},
                "hosts": ["pg.example.com"],
                "tls": {"mode": "SIMPLE", **files},
            },
            {"tcp_route": (WeightedCluster(CLUSTERS[4]),)},
        ),
    ]
    return [
        GatewayServer(server(spec), "ingress", "istio-system", address=LOOPBACK, **extra)
        for spec, extra in specs
    ]


def sidecar_listeners(pem: Pem) -> list[Any]:
    tls = json_format.ParseDict(
        {"mode": "SIMPLE", "serverCertificate": str(pem.cert), "privateKey": str(pem.key)},
        gateway_pb2.ServerTLSSettings(),
    )
    return [
        build_outbound_listener(LOOPBACK, 9080, "HTTP", access_log=True),
        build_outbound_listener(LOOPBACK, 50051, "GRPC"),
        build_outbound_listener(
            LOOPBACK, 6379, "TCP", destinations=[WeightedCluster(CLUSTERS[5])], access_log=True
        ),
        build_outbound_listener("0.0.0.0", 9081, "HTTP", capture_none=False),
        build_virtual_outbound_listener(address=LOOPBACK),
        build_shared_outbound_listener(
            "0.0.0.0",
            443,
            [
                L4Chain(("a.example.com",), "", (WeightedCluster(CLUSTERS[0]),), "a"),
                L4Chain(
                    ("*.b.example.com", "b.example.com"),
                    "",
                    (WeightedCluster(CLUSTERS[1], 60), WeightedCluster(CLUSTERS[2], 40)),
                    "b.default",
                ),
                L4Chain((), "10.9.0.0/16", (WeightedCluster(CLUSTERS[3]),), "db"),
            ],
            allow_any=False,
        ),
        build_inbound_listener("127.0.0.2", 8080, "HTTP"),
        build_inbound_listener("127.0.0.2", 6379, "TCP"),
        build_inbound_listener("127.0.0.2", 8443, "HTTP2", tls=tls),
        build_inbound_listener("127.0.0.3", 8080, "HTTP", mtls=MtlsMode.STRICT),
        build_inbound_listener("127.0.0.3", 6379, "TCP", mtls=MtlsMode.STRICT),
        build_inbound_listener("127.0.0.4", 8080, "HTTP", mtls=MtlsMode.PERMISSIVE),
        build_inbound_listener("127.0.0.4", 6379, "TCP", mtls=MtlsMode.PERMISSIVE),
    ]


def grpc_listeners() -> list[Any]:
    """The gRPC server listener, and the API listener's HCM carried by a plain listener.

    Stock Envoy has no API-listener extension (only Envoy Mobile has one), so it
    refuses ``api_listener``; the HCM inside, which is what gRPC reads, is
    validated on an ordinary listener instead.
    """
    api = build_grpc_api_listener("greeter.local:50051", rds_name="greeter.local:50051")
    carrier = Listener(name="api-listener-hcm", address=socket_address(LOOPBACK, 50053))
    carrier.filter_chains.add().filters.add(
        name=HTTP_CONNECTION_MANAGER, typed_config=api.api_listener.api_listener
    )
    name = grpc_server_listener_name(LOOPBACK, 50052)
    return [
        carrier,
        build_grpc_server_listener(name, LOOPBACK, 50052, grpc_server_route_config("inbound")),
    ]


def static_cluster(name: str) -> Any:
    return build_cluster(
        ClusterInputs(
            name=name,
            discovery=Discovery.STATIC,
            protocol="GRPC" if name == "xds" else "TCP",
            endpoints=(LbEndpointInput(LOOPBACK, 1),),
        )
    )


def write_bootstrap(path: Path, listeners: list[Any]) -> None:
    bootstrap = bootstrap_pb2.Bootstrap()
    bootstrap.node.id = "router~127.0.0.1~ingress.istio-system~istio-system.svc.cluster.local"
    bootstrap.node.cluster = "validate"
    ads = bootstrap.dynamic_resources.ads_config
    ads.api_type = ads.GRPC
    ads.transport_api_version = config_source_pb2.V3
    ads.grpc_services.add().envoy_grpc.cluster_name = "xds"
    bootstrap.static_resources.clusters.extend(static_cluster(name) for name in ("xds", *CLUSTERS))
    bootstrap.static_resources.listeners.extend(listeners)
    path.write_text(json_format.MessageToJson(bootstrap))


def envoy_validate(path: Path) -> tuple[int, str]:
    command = [str(envoy_binary()), "--mode", "validate", "-c", str(path)]
    result = subprocess.run(
        [*command, "--disable-hot-restart", "-l", "error"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.returncode, result.stdout + result.stderr


def test_listener_envoy_validate_every_kind(tmp_path: Path, pem: Pem) -> None:
    plan = plan_gateway_listeners(gateway_servers(pem))
    assert plan.skipped == ()
    assert [item.name for item in plan.listeners] == [
        "127.0.0.1_3306",
        "127.0.0.1_5433",
        "127.0.0.1_8080",
        "127.0.0.1_8443",
        "127.0.0.1_9443",
        "127.0.0.1_15443",
    ]
    assert len(plan.listeners[3].filter_chains) == 4
    listeners = [*plan.listeners, *sidecar_listeners(pem), *grpc_listeners()]
    bootstrap = tmp_path / "bootstrap.json"
    write_bootstrap(bootstrap, listeners)
    code, output = envoy_validate(bootstrap)
    assert code == 0, output
    assert f"configuration '{bootstrap}' OK" in output


def test_listener_envoy_validation_can_fail(tmp_path: Path, pem: Pem) -> None:
    """The check above has teeth: a MUTUAL server whose CA file is not a certificate fails."""
    bogus = tmp_path / "bogus-ca.pem"
    bogus.write_text("not a certificate\n")
    plan = plan_gateway_listeners(gateway_servers(pem, ca=bogus))
    bootstrap = tmp_path / "bootstrap.json"
    write_bootstrap(bootstrap, list(plan.listeners))
    code, output = envoy_validate(bootstrap)
    assert code != 0
    assert "Failed to load trusted CA certificates" in output
