"""etcd's authentication tokens kept fresh for a long-lived client.

With authentication on, etcd hands a user a token that it forgets after
``--auth-token-ttl`` seconds without use (300 by default; a watch stream does not count
as use). A client that was quiet that long (the etcd source between status writes, the
CA's store, a store session) would then be refused every request with
``UNAUTHENTICATED: etcdserver: invalid auth token``. :class:`TokenRefresh`, an
interceptor on the client's channel, authenticates again when a unary request is refused
so and sends that request once more with the new token, as etcd's own client does: the
caller never sees the refusal, so a source neither relists nor loses its revision.

A stream carries its token once, when it opens. :class:`StreamTokenRefresh` covers the
streams the etcd clients here open (watches; the same holds for any stream-stream call,
lease keep-alives among them): when a stream is refused for its token before it
delivered anything, it authenticates again, opens the stream again with the new token
and sends the requests the refused stream took once more. etcd refuses a watch either
by ending the stream ``UNAUTHENTICATED`` or, as etcd 3.5 does, by answering the
watch's creation with a response both *created* and *canceled* whose reason is
``invalid auth token`` (etcd up to 3.5.4 says ``permission denied`` for a token it no
longer knows as for a real denial, so that too is tried once more); ``aetcd`` would take
that response for a watch that never delivers anything. A stream refused again with
the new token fails with the refusal's code and reason, and a stream that fails after
it delivered fails as it did, so that the source's own resume logic runs.

The caller's requests are taken by a task of the stream's own. When taking them fails
(the caller's request iterator raises), the failure is logged once, naming the stream,
the stream is cancelled, and its caller's next read fails ``CANCELLED`` with the
failure as the reason: a grpc error, so the etcd source counts it as any failed
session (unavailable, backoff, then a resumed watch) rather than a bug of its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Final

import grpc

log = logging.getLogger("pilothouse.sources.etcd")

AUTHENTICATE: Final = "/etcdserverpb.Auth/Authenticate"
TOKEN: Final = "token"
WATCH_REFUSALS: Final = (
    "invalid auth token",
    "permission denied",
    "revision of auth store is old",
)
"""Cancel reasons of a watch etcd would not create for the stream's token (etcd's own
client opens a new stream for the first and the last; see the module for the second)."""


def token_in(metadata: Any) -> str | None:
    """The ``token`` a request's metadata carries, if any."""
    for key, value in metadata or ():
        if key == TOKEN:
            return str(value)
    return None


def with_token(metadata: Any, token: str) -> grpc.aio.Metadata:
    """``metadata`` with its ``token`` replaced by ``token``."""
    pairs = [(key, value) for key, value in metadata or () if key != TOKEN]
    return grpc.aio.Metadata(*pairs, (TOKEN, token))


def details_with_token(
    details: grpc.aio.ClientCallDetails, token: str
) -> grpc.aio.ClientCallDetails:
    """``details`` with its metadata's ``token`` replaced by ``token``."""
    return grpc.aio.ClientCallDetails(
        details.method,
        details.timeout,
        with_token(details.metadata, token),
        details.credentials,
        details.wait_for_ready,
    )


def token_refused(problem: grpc.aio.AioRpcError) -> bool:
    """Whether etcd refused a request for its token (expired, or from before a restart)."""
    return problem.code() is grpc.StatusCode.UNAUTHENTICATED


class TokenRefresh(grpc.aio.UnaryUnaryClientInterceptor):
    """Retries a unary request once, with a new token, when etcd refused its token.

    ``authenticate(stale)`` returns a token to use instead of ``stale``: a new one, or
    the one another request already obtained (so that requests refused together
    authenticate once)."""

    def __init__(self, authenticate: Callable[[str], Awaitable[str]]) -> None:
        self._authenticate = authenticate

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        call = await continuation(client_call_details, request)
        stale = token_in(client_call_details.metadata)
        if stale is None or client_call_details.method in (AUTHENTICATE, AUTHENTICATE.encode()):
            return call
        try:
            return await call
        except grpc.aio.AioRpcError as problem:
            if not token_refused(problem):
                raise
        fresh = await self._authenticate(stale)
        return await continuation(details_with_token(client_call_details, fresh), request)


def watch_refused(response: Any) -> str | None:
    """Why etcd refused to create a watch for the stream's token (the cancel reason of a
    response both created and canceled), or None when ``response`` is no such refusal."""
    if not (getattr(response, "created", False) and getattr(response, "canceled", False)):
        return None
    reason = str(getattr(response, "cancel_reason", ""))
    return reason if any(words in reason for words in WATCH_REFUSALS) else None


def refusal_error(reason: str) -> grpc.aio.AioRpcError:
    """A watch refused again with a new token, as the error of its stream."""
    code = grpc.StatusCode.PERMISSION_DENIED
    if "invalid auth token" in reason:
        code = grpc.StatusCode.UNAUTHENTICATED
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), reason)


class _Refused(Exception):
    """A stream was refused for its token before it delivered anything."""


_END: Final = object()


class RequestReplay:
    """The requests of one stream, taken from the caller's iterator once, and sent again
    on a reopened stream until a response was delivered.

    Each opening reads its own queue: a refused stream's request consumer (grpc keeps it
    waiting on a call that ended by itself) is ended and takes nothing meant for the
    next opening. The task taking the requests ends with no exception left in it: a
    failure of the caller's iterator is logged (naming ``stream``), kept as
    :attr:`failure`, and cancels the opening in use (:meth:`opened`)."""

    def __init__(self, requests: AsyncIterable[Any] | Iterable[Any], stream: str) -> None:
        self.stream = stream
        self.failure: Exception | None = None
        """What the caller's request iterator raised, if it did."""
        self._sent: list[Any] = []
        self._recording = True
        self._ended = False
        self._call: Any = None
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._pump = asyncio.ensure_future(self._take(requests))

    async def _take(self, requests: AsyncIterable[Any] | Iterable[Any]) -> None:
        try:
            if isinstance(requests, AsyncIterable):
                async for request in requests:
                    self._put(request)
            else:
                for request in requests:
                    self._put(request)
        except Exception as problem:  # the caller's iterator: its failure ends the stream
            self._failed(problem)
        finally:
            self._ended = True
            self._queue.put_nowait(_END)

    def _failed(self, problem: Exception) -> None:
        self.failure = problem
        log.warning(
            "the requests of the etcd stream %s failed (%s); ending the stream",
            self.stream,
            describe(problem),
            exc_info=problem,
            extra={"stream": self.stream},
        )
        if self._call is not None:
            self._call.cancel()

    def opened(self, call: Any) -> None:
        """``call`` is the opening in use: cancelled when the requests fail (at once if
        they already did)."""
        self._call = call
        if self.failure is not None:
            call.cancel()

    def failure_error(self, failure: Exception) -> grpc.aio.AioRpcError:
        """``failure`` of the requests as the stream's error, for its caller."""
        return grpc.aio.AioRpcError(
            grpc.StatusCode.CANCELLED,
            grpc.aio.Metadata(),
            grpc.aio.Metadata(),
            f"the requests of {self.stream} failed: {describe(failure)}",
        )

    def _put(self, request: Any) -> None:
        if self._recording:
            self._sent.append(request)
        self._queue.put_nowait(request)

    def requests(self) -> AsyncIterator[Any]:
        """A new opening's requests: those taken so far (until a delivery), then the
        caller's next ones. The previous opening's end here."""
        self._queue.put_nowait(_END)
        self._queue = asyncio.Queue()
        for request in self._sent:
            self._queue.put_nowait(request)
        if self._ended:
            self._queue.put_nowait(_END)
        return _drained(self._queue)

    def delivered(self) -> None:
        """A response was delivered: the stream is never opened again from here."""
        self._recording = False
        self._sent.clear()

    def close(self) -> None:
        self._pump.cancel()
        self._queue.put_nowait(_END)


async def _drained(queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    while (request := await queue.get()) is not _END:
        yield request


def describe(problem: BaseException) -> str:
    """``problem`` in one line: its type and first line."""
    text = str(problem).splitlines()
    return f"{type(problem).__name__}: {text[0]}" if text else type(problem).__name__


class StreamTokenRefresh(grpc.aio.StreamStreamClientInterceptor):
    """Opens a stream once more, with a new token, when etcd refused its token before
    the stream delivered anything (``authenticate`` as for :class:`TokenRefresh`)."""

    def __init__(self, authenticate: Callable[[str], Awaitable[str]]) -> None:
        self._authenticate = authenticate

    async def intercept_stream_stream(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request_iterator: Any,
    ) -> Any:
        stale = token_in(client_call_details.metadata)
        if stale is None:
            return await continuation(client_call_details, request_iterator)
        replay = RequestReplay(request_iterator, _method(client_call_details))
        call = await continuation(client_call_details, replay.requests())
        replay.opened(call)
        return self._opened_again(continuation, client_call_details, replay, call, stale)

    async def _opened_again(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        details: grpc.aio.ClientCallDetails,
        replay: RequestReplay,
        call: Any,
        stale: str,
    ) -> AsyncIterator[Any]:
        try:
            try:
                async for response in _delivered(call, replay, last=False):
                    yield response
                return
            except _Refused:
                call.cancel()
            fresh = await self._authenticate(stale)
            call = await continuation(details_with_token(details, fresh), replay.requests())
            replay.opened(call)
            async for response in _delivered(call, replay, last=True):
                yield response
        except asyncio.CancelledError:
            # the call cancelled because its requests failed, not this task: say why
            current, failure = asyncio.current_task(), replay.failure
            if failure is None or (current is not None and current.cancelling()):
                raise
            raise replay.failure_error(failure) from failure
        finally:
            call.cancel()
            replay.close()


def _method(details: grpc.aio.ClientCallDetails) -> str:
    method = details.method
    return method.decode() if isinstance(method, bytes) else str(method)


async def _delivered(call: Any, replay: RequestReplay, *, last: bool) -> AsyncIterator[Any]:
    """``call``'s responses; :class:`_Refused` (or, when ``last``, the refusal itself)
    when etcd refuses the token before the first."""
    delivered = False
    try:
        async for response in call:
            if not delivered:
                reason = watch_refused(response)
                if reason is not None:
                    raise refusal_error(reason) if last else _Refused(reason)
                delivered = True
                replay.delivered()
            yield response
    except grpc.aio.AioRpcError as problem:
        if delivered or last or not token_refused(problem):
            raise
        raise _Refused(problem.details()) from problem
