"""xDS on the TLS port: authenticated streams, the identity check, and what only the
root namespace may ask for (MCP-over-xDS, legacy MCP, debug types). The plaintext port
is unchanged: unauthenticated, with no caller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2
from pilothouse.security.identity import ProvedBy, SpiffeId
from tests.integration.tls_served import ADS, CDS, Served, first_answer, node_request, running

PRODUCTPAGE = "sidecar~10.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
ISTIOD = "sidecar~10.0.0.9~istiod-1.istio-system~istio-system.svc.cluster.local"
SERVICE_ENTRIES = "networking.istio.io/v1/ServiceEntry"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async for value in running(tmp_path):
        yield value


async def refusal(
    served: Served, request: object, metadata: list[tuple[str, str]]
) -> grpc.aio.AioRpcError:
    async with served.channel() as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await first_answer(channel, request, metadata)
    return failure.value


async def test_a_proxy_with_a_token_for_its_namespace_gets_its_clusters(served: Served) -> None:
    request = node_request(
        PRODUCTPAGE, {"NAMESPACE": "bookinfo", "SERVICE_ACCOUNT": "bookinfo-productpage"}
    )
    async with served.channel() as channel:
        answer = await first_answer(
            channel, request, served.bearer("bookinfo", "bookinfo-productpage")
        )
    assert answer.type_url == CDS
    assert len(answer.resources) > 3


async def test_a_tls_stream_keeps_its_caller_and_a_plaintext_one_has_none(served: Served) -> None:
    request = node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"})
    async with served.channel() as channel:
        call = channel.stream_stream(
            ADS,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=lambda b: b,
        )(metadata=tuple(served.bearer("bookinfo", "bookinfo-productpage")))
        await call.write(request)
        await call.read()
        (connection,) = served.discovery.connections.values()
        caller = connection.proxy.caller
        assert caller is not None and caller.proved_by is ProvedBy.JWT
        assert caller.identities == (SpiffeId("cluster.local", "bookinfo", "bookinfo-productpage"),)
        call.cancel()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{served.bound.xds_port}") as channel:
        call = channel.stream_stream(
            ADS,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=lambda b: b,
        )()
        await call.write(request)
        await call.read()
        plain = [c for c in served.discovery.connections.values() if c.proxy.caller is None]
        assert len(plain) == 1  # the plaintext port: no caller
        call.cancel()


async def test_a_stream_without_credentials_is_unauthenticated(served: Served) -> None:
    failure = await refusal(served, node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"}), [])
    assert failure.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "authentication failed" in (failure.details() or "")


async def test_another_namespace_is_permission_denied_naming_it(served: Served) -> None:
    failure = await refusal(
        served,
        node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"}),
        served.bearer("shop", "productpage"),
    )
    assert failure.code() is grpc.StatusCode.PERMISSION_DENIED
    details = failure.details() or ""
    assert "'bookinfo'" in details and "spiffe://cluster.local/ns/shop/sa/productpage" in details


async def test_another_service_account_is_permission_denied(served: Served) -> None:
    failure = await refusal(
        served,
        node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo", "SERVICE_ACCOUNT": "admin"}),
        served.bearer("bookinfo", "bookinfo-productpage"),
    )
    assert failure.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "service account 'admin'" in (failure.details() or "")


async def test_mcp_over_xds_needs_the_root_namespace(served: Served) -> None:
    api_node = {"NAMESPACE": "bookinfo", "GENERATOR": "api"}
    failure = await refusal(
        served,
        node_request(PRODUCTPAGE, api_node, SERVICE_ENTRIES),
        served.bearer("bookinfo", "bookinfo-productpage"),
    )
    assert failure.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "istio-system" in (failure.details() or "")

    request = node_request(
        ISTIOD, {"NAMESPACE": "istio-system", "GENERATOR": "api"}, SERVICE_ENTRIES
    )
    async with served.channel() as channel:
        answer = await first_answer(channel, request, served.bearer("istio-system", "istiod"))
    assert answer.type_url == SERVICE_ENTRIES
    assert len(answer.resources) > 0


async def test_debug_types_need_the_root_namespace_even_from_loopback(served: Served) -> None:
    syncz = "istio.io/debug/syncz"
    failure = await refusal(
        served,
        node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo", "GENERATOR": "event"}, syncz),
        served.bearer("bookinfo", "bookinfo-productpage"),
    )
    assert failure.code() is grpc.StatusCode.PERMISSION_DENIED
    (denied,) = served.discovery.admission.refusals.recent()  # recorded, with the node
    assert (denied.reason, denied.node_id) == ("permission_denied", PRODUCTPAGE)
    request = node_request(ISTIOD, {"NAMESPACE": "istio-system", "GENERATOR": "event"}, syncz)
    async with served.channel() as channel:
        answer = await first_answer(channel, request, served.bearer("istio-system", "istiod"))
    assert answer.type_url == syncz


async def test_legacy_mcp_needs_the_root_namespace(served: Served) -> None:
    method = "/istio.mcp.v1alpha1.ResourceSource/EstablishResourceStream"
    request = mcp_pb2.RequestResources(collection="istio/networking/v1alpha3/serviceentries")
    request.sink_node.id = "sink"
    for metadata, code in (
        (served.bearer("bookinfo", "bookinfo-productpage"), grpc.StatusCode.PERMISSION_DENIED),
        ([], grpc.StatusCode.UNAUTHENTICATED),
    ):
        async with served.channel() as channel:
            call = channel.stream_stream(
                method,
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=mcp_pb2.Resources.FromString,
            )(metadata=tuple(metadata))
            await call.write(request)
            with pytest.raises(grpc.aio.AioRpcError) as failure:
                async for _ in call:
                    break
            assert failure.value.code() is code
    # both refusals are recorded, as the xDS streams' are (not in the admission counters)
    recorded = [(e.reason, e.message) for e in served.discovery.admission.refusals.recent()]
    assert [reason for reason, _ in recorded] == ["permission_denied", "unauthenticated"]
    assert "MCP needs an identity in namespace 'istio-system'" in recorded[0][1]
    async with served.channel() as channel:
        call = channel.stream_stream(
            method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=mcp_pb2.Resources.FromString,
        )(metadata=tuple(served.bearer("istio-system", "istiod")))
        await call.write(request)
        async for answer in call:
            assert answer.collection == request.collection
            break
        call.cancel()


async def test_refusals_are_counted_by_reason(served: Served) -> None:
    await refusal(served, node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"}), [])
    await refusal(
        served,
        node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"}),
        served.bearer("shop", "productpage"),
    )
    text = await served.metrics()
    assert 'reason="unauthenticated"} 1.0' in text
    assert 'reason="permission_denied"} 1.0' in text


async def test_the_plaintext_port_stays_unauthenticated(served: Served) -> None:
    request = node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"})
    async with grpc.aio.insecure_channel(f"127.0.0.1:{served.bound.xds_port}") as channel:
        answer = await first_answer(channel, request)
    assert answer.type_url == CDS
