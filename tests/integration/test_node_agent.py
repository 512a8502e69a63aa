"""Node mode against a real pilothouse (the real ``serve`` wiring, in process, no
server-made keys): one agent for two workloads of a node, grpcio standing in for each
workload's Envoy on its own sockets.

The test process runs as one uid, which the agent's config gives to ``reviews`` only;
``ratings`` belongs to another uid. So ``reviews``' sockets serve this process its own
certificate and configuration, and ``ratings``' sockets refuse it: the caller's peer
credentials, not the socket it picked, decide which identity it gets, and a workload
never obtains another's certificate (the agent holds ``ratings``' certificate all the
same).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from envoy.extensions.transport_sockets.tls.v3 import secret_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.agent.node_agent import NodeAgent, NodeConfigError, read_node_config
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_keys import KeyAlgorithm
from tests.integration.tls_served import CDS, node_request, running

SDS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
SECRETS = "/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets"
ADS = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
REVIEWS = SpiffeId("cluster.local", "bookinfo", "reviews")
RATINGS = SpiffeId("cluster.local", "bookinfo", "ratings")
NODE = "sidecar~10.0.0.2~reviews-v1.bookinfo~bookinfo.svc.cluster.local"


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[tuple[NodeAgent, Path]]:
    async for served in running(tmp_path, server_keys=False):
        root = tmp_path / "root-cert.pem"
        root.write_bytes(served.root_pem())
        me = os.getuid()
        text = f"xdsAddresses: [{served.tls_target}]\nrootCert: {root}\nworkloads:\n"
        for name, uid in (("reviews", me), ("ratings", me + 1)):
            home = tmp_path / name
            home.mkdir()
            (home / "istio-token").write_text(served.issuer.token("bookinfo", name))
            text += (
                f"- {{name: {name}, namespace: bookinfo, serviceAccount: {name}, "
                f"uids: [{uid}], token: {home / 'istio-token'}, "
                f"sdsSocket: {home / 'sds'}, xdsSocket: {home / 'XDS'}}}\n"
            )
        agent = NodeAgent(
            read_node_config(text, "node.yaml"), tmp_path / "private", key=KeyAlgorithm.ECDSA
        )
        task = asyncio.create_task(agent.run())
        try:
            async with asyncio.timeout(10):
                await agent.serving.wait()
            yield agent, tmp_path
        finally:
            agent.close()
            await asyncio.wait_for(task, 10)


def stream(channel: grpc.aio.Channel, method: str) -> grpc.aio.StreamStreamCall:  # type: ignore[type-arg]
    return channel.stream_stream(
        method,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=discovery_pb2.DiscoveryResponse.FromString,
    )()


async def workload_certificate(socket: Path) -> x509.Certificate:
    async with grpc.aio.insecure_channel(f"unix:{socket}") as channel:
        call = stream(channel, SECRETS)
        await call.write(discovery_pb2.DiscoveryRequest(type_url=SDS, resource_names=["default"]))
        async with asyncio.timeout(10):
            response = await call.read()
        call.cancel()
    secret = secret_pb2.Secret()
    response.resources[0].Unpack(secret)
    chain = secret.tls_certificate.certificate_chain.inline_bytes
    return x509.load_pem_x509_certificates(chain)[0]


def uri(certificate: x509.Certificate) -> list[str]:
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return names.get_values_for_type(x509.UniformResourceIdentifier)


async def test_each_caller_gets_its_own_identity_and_no_other(
    node: tuple[NodeAgent, Path],
) -> None:
    agent, home = node
    assert uri(await workload_certificate(home / "reviews" / "sds")) == [REVIEWS.uri]
    # ratings' own agent holds its certificate, but this uid is not ratings'
    ratings = agent.workloads["ratings"]
    await asyncio.wait_for(ratings.identity.issued(RATINGS), 10)
    for socket in (home / "ratings" / "sds", home / "ratings" / "XDS"):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await workload_certificate(socket)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    refusals = {gate.public.name: gate.refused for gate in agent.gates if gate.name == "ratings"}
    assert refusals == {"sds": 1, "XDS": 1}
    # the private sockets behind the gates are the agent's alone
    assert (home / "private").stat().st_mode & 0o777 == 0o700


async def test_a_workload_s_xds_goes_to_pilothouse_as_that_workload(
    node: tuple[NodeAgent, Path],
) -> None:
    agent, home = node
    async with grpc.aio.insecure_channel(f"unix:{home / 'reviews' / 'XDS'}") as channel:
        call = stream(channel, ADS)
        await call.write(node_request(NODE, {"NAMESPACE": "bookinfo"}))
        async with asyncio.timeout(15):
            clusters = await call.read()
        call.cancel()
    assert clusters.type_url == CDS and clusters.resources
    reviews = agent.workloads["reviews"]
    assert reviews.xds.responses >= 1 and agent.workloads["ratings"].xds.responses == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("workloads: []\nrootCert: r", "at least one workload"),
        ("rootCert: r\nworkloads: [{name: a}]", "workloads[0].namespace: required"),
        (
            "rootCert: r\nworkloads:\n"
            "- {name: a, namespace: n, serviceAccount: a, uids: [5], token: t, sdsSocket: s,"
            " xdsSocket: x}\n"
            "- {name: b, namespace: n, serviceAccount: b, uids: [5], token: t, sdsSocket: s,"
            " xdsSocket: x}\n",
            "uid 5 is given to a and b",
        ),
    ],
)
def test_a_bad_config_is_refused_with_where(text: str, problem: str) -> None:
    with pytest.raises(NodeConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        read_node_config(text, "node.yaml")
