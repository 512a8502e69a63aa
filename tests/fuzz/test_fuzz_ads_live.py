"""Fuzz: random request streams against a live pilothouse serving the example mesh.

One in-process DiscoveryServer with the real grpc.aio server on 127.0.0.1 serves
``examples/``; a real grpc.aio client opens SotW or delta ADS streams and writes one to
four random messages (random requests, damaged ones, raw random bytes), then closes its
side. Every stream must end with a proper status (OK, or INVALID_ARGUMENT for bad input;
never INTERNAL or UNKNOWN, never Python text in the details), every response it got
must be a well-formed discovery response, and after the whole run the server is still
up: its run() task alive, no connection left behind, and a fresh well-behaved client
connects and converges.

One status is not the server's to give: when the server ends a stream while the client
is still writing pipelined messages, grpc core on the client side sometimes reports
``INTERNAL`` "Internal error from Core" instead of the server's status (a transport race,
seen as often with the long-standing "must carry a node" refusal). That one is accepted
only with that exact text, and only because the server's own log shows that it never
ended a stream with INTERNAL (every such ending of ours logs an error).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st

from pilothouse.xds.server.ads import ADS_SERVICE
from tests.e2e.harness.control_plane import ControlPlane
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.xds_requests import VALID_NODES, sotw_requests, wire_messages
from tests.integration.ads_stream import DELTA, SOTW, converge

T = TypeVar("T")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROPER = frozenset({grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT})
CORE_RACE = (grpc.StatusCode.INTERNAL, "Internal error from Core")
LEAKS = ("Traceback", "Error:", "Exception", 'File "', ".py", "Unexpected <class")
REVIEWS = "outbound|9080||reviews.bookinfo.svc.cluster.local"


class LiveServer:
    """The control plane, its event loop, and one client channel, for the whole test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.plane = ControlPlane()
        for path in sorted(EXAMPLES.rglob("*.yaml")):
            self.plane.apply_yaml(path.read_text())
        self.run(self.plane.start())
        self.channel = self.run(self._channel())

    async def _channel(self) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(f"127.0.0.1:{self.plane.port}")

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        self.run(self.channel.close())
        self.run(self.plane.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    server = LiveServer()
    try:
        yield server
    finally:
        server.close()


async def one_stream(channel: grpc.aio.Channel, delta: bool, messages: list[bytes]) -> None:
    call = channel.stream_stream(
        f"/{ADS_SERVICE}/{DELTA if delta else SOTW}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )()
    kind = discovery_pb2.DeltaDiscoveryResponse if delta else discovery_pb2.DiscoveryResponse
    async with asyncio.timeout(10):
        try:
            for body in messages:
                await call.write(body)
            await call.done_writing()
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError):
            pass  # the server ended the stream before we finished writing
        try:
            while (received := await call.read()) is not grpc.aio.EOF:
                response = kind.FromString(received)  # well-formed, or this raises
                assert response.nonce and response.type_url
        except grpc.aio.AioRpcError:
            pass  # the stream ended with a status: checked below
        code = await call.code()
        details = await call.details()
    assert code in PROPER or (code, details) == CORE_RACE, (code, details)
    assert not any(leak in (details or "") for leak in LEAKS), details


def check_still_serving(live: LiveServer) -> None:
    task = live.plane._task
    assert task is not None and not task.done(), "DiscoveryServer.run() ended"

    async def drained() -> None:
        async with asyncio.timeout(5):
            while live.plane.connections():
                await asyncio.sleep(0.01)

    live.run(drained())
    for delta in (False, True):
        names = live.run(converge(live.plane.port, VALID_NODES[0], REVIEWS, delta=delta))
        assert REVIEWS in names


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
def test_random_streams_end_properly_and_the_server_stays_up(
    live: LiveServer, delta: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="pilothouse")

    @fuzz_settings(0.5)
    @given(
        first=st.one_of(
            wire_messages(delta),
            # a valid node first, so that later messages reach the connection
            sotw_requests().map(lambda m: m.SerializeToString()) if not delta else st.nothing(),
            st.sampled_from(VALID_NODES).map(lambda node: opening(node, delta)),
        ),
        rest=st.lists(wire_messages(delta), max_size=3),
    )
    def case(first: bytes, rest: list[bytes]) -> None:
        live.run(one_stream(live.channel, delta, [first, *rest]))

    case()
    ours = [r for r in caplog.records if r.name.startswith("pilothouse")]
    assert ours == [], [r.getMessage() for r in ours]
    check_still_serving(live)


def opening(node_id: str, delta: bool) -> bytes:
    """A well-formed first request for CDS from ``node_id``."""
    kind = discovery_pb2.DeltaDiscoveryRequest if delta else discovery_pb2.DiscoveryRequest
    message = kind(type_url="type.googleapis.com/envoy.config.cluster.v3.Cluster")
    message.node.id = node_id
    return bytes(message.SerializeToString())
