"""SDS over the TLS xDS port with grpcio's real client: a stream authenticated with a
service account token gets its workload certificate and the roots; a stream on the
plaintext port gets nothing at all, and is counted."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from envoy.extensions.transport_sockets.tls.v3 import secret_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import SDS
from pilothouse.security import ca_dir
from pilothouse.xds.server.ads import ADS_SERVICE
from tests.integration.ads_stream import SOTW, AdsStream, open_ads, sotw_request
from tests.integration.metrics_scrape import parse
from tests.integration.serve_in_process import serve_in_process
from tests.unit.security.server_certs import write_pair
from tests.unit.security.tokens import ISSUER, Issuer

NODE = "router~127.0.0.1~ingress-1.edge~edge.svc.cluster.local"
IDENTITY = "spiffe://cluster.local/ns/edge/sa/ingress"


def secrets_of(response: Any) -> dict[str, Any]:
    out = {}
    for packed in response.resources:
        secret = secret_pb2.Secret()
        assert packed.Unpack(secret)
        out[secret.name] = secret
    return out


async def open_tls_ads(port: int, root: bytes, token: str) -> AdsStream:
    credentials = grpc.ssl_channel_credentials(root_certificates=root)
    channel = grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials)
    call = channel.stream_stream(
        f"/{ADS_SERVICE}/{SOTW}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )(metadata=(("authorization", f"Bearer {token}"),))
    return AdsStream(channel, call, delta=False)


async def test_a_token_authenticated_stream_gets_its_secrets_and_a_plaintext_one_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    issuer = Issuer()
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    cert, _ = write_pair(secrets, "shop", "shop.example.test")
    config = tmp_path / "mesh"
    config.mkdir()
    ca = os.environ["PILOTHOUSE_CA_DIR"]  # tests/conftest.py: made once for the suite
    overrides = {
        "xds.tls_address": "127.0.0.1:0",
        "sds.server_keys": True,  # these proxies have no node agent
        "ca.dir": ca,
        "auth.jwt_issuers": (f"{ISSUER}={jwks}",),
        "sds.secrets_dir": str(secrets),
    }
    root = (Path(ca) / ca_dir.ROOT_CERT).read_bytes()
    names = ["default", "ROOTCA", "kubernetes://shop", "kubernetes://missing"]
    async with serve_in_process(monkeypatch, config, overrides) as running:
        plain = await open_ads(running.bound.xds_port)
        tls = await open_tls_ads(running.bound.xds_tls_port, root, issuer.token("edge", "ingress"))
        try:
            await plain.send(sotw_request(SDS, NODE, resource_names=names))
            await tls.send(sotw_request(SDS, NODE, resource_names=names))
            held: dict[str, Any] = {}
            async with asyncio.timeout(20):
                while "default" not in held:
                    response = await tls.read(20)
                    assert response.type_url == SDS
                    held.update(secrets_of(response))
                    ack = discovery_pb2.DiscoveryRequest(
                        type_url=SDS,
                        resource_names=names,
                        version_info=response.version_info,
                        response_nonce=response.nonce,
                    )
                    await tls.send(ack.SerializeToString())
            with pytest.raises(TimeoutError):
                await plain.read(1.0)
            scraped = parse((await running.request("GET", "/metrics")).body)
        finally:
            await plain.close()
            await tls.close()
    assert set(held) == {"default", "ROOTCA", "kubernetes://shop"}
    chain = held["default"].tls_certificate.certificate_chain.inline_bytes
    leaf = x509.load_pem_x509_certificates(chain)[0]
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.UniformResourceIdentifier) == [IDENTITY]
    trusted = held["ROOTCA"].validation_context.trusted_ca.inline_bytes
    assert root.strip() in trusted
    assert held["kubernetes://shop"].tls_certificate.certificate_chain.inline_bytes == cert
    # the plaintext stream was refused all four names, once each
    assert scraped.sample("pilot_sds_certificate_errors_total") == 4
    assert scraped.sample("pilot_xds_pushes", type="sds") >= 2
