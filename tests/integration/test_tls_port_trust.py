"""Trust on the real TLS port: a connection whose call was authenticated (a valid
token) stays open past ``PILOTHOUSE_XDS_TLS_AUTH_TIMEOUT``; one whose calls are all
refused (a token from an unknown issuer) is closed when it runs out, and the refusals
are recorded with the peer and the node it claimed. In-process ``serve()`` with a
grpcio client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.integration.tls_served import ADS, Served, node_request, running
from tests.unit.security.tokens import Issuer

PRODUCTPAGE = "sidecar~10.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
AUTH_TIMEOUT = 0.5


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async for value in running(tmp_path, tls_auth_timeout=AUTH_TIMEOUT):
        yield value


def ads_call(channel: grpc.aio.Channel, metadata: list[tuple[str, str]]) -> Any:
    return channel.stream_stream(
        ADS, request_serializer=lambda m: m.SerializeToString(), response_deserializer=lambda b: b
    )(metadata=tuple(metadata))


async def test_an_authenticated_connection_outlives_the_deadline(served: Served) -> None:
    request = node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"})
    async with served.channel() as channel:
        call = ads_call(channel, served.bearer("bookinfo", "bookinfo-productpage"))
        await call.write(request)
        await call.read()
        await asyncio.sleep(3 * AUTH_TIMEOUT)
        assert len(served.discovery.connections) == 1  # the stream is still there
        assert channel.get_state() is grpc.ChannelConnectivity.READY
        call.cancel()
    assert "tls_auth_timeout" not in served.discovery.admission.refusals.counts()


async def test_a_connection_whose_calls_are_refused_is_closed_at_the_deadline(
    served: Served,
) -> None:
    stranger = Issuer()
    request = node_request(PRODUCTPAGE, {"NAMESPACE": "bookinfo"})
    metadata = [("authorization", f"Bearer {stranger.token('bookinfo', 'bookinfo-productpage')}")]
    async with served.channel() as channel:
        call = ads_call(channel, metadata)
        await call.write(request)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call.read()
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        refusals = served.discovery.admission.refusals
        async with asyncio.timeout(10 * AUTH_TIMEOUT):
            while "tls_auth_timeout" not in refusals.counts():
                await asyncio.sleep(0.05)
    entries = {entry.reason: entry for entry in refusals.recent()}
    assert entries["unauthenticated"].node_id == PRODUCTPAGE
    assert entries["unauthenticated"].peer.startswith("ipv4:127.0.0.1:")
    assert entries["tls_auth_timeout"].peer == entries["unauthenticated"].peer
