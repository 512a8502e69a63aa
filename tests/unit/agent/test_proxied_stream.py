"""What the agent sends a new pilothouse replica when it takes Envoy's stream over, and
what it makes of Envoy's later requests (no network: the stream is fed by hand)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.agent.xds_proxy import ProxiedStream
from pilothouse.protocol.type_urls import CDS, EDS, LDS, SDS
from pilothouse.xds.protocol.wire import sotw_response


class Identity:
    """What the stream reads of the agent's certificates: nothing held."""

    primary = None

    def secret(self, identity: Any, name: str) -> bytes | None:
        return None

    def on_change(self, listener: Any) -> Any:
        return lambda: None


class Upstream:
    """The agent's upstream as the stream reports to it."""

    def succeeded(self) -> None:
        return None


def request(type_url: str, names: tuple[str, ...] = (), nonce: str = "", node: str = "") -> bytes:
    message = discovery_pb2.DiscoveryRequest(
        type_url=type_url, resource_names=names, response_nonce=nonce, version_info="v9"
    )
    if node:
        message.node.id = node
    return bytes(message.SerializeToString())


async def feed(stream: ProxiedStream, bodies: list[bytes]) -> None:
    async def requests() -> AsyncIterator[bytes]:
        for body in bodies:
            yield body

    await stream._read_envoy(requests())


def test_resend_is_every_subscription_in_push_order_with_node_first_and_no_nonce() -> None:
    stream = ProxiedStream(None, Identity(), None)  # type: ignore[arg-type]
    asyncio.run(
        feed(
            stream,
            [
                request(LDS, node="sidecar~1.1.1.1~a.ns~ns.svc.cluster.local"),
                request(CDS, nonce="old-1"),
                request(EDS, ("outbound|80||a.ns.svc.cluster.local",), nonce="old-2"),
                request(SDS, ("default",)),
            ],
        )
    )
    sent = [discovery_pb2.DiscoveryRequest.FromString(b) for b in stream.resend()]
    assert [s.type_url for s in sent] == [CDS, EDS, LDS]  # SDS stays with the agent
    assert sent[0].node.id == "sidecar~1.1.1.1~a.ns~ns.svc.cluster.local"
    assert not any(s.HasField("node") for s in sent[1:])
    assert all(s.response_nonce == "" and s.version_info == "" for s in sent)
    assert list(sent[1].resource_names) == ["outbound|80||a.ns.svc.cluster.local"]
    assert stream.secrets.watched == {"default"}


def test_an_old_server_s_nonce_becomes_the_new_server_s() -> None:
    stream = ProxiedStream(Upstream(), Identity(), None)  # type: ignore[arg-type]
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    stream._queue = queue
    stream._node_sent = True
    stream._nonces = {"new-1"}
    stream._latest = {CDS: "new-1"}

    async def relayed() -> None:
        async def sink(body: bytes) -> None:
            return None

        stream._write = sink
        await stream._response(sotw_response("2", LDS, "new-2", []))

    asyncio.run(relayed())
    asyncio.run(feed(stream, [request(CDS, nonce="old-7"), request(LDS, nonce="new-2")]))
    first = discovery_pb2.DiscoveryRequest.FromString(queue.get_nowait())
    second = discovery_pb2.DiscoveryRequest.FromString(queue.get_nowait())
    assert first.response_nonce == "new-1"  # the old server's nonce is replaced
    assert second.response_nonce == "new-2"  # the new server's own is kept


class FinishedCall:
    """An upstream call that is over: writes raise as grpc.aio's do, reads end."""

    async def write(self, body: bytes) -> None:
        raise asyncio.InvalidStateError("RPC already finished.")

    async def read(self) -> object:
        await asyncio.sleep(0)
        return grpc.aio.EOF

    def cancel(self) -> bool:
        return True


class FinishedChannel:
    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return lambda: FinishedCall()


class CountingUpstream(Upstream):
    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def channel(self) -> Any:
        return FinishedChannel()

    async def failed(self, channel: Any, reason: str) -> None:
        self.reasons.append(reason)
        if len(self.reasons) == 3:
            raise asyncio.CancelledError  # the test has seen enough


def test_a_broken_upstream_call_is_retried_and_never_ends_envoy_s_stream() -> None:
    upstream = CountingUpstream()
    stream = ProxiedStream(upstream, Identity(), None)  # type: ignore[arg-type]
    stream.flavour.record(discovery_pb2.DiscoveryRequest(type_url=CDS))

    async def relay() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await stream._relay()

    asyncio.run(relay())
    assert upstream.reasons == ["the server ended the stream"] * 3
    assert stream.upstream_calls == 3
