"""The token bookkeeping of :mod:`pilothouse.sources.etcd_auth`, and a stream ended
``UNAUTHENTICATED`` (the unary retry and a refused watch run against a real etcd in
``tests/integration/test_etcd_protected.py``)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from pilothouse.sources.etcd_auth import StreamTokenRefresh, token_in, with_token

WATCH = "/etcdserverpb.Watch/Watch"


def test_the_token_is_read_from_tuples_and_grpc_metadata() -> None:
    assert token_in((("token", "abc"),)) == "abc"
    assert token_in(grpc.aio.Metadata(("x-other", "1"), ("token", "def"))) == "def"
    assert token_in(None) is None
    assert token_in((("x-other", "1"),)) is None


def test_a_new_token_replaces_the_old_one_and_keeps_the_rest() -> None:
    replaced = with_token(grpc.aio.Metadata(("token", "old"), ("x-other", "1")), "new")
    assert sorted(replaced) == [("token", "new"), ("x-other", "1")]
    assert list(with_token(None, "new")) == [("token", "new")]


class StreamServer:
    """A real grpcio server on loopback standing in for etcd where etcd cannot run as
    needed: etcd 3.5 refuses a watch with a response, never by ending the stream
    ``UNAUTHENTICATED``, which newer servers (and other etcd streams) may do. Its method
    echoes each request with the token it was opened with, ending the stream
    ``UNAUTHENTICATED`` for a token in ``refused`` after ``deliver_first`` echoes."""

    def __init__(self, refused: set[str], deliver_first: int = 0) -> None:
        self.refused = refused
        self.deliver_first = deliver_first
        self.tokens: list[str] = []
        self.server = grpc.aio.server()
        handler = grpc.stream_stream_rpc_method_handler(self._echo)
        self.server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("etcdserverpb.Watch", {"Watch": handler})]
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    async def _echo(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        token = token_in(context.invocation_metadata()) or ""
        self.tokens.append(token)
        delivered = 0
        async for request in requests:
            if token in self.refused and delivered >= self.deliver_first:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "invalid auth token")
            delivered += 1
            yield token.encode() + b":" + request


async def open_watch(server: StreamServer, authenticated: list[str], requests: list[bytes]) -> Any:
    async def authenticate(stale: str) -> str:
        authenticated.append(stale)
        return "fresh"

    channel = grpc.aio.insecure_channel(
        f"127.0.0.1:{server.port}", interceptors=[StreamTokenRefresh(authenticate)]
    )
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)

    async def sent() -> AsyncIterator[bytes]:
        while (request := await queue.get()) is not None:
            if isinstance(request, Exception):
                raise request
            yield request

    call = channel.stream_stream(WATCH)(sent(), metadata=(("token", "stale"),))
    return channel, queue, call


async def test_a_stream_ended_unauthenticated_before_a_response_opens_again() -> None:
    """The new stream carries the new token and the requests the refused one took."""
    server = StreamServer(refused={"stale"})
    await server.server.start()
    authenticated: list[str] = []
    # one request in flight when the stream ends: grpcio may report a request written
    # while the server ends the stream as INTERNAL rather than the server's status
    channel, queue, call = await open_watch(server, authenticated, [b"create-1"])
    try:
        responses = call.__aiter__()
        async with asyncio.timeout(5):
            assert await anext(responses) == b"fresh:create-1"
            queue.put_nowait(b"create-2")
            assert await anext(responses) == b"fresh:create-2"
        assert server.tokens == ["stale", "fresh"]
        assert authenticated == ["stale"]
    finally:
        queue.put_nowait(None)
        await channel.close()
        await server.server.stop(None)


async def test_a_stream_that_delivered_fails_as_it_did_and_a_second_refusal_too() -> None:
    """After a response the refusal is the caller's (its resume logic runs); a stream
    refused again with the new token is not opened a third time."""
    server = StreamServer(refused={"stale"}, deliver_first=1)
    await server.server.start()
    authenticated: list[str] = []
    channel, queue, call = await open_watch(server, authenticated, [b"a", b"b"])
    try:
        responses = call.__aiter__()
        async with asyncio.timeout(5):
            assert await anext(responses) == b"stale:a"
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await anext(responses)
        assert raised.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert (server.tokens, authenticated) == (["stale"], [])
    finally:
        queue.put_nowait(None)
        await channel.close()
    server.refused = {"stale", "fresh"}
    server.deliver_first = 0
    channel, queue, call = await open_watch(server, authenticated, [b"a"])
    try:
        async with asyncio.timeout(5):
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await anext(call.__aiter__())
        assert raised.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert (server.tokens[1:], authenticated) == (["stale", "fresh"], ["stale"])
    finally:
        queue.put_nowait(None)
        await channel.close()
        await server.server.stop(None)


@pytest.fixture
async def unhandled() -> AsyncIterator[list[dict[str, Any]]]:
    """What reaches the loop's exception handler during the test (asyncio reports a task
    whose exception nobody retrieved there, when the task is collected)."""
    loop = asyncio.get_running_loop()
    found: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: found.append(context))
    try:
        yield found
    finally:
        loop.set_exception_handler(previous)


@pytest.mark.parametrize("refused", [set(), {"stale"}], ids=["first-opening", "replayed"])
async def test_requests_that_fail_end_the_stream_with_their_reason_and_are_logged_once(
    refused: set[str], caplog: pytest.LogCaptureFixture, unhandled: list[dict[str, Any]]
) -> None:
    """The caller's request iterator raising (on the stream as first opened, or on the
    one opened again with the replayed requests) ends the stream: its caller's next read
    fails CANCELLED naming the stream and the failure, one warning says so, and no task
    is left with an exception nobody retrieved (asyncio would report it when the task
    is collected, through the loop's exception handler)."""
    server = StreamServer(refused=refused)
    await server.server.start()
    authenticated: list[str] = []
    broken = RuntimeError("request source broke")
    try:
        channel, queue, call = await open_watch(server, authenticated, [b"create-1"])
        try:
            responses = call.__aiter__()
            token = "fresh" if refused else "stale"
            with caplog.at_level(logging.DEBUG):
                async with asyncio.timeout(5):
                    assert await anext(responses) == f"{token}:create-1".encode()
                    queue.put_nowait(broken)  # type: ignore[arg-type]
                    with pytest.raises(grpc.aio.AioRpcError) as raised:
                        await anext(responses)
        finally:
            queue.put_nowait(None)
            await channel.close()
        ended = (raised.value.code(), raised.value.details())
        assert ended == (
            grpc.StatusCode.CANCELLED,
            f"the requests of {WATCH} failed: RuntimeError: request source broke",
        )
        assert server.tokens == (["stale", "fresh"] if refused else ["stale"])
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [(r.name, r.getMessage()) for r in warnings] == [
            (
                "pilothouse.sources.etcd",
                f"the requests of the etcd stream {WATCH} failed"
                " (RuntimeError: request source broke); ending the stream",
            )
        ]
        assert warnings[0].exc_info is not None and warnings[0].exc_info[1] is broken
        # with the stream's objects gone (the failure's traceback holds the task taking
        # the requests), a task left holding an exception nobody took would say so
        del call, responses, raised, broken, warnings
        caplog.clear()
        gc.collect()
        await asyncio.sleep(0)
        assert unhandled == []
    finally:
        await server.server.stop(None)


async def test_requests_that_fail_on_a_stream_nobody_reads_leave_no_task_behind(
    caplog: pytest.LogCaptureFixture, unhandled: list[dict[str, Any]]
) -> None:
    """A stream whose caller drops it unread: the failure of its requests is logged
    once and the stream cancelled; no task is left holding the exception."""
    server = StreamServer(refused=set())
    await server.server.start()
    try:
        with caplog.at_level(logging.WARNING, logger="pilothouse.sources.etcd"):
            channel, queue, call = await open_watch(server, [], [b"create-1"])
            queue.put_nowait(RuntimeError("request source broke"))  # type: ignore[arg-type]
            async with asyncio.timeout(5):
                while not caplog.records:
                    await asyncio.sleep(0.01)
            await channel.close()
        assert [r.getMessage() for r in caplog.records] == [
            f"the requests of the etcd stream {WATCH} failed"
            " (RuntimeError: request source broke); ending the stream"
        ]
        caplog.clear()
        del call, queue
        gc.collect()
        await asyncio.sleep(0)
        assert unhandled == []
    finally:
        await server.server.stop(None)
