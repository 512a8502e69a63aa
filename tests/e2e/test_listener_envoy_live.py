"""A real Envoy terminates TLS with the built gateway listeners and carries HTTPS traffic.

The HTTPS listeners come from ``build_gateway_listeners`` (SIMPLE and MUTUAL,
PEM files from the harness's throwaway CA); for a static bootstrap their
HCMs get an inline route configuration instead of RDS.  The client checks the
gateway's certificate against the CA, so a 200 from the local upstream proves
the TLS context, the SNI match and the HCM work together; an unknown SNI and
a MUTUAL handshake without a client certificate must fail.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from envoy.config.bootstrap.v3 import bootstrap_pb2
from envoy.config.route.v3 import route_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.xds.builders.cluster import ClusterInputs, Discovery, build_cluster
from pilothouse.xds.builders.endpoint import LbEndpointInput
from pilothouse.xds.builders.listener import socket_address
from pilothouse.xds.builders.listener_gateway import GatewayServer, build_gateway_listeners
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.ports import LOOPBACK, free_ports, wait_for_port
from tests.e2e.harness.tls import CertificateFiles, ThrowawayCa, client_ssl_context
from tests.e2e.harness.upstreams import Upstream

CLUSTER = "outbound|8080||backend.default.svc.cluster.local"


@dataclass(frozen=True)
class Gateway:
    envoy: EnvoyProcess
    simple_port: int
    mutual_port: int
    server: CertificateFiles
    client: CertificateFiles


def inline_routes(listener: Any) -> None:
    """Swap each chain's RDS subscription for a route config sending everything to CLUSTER."""
    config = route_pb2.RouteConfiguration(name="live")
    host = config.virtual_hosts.add(name="all", domains=["*"])
    route = host.routes.add()
    route.match.prefix = "/"
    route.route.cluster = CLUSTER
    for chain in listener.filter_chains:
        manager = hcm_pb2.HttpConnectionManager()
        assert chain.filters[0].typed_config.Unpack(manager)
        assert manager.HasField("rds")
        manager.route_config.CopyFrom(config)
        chain.filters[0].typed_config.Pack(manager)


def bootstrap(
    upstream: Upstream, ports: tuple[int, int], files: CertificateFiles
) -> dict[str, Any]:
    simple_port, mutual_port = ports
    certificates = {"serverCertificate": str(files.cert), "privateKey": str(files.key)}
    servers = [
        GatewayServer(
            json_format.ParseDict(spec, gateway_pb2.Server()),
            "ingress",
            "istio-system",
            address=LOOPBACK,
        )
        for spec in (
            {
                "port": {"number": simple_port, "name": "https", "protocol": "HTTPS"},
                "hosts": ["localhost"],
                "tls": {"mode": "SIMPLE", **certificates},
            },
            {
                "port": {"number": mutual_port, "name": "https-mtls", "protocol": "HTTPS"},
                "hosts": ["localhost"],
                "tls": {"mode": "MUTUAL", **certificates, "caCertificates": str(files.ca)},
            },
        )
    ]
    listeners = build_gateway_listeners(servers)
    for listener in listeners:
        inline_routes(listener)
    config = bootstrap_pb2.Bootstrap()
    config.node.id = "router~127.0.0.1~ingress.istio-system~istio-system.svc.cluster.local"
    config.node.cluster = "live"
    config.admin.address.CopyFrom(socket_address(LOOPBACK, 0))
    config.static_resources.listeners.extend(listeners)
    config.static_resources.clusters.append(
        build_cluster(
            ClusterInputs(
                name=CLUSTER,
                discovery=Discovery.STATIC,
                protocol="HTTP",
                endpoints=(LbEndpointInput(LOOPBACK, upstream.port),),
            )
        )
    )
    result: dict[str, Any] = json_format.MessageToDict(config)
    return result


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    ca = ThrowawayCa(tmp_path / "certs")
    server = ca.issue("gateway", ("localhost",))
    client = ca.issue("client", ("client.local",), client=True)
    ports = free_ports(2)
    async with Upstream("backend") as upstream:
        envoy = EnvoyProcess(bootstrap(upstream, (ports[0], ports[1]), server), workdir=tmp_path)
        async with envoy:
            await envoy.wait_ready()
            for port in ports:
                await wait_for_port(port)
            yield Gateway(envoy, ports[0], ports[1], server, client)


async def test_listener_envoy_live_https_simple(gateway: Gateway) -> None:
    report = await send_requests(
        LOOPBACK,
        gateway.simple_port,
        5,
        authority="localhost",
        ssl_context=client_ssl_context(gateway.server.ca),
        server_hostname="localhost",
    )
    assert report.ok == 5, report.summary()
    assert report.upstreams == {"backend": 5}


async def test_listener_envoy_live_unknown_sni_finds_no_chain(gateway: Gateway) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    report = await send_requests(
        LOOPBACK,
        gateway.simple_port,
        1,
        ssl_context=context,
        server_hostname="unknown.example.com",
        total_timeout=5.0,
    )
    assert report.ok == 0, report.summary()
    assert report.errors, report.summary()
    stat = f"listener.{LOOPBACK}_{gateway.simple_port}.no_filter_chain_match"
    assert await gateway.envoy.stat(stat) == 1


async def test_listener_envoy_live_https_mutual(gateway: Gateway) -> None:
    ca = gateway.server.ca
    with_certificate = await send_requests(
        LOOPBACK,
        gateway.mutual_port,
        3,
        authority="localhost",
        ssl_context=client_ssl_context(ca, gateway.client.cert, gateway.client.key),
        server_hostname="localhost",
    )
    assert with_certificate.ok == 3, with_certificate.summary()
    without = await send_requests(
        LOOPBACK,
        gateway.mutual_port,
        1,
        authority="localhost",
        ssl_context=client_ssl_context(ca),
        server_hostname="localhost",
        total_timeout=5.0,
    )
    assert without.ok == 0, without.summary()
    assert without.errors, without.summary()
    stat = f"listener.{LOOPBACK}_{gateway.mutual_port}.ssl.fail_verify_no_cert"
    assert await gateway.envoy.stat(stat) == 1
