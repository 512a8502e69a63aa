"""The node agent against real pilothouse replicas (the real ``serve`` wiring, in
process, TLS port on), with grpcio standing in for Envoy on the agent's Unix sockets.

- SDS on the agent's socket: ``default`` holds a key made by the agent and a chain the
  CA signed for the token's identity; ``ROOTCA`` the CA's root; the server received one
  CSR and made no key.
- Rotation: with a short lifetime the certificate is replaced without Envoy asking, and
  the renewal proves the identity with the current certificate (the token is gone).
- xDS: Envoy's ADS stream is carried to pilothouse over the agent's certificate; SDS
  on it is answered by the agent; when the replica serving it stops, the agent fails
  over to the other and the same Envoy stream gets its configuration again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from envoy.extensions.transport_sockets.tls.v3 import secret_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.agent.sidecar_agent import AgentOptions, SidecarAgent
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_keys import KeyAlgorithm
from tests.integration.tls_served import CDS, Served, node_request, running

SDS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
SECRETS = "/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets"
ADS = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
PRODUCTPAGE = SpiffeId("cluster.local", "bookinfo", "productpage")
NODE = "sidecar~10.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"


@contextlib.asynccontextmanager
async def replica(path: Path) -> AsyncIterator[Served]:
    path.mkdir()
    served = running(path, server_keys=False)  # the agent needs no server-made key
    try:
        yield await served.__anext__()
    finally:
        await served.aclose()


@contextlib.asynccontextmanager
async def agent_for(
    tmp_path: Path, served: Served, *others: Served, ttl: float = 3600.0
) -> AsyncIterator[SidecarAgent]:
    token = tmp_path / "istio-token"
    token.write_text(served.issuer.token("bookinfo", "productpage"))
    root = tmp_path / "root-cert.pem"
    root.write_bytes(served.root_pem())
    options = AgentOptions(
        identity=PRODUCTPAGE,
        xds_addresses=tuple(s.tls_target for s in (served, *others)),
        ca=CaEndpoint(served.tls_target, root, token),
        sds_socket=tmp_path / "sds" / "socket",
        xds_socket=tmp_path / "XDS",
        ttl=ttl,
        key=KeyAlgorithm.ECDSA,
    )
    agent = SidecarAgent(options)
    task = asyncio.create_task(agent.run())
    try:
        async with asyncio.timeout(10):
            await agent.serving.wait()
        yield agent
    finally:
        agent.close()
        await asyncio.wait_for(task, 10)


def stream(channel: grpc.aio.Channel, method: str) -> Any:
    return channel.stream_stream(
        method,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=discovery_pb2.DiscoveryResponse.FromString,
    )()


def secrets(response: Any) -> dict[str, Any]:
    found = {}
    for resource in response.resources:
        secret = secret_pb2.Secret()
        resource.Unpack(secret)
        found[secret.name] = secret
    return found


def leaf(secret: Any) -> x509.Certificate:
    return x509.load_pem_x509_certificates(secret.tls_certificate.certificate_chain.inline_bytes)[0]


async def test_sds_on_the_socket_serves_a_key_made_by_the_agent(tmp_path: Path) -> None:
    async with (
        replica(tmp_path / "a") as served,
        agent_for(tmp_path, served) as agent,
        grpc.aio.insecure_channel(f"unix:{agent.options.sds_socket}") as channel,
    ):
        call = stream(channel, SECRETS)
        await call.write(
            discovery_pb2.DiscoveryRequest(type_url=SDS, resource_names=["default", "ROOTCA"])
        )
        async with asyncio.timeout(10):
            held: dict[str, Any] = {}
            while set(held) != {"default", "ROOTCA"}:
                held.update(secrets(await call.read()))
        call.cancel()
        certificate = leaf(held["default"])
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert names.get_values_for_type(x509.UniformResourceIdentifier) == [PRODUCTPAGE.uri]
        key = serialization.load_pem_private_key(
            held["default"].tls_certificate.private_key.inline_bytes, None
        )
        public = serialization.PublicFormat.SubjectPublicKeyInfo
        der = serialization.Encoding.DER
        assert key.public_key().public_bytes(der, public) == certificate.public_key().public_bytes(
            der, public
        )
        assert held["ROOTCA"].validation_context.trusted_ca.inline_bytes == served.root_pem()
        # the CA saw one CSR; the server's own issuer made no key
        metrics = await served.metrics()
        assert "citadel_server_csr_count 1.0" in metrics, metrics
        assert "citadel_server_success_cert_issuance_count 1.0" in metrics
        assert agent.authority.calls == 1
        assert b"PRIVATE KEY" not in metrics.encode()


async def test_rotation_reaches_the_stream_and_renews_with_the_certificate(tmp_path: Path) -> None:
    async with (
        replica(tmp_path / "a") as served,
        agent_for(tmp_path, served, ttl=6.0) as agent,
        grpc.aio.insecure_channel(f"unix:{agent.options.sds_socket}") as channel,
    ):
        call = stream(channel, SECRETS)
        await call.write(discovery_pb2.DiscoveryRequest(type_url=SDS, resource_names=["default"]))
        async with asyncio.timeout(10):
            first = leaf(secrets(await call.read())["default"])
        (tmp_path / "istio-token").unlink()  # from now on only the certificate proves it
        async with asyncio.timeout(10):
            second = leaf(secrets(await call.read())["default"])
        call.cancel()
        assert second.serial_number != first.serial_number
        assert agent.authority.calls == 2


async def test_ads_is_proxied_and_fails_over_without_breaking_envoy_s_stream(
    tmp_path: Path,
) -> None:
    first_replica = replica(tmp_path / "a")
    first = await first_replica.__aenter__()
    try:
        async with (
            replica(tmp_path / "b") as second,
            agent_for(tmp_path, first, second) as agent,
            grpc.aio.insecure_channel(f"unix:{agent.options.xds_socket}") as channel,
        ):
            call = stream(channel, ADS)
            await call.write(node_request(NODE, {"NAMESPACE": "bookinfo"}))
            async with asyncio.timeout(15):
                clusters = await call.read()
            assert clusters.type_url == CDS and clusters.resources
            ack = discovery_pb2.DiscoveryRequest(
                type_url=CDS, version_info=clusters.version_info, response_nonce=clusters.nonce
            )
            await call.write(ack)
            await call.write(
                discovery_pb2.DiscoveryRequest(type_url=SDS, resource_names=["default"])
            )
            async with asyncio.timeout(10):
                answer = await call.read()
            assert answer.type_url == SDS and set(secrets(answer)) == {"default"}
            assert agent.upstream.address == first.tls_target
            # the replica carrying the stream goes away ...
            await first_replica.__aexit__(None, None, None)
            first_replica = None
            async with asyncio.timeout(15):
                again = await call.read()
            # ... and the same Envoy stream is served by the other, which was sent the
            # subscription again (with the node: it answers for the same proxy)
            assert again.type_url == CDS
            assert len(again.resources) == len(clusters.resources)
            assert agent.upstream.address == second.tls_target
            assert agent.upstream.connects == 2
            assert not call.done()
            call.cancel()
    finally:
        if first_replica is not None:
            await first_replica.__aexit__(None, None, None)
